"""normoracle: the exact oracle for LayerNorm/RMSNorm kernels, from Python.

    import normoracle

    def my_layer_norm(x, gamma, beta, eps): ...          # numpy in, numpy out

    def test_my_layer_norm():
        normoracle.assert_kernel(my_layer_norm, op="layer_norm", dtype="f32")

`reference` gives correctly rounded outputs, `check` judges outputs you computed,
`battery` yields the seeded test cases, `assert_kernel` runs the battery through a Python
callable and raises `AssertionError` with the report when it fails. `normoracle.torch` and
`normoracle.jax` do the same for torch and JAX functions. Reports are the CLI's (`normoracle
check`, `normoracle fuzz`): the same verdict, tallies, failures and JSON.

Arrays are numpy arrays of float16, float32, float64, or bfloat16 as `ml_dtypes.bfloat16`
or as uint16 bit patterns. Bad input raises ValueError or TypeError with the CLI's one-line
message; judging releases the GIL.
"""
import json
from typing import NamedTuple, Optional

import numpy as np

from . import _arrays
from . import _native

__version__ = _native.__version__
DEFAULT_SEED = _native.DEFAULT_SEED
DEFAULT_CASES = _native.DEFAULT_RANDOM_CASES
FAMILIES = tuple(_native.families())
OPS = ("layer_norm", "rms_norm")

__all__ = [
    "Case",
    "KernelFailure",
    "Report",
    "assert_kernel",
    "battery",
    "check",
    "judge_kernel",
    "reference",
]


class KernelFailure(AssertionError):
    """A kernel failed the oracle; `report` is the `Report`, the message its text."""

    def __init__(self, report):
        super().__init__(report.text)
        self.report = report


class Report:
    """The verdict on a kernel: the CLI's report (`normoracle check --json`).

    `passed` (and `verdict`, "PASS"/"FAIL") is the verdict against the standard required;
    `tiers` and `severities` count the judged elements; `failures` are the first failing
    elements (input, expected and actual values with their bits, ULPs, bound) and
    `reproducer` the call that reproduces the first; `worst_case` is the case holding the
    element farthest from the correctly rounded value. Every field of the JSON is an
    attribute too (`report.tally`, `report.per_family`, ...).
    """

    def __init__(self, passed, json_text, text):
        self.passed = bool(passed)
        self.text = text
        self._json = json_text
        self.data = json.loads(json_text)

    @property
    def verdict(self):
        return "PASS" if self.passed else "FAIL"

    @property
    def tiers(self):
        t = self.data["tally"]
        return {k: t[k] for k in ("exact", "faithful", "within_bound", "failed")}

    @property
    def severities(self):
        t = self.data["tally"]
        return {"off-model": t["off_model"], "inaccurate": t["inaccurate"], "wrong": t["wrong"]}

    def __getattr__(self, name):
        data = self.__dict__.get("data")
        if data is not None and name in data:
            return data[name]
        raise AttributeError(f"Report has no field '{name}'")

    def to_json(self):
        """The report as the CLI's JSON text."""
        return self._json

    def raise_for_failure(self):
        """Raises `KernelFailure` (an AssertionError) with the report's text unless it passed."""
        if not self.passed:
            raise KernelFailure(self)
        return self

    def __bool__(self):
        return self.passed

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<normoracle.Report {self.verdict}: {self.data['kernel']} {self.data['op']} {self.data['dtype']}>"


class Case(NamedTuple):
    """One battery case: x (rows × d), γ and β (d each, or None), ε (a Python float holding
    the case's f32 ε exactly), its family and its id in the battery."""

    x: np.ndarray
    gamma: Optional[np.ndarray]
    beta: Optional[np.ndarray]
    eps: float
    family: str
    id: int


def _op(op):
    if not isinstance(op, str):
        raise TypeError(f"op must be a string ({', '.join(OPS)}), got {type(op).__name__}")
    return op


def _optional(value, what):
    return None if value is None else _arrays.npy_bytes(_arrays.as_array(value, what))


def reference(x, *, op, gamma=None, beta=None, eps=1e-5, eps_convention="inside"):
    """The correctly rounded outputs of LayerNorm/RMSNorm over the last axis of x, in x's
    dtype (NaN rows where σ²+ε = 0 or an input is not finite). ε is the f32 nearest to `eps`,
    as the CLI's --eps takes it."""
    x = _arrays.as_array(x, "x")
    name = _arrays.dtype_of(x, "x")
    out = _native.reference(
        _op(op),
        name,
        _arrays.npy_bytes(x),
        _optional(gamma, "gamma"),
        _optional(beta, "beta"),
        _arrays.eps_text(eps),
        eps_convention,
    )
    y = _arrays.from_npy_bytes(out)
    if name == "bf16":
        y = _arrays.bf16_out(y, x.dtype != np.uint16)
    return y


def check(
    x,
    y,
    *,
    op,
    gamma=None,
    beta=None,
    eps=1e-5,
    eps_convention="inside",
    require="bound",
    kernel="outputs",
):
    """Judges outputs y of a kernel on x (γ, β, ε as given) and returns the `Report`.
    `require`: "bound" (the model's B_i, the default), "faithful", "exact" or "ulp:N"."""
    x = _arrays.as_array(x, "x")
    y = _arrays.as_array(y, "y")
    name = _arrays.dtype_of(x, "x")
    passed, json_text, text = _native.check(
        _op(op),
        name,
        _arrays.npy_bytes(x),
        _arrays.npy_bytes(y),
        _optional(gamma, "gamma"),
        _optional(beta, "beta"),
        _arrays.eps_text(eps),
        eps_convention,
        require,
        kernel,
    )
    return Report(passed, json_text, text)


def _families(families):
    if families is None:
        return None
    if isinstance(families, str):
        families = [families]
    return [str(f) for f in families]


def _seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"usage error: seed must be an unsigned integer, got {seed!r}")
    return int(seed)


def _cases(cases, what="cases"):
    if isinstance(cases, bool) or not isinstance(cases, (int, np.integer)) or cases < 0:
        raise ValueError(f"usage error: {what} must be a non-negative integer, got {cases!r}")
    return int(cases)


def battery(
    op,
    dtype,
    *,
    seed=None,
    cases=DEFAULT_CASES,
    families=None,
    eps_convention="inside",
    bf16_as_ml_dtypes=True,
):
    """Yields the battery's cases (`Case`) for op and dtype: the systematic part (every
    family at every width of the battery) and `cases` random cases, as `normoracle cases`
    writes them for the same seed (default: $NORMORACLE_SEED, else the fixed default)."""
    name = _arrays.dtype_name(dtype)
    length, seed = _native.battery_len(
        _op(op), name, _seed(seed), _cases(cases), _families(families), eps_convention
    )

    def generate():
        for i in range(length):
            c = _native.battery_case(
                op, name, seed, cases, _families(families), eps_convention, i
            )
            if c is None:
                continue
            case_id, family, rows, d, eps, x, g, b = c
            arrays = [
                _arrays.from_bits(a, name, shape, bf16_as_ml_dtypes)
                for a, shape in ((x, (rows, d)), (g, (d,)), (b, (d,)))
            ]
            yield Case(arrays[0], arrays[1], arrays[2], eps, family, case_id)

    return generate()


def _caller(fn, op, name, convert_in, convert_out):
    """The callable the native judge runs: case arrays from raw bits, `fn`, outputs back to
    raw bits. `convert_in`/`convert_out` carry arrays to a framework and back."""
    layer_norm = op in ("layer_norm", "layernorm", "ln")

    def call(rows, d, eps, x, gamma, beta):
        shape = (rows, d)
        x, gamma, beta = (
            None if a is None else convert_in(_arrays.from_bits(a, name, s, True))
            for a, s in ((x, shape), (gamma, (d,)), (beta, (d,)))
        )
        y = fn(x, gamma, beta, eps) if layer_norm else fn(x, gamma, eps)
        return _arrays.to_bits(convert_out(y), name, shape, "the kernel's output")

    return call


def judge_kernel(
    fn,
    *,
    op,
    dtype,
    seed=None,
    require="bound",
    families=None,
    cases=DEFAULT_CASES,
    eps_convention="inside",
    case=None,
    name=None,
):
    """Runs the battery through `fn` and returns the `Report` (see `assert_kernel`)."""
    return _judge(
        fn,
        (lambda a: a, lambda a: a),
        "normoracle.assert_kernel",
        op=op,
        dtype=dtype,
        seed=seed,
        require=require,
        families=families,
        cases=cases,
        eps_convention=eps_convention,
        case=case,
        name=name,
    )


def _judge(fn, convert, api, *, extra="", op, dtype, seed=None, require="bound", families=None,
           cases=DEFAULT_CASES, eps_convention="inside", case=None, name=None):
    """The battery through `fn`, its arrays carried to a framework by `convert` = (to, back);
    `api` is the function the report's reproducer names, `extra` its adapter's arguments."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    dt = _arrays.dtype_name(dtype)
    kernel_name = name or getattr(fn, "__qualname__", None) or repr(fn)
    if case is not None:
        case = _cases(case, "case")
    passed, json_text, text, error = _native.judge_kernel(
        _caller(fn, _op(op), dt, *convert),
        f"python:{kernel_name}",
        op,
        dt,
        _seed(seed),
        _cases(cases),
        _families(families),
        eps_convention,
        require,
        case,
        f"{api}({getattr(fn, '__name__', 'fn')}{extra}",
    )
    report = Report(passed, json_text, text)
    report.exception = error
    return report


def assert_kernel(fn, *, op, dtype, **options):
    """Runs the battery through `fn` and raises `KernelFailure` (an AssertionError) with the
    report's text when it fails; returns the `Report` when it passes.

    `fn(x, gamma, beta, eps) -> y` for layer_norm, `fn(x, gamma, eps) -> y` for rms_norm:
    numpy arrays of the case's dtype (rows × d; gamma and beta of length d, or None), eps a
    Python float holding the case's f32 ε; y must have x's shape and dtype. An exception
    raised by `fn` fails its case (a kernel error in the report) and is chained to the
    assertion. The options are `judge_kernel`'s: `seed`, `require` (the standard: "bound",
    "faithful", "exact", "ulp:N"), `families`, `cases` (random cases after the systematic
    ones), `eps_convention`, `case` (one case of the battery alone, what the report's
    reproducer runs) and `name` (the kernel's name in the report).
    """
    return _raise_for(judge_kernel(fn, op=op, dtype=dtype, **options))


def _raise_for(report):
    """The report when it passed; else KernelFailure, chained to the first exception the
    kernel raised."""
    if not report.passed:
        raise KernelFailure(report) from report.exception
    return report
