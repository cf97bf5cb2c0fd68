"""The package against the CLI: the same references, batteries, verdicts and reports."""
import json
import threading
import time

import numpy as np
import pytest

import normoracle
from conftest import cli_reports, same_numbers, write_outputs

try:
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
except ImportError:  # bf16 as ml_dtypes needs ml_dtypes; uint16 bit patterns do not
    BF16 = None

import numpy_kernels as nk

DTYPES = ["f32", "f16", "bf16"]
SEED = 5


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def save(path, a):
    np.save(path, a)
    return path


def random_problem(dtype, rows=3, d=7, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, (rows, d))
    g = 1 + 0.5 * rng.normal(size=d)
    b = 0.1 * rng.normal(size=d)
    return x.astype(dtype), g.astype(dtype), b.astype(dtype)


# ---------------------------------------------------------------- reference


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_reference_is_the_cli_reference_bit_for_bit(cli, tmp_path, op, dtype):
    x, g, b = random_problem(dtype)
    y = normoracle.reference(x, op=op, gamma=g, beta=b, eps=1e-5)
    assert y.dtype == x.dtype and y.shape == x.shape
    for name, a in (("x", x), ("g", g), ("b", b)):
        save(tmp_path / f"{name}.npy", a)
    name = {np.float32: "f32", np.float16: "f16", np.float64: "f64"}[dtype]
    code, out = cli("reference", "--op", op, "--dtype", name, "--eps", "1e-5", "--x", tmp_path / "x.npy",
                    "--gamma", tmp_path / "g.npy", "--beta", tmp_path / "b.npy", "--out", tmp_path / "y.npy")
    assert code == 0, out
    np.testing.assert_array_equal(bits(y), bits(np.load(tmp_path / "y.npy")))


@pytest.mark.skipif(BF16 is None, reason="ml_dtypes is not installed")
def test_bf16_as_ml_dtypes_and_as_bit_patterns_give_the_cli_reference(cli, tmp_path):
    x, g, _ = random_problem(np.float32, rows=2, d=33)
    x, g = x.astype(BF16), g.astype(BF16)
    y = normoracle.reference(x, op="rms_norm", gamma=g)
    assert y.dtype == BF16
    y_bits = normoracle.reference(x.view(np.uint16), op="rms_norm", gamma=g.view(np.uint16))
    assert y_bits.dtype == np.uint16
    np.testing.assert_array_equal(y.view(np.uint16), y_bits)
    # The CLI reads ml_dtypes' '<V2' files with --dtype bf16.
    save(tmp_path / "x.npy", x)
    save(tmp_path / "g.npy", g)
    code, out = cli("reference", "--op", "rms_norm", "--dtype", "bf16", "--x", tmp_path / "x.npy",
                    "--gamma", tmp_path / "g.npy", "--out", tmp_path / "y.npy")
    assert code == 0, out
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), y_bits)


def test_reference_of_a_small_row_is_the_correctly_rounded_value():
    # mean 2.5, variance 1.25, ε = 0: y = (x − 2.5)/√1.25, rounded once from the exact value.
    y = normoracle.reference(np.array([1.0, 2.0, 3.0, 4.0]), op="layer_norm", eps=0.0)
    exact = np.array([-1.5, -0.5, 0.5, 1.5]) / np.sqrt(1.25)
    assert np.max(np.abs(y - exact) / np.spacing(exact)) <= 1.0
    assert y[0] == -y[3] and y[1] == -y[2]
    # An undefined row (σ² + ε = 0) is NaN.
    assert np.isnan(normoracle.reference(np.ones((1, 4), np.float32), op="layer_norm", eps=0.0)).all()


# ---------------------------------------------------------------- check


def test_check_passes_the_reference_and_reports_a_perturbed_element(cli, tmp_path):
    x, g, b = random_problem(np.float32, rows=4, d=16, seed=3)
    y = normoracle.reference(x, op="layer_norm", gamma=g, beta=b)
    report = normoracle.check(x, y, op="layer_norm", gamma=g, beta=b)
    assert report.passed and report.verdict == "PASS" and bool(report)
    assert report.tiers["exact"] == report.tally["judged"] == 64
    assert report.raise_for_failure() is report
    bad = y.copy()
    bad[2, 5] = np.nextafter(bad[2, 5], np.float32(np.inf)) * np.float32(1.001)
    report = normoracle.check(x, bad, op="layer_norm", gamma=g, beta=b)
    assert not report.passed and report.verdict == "FAIL"
    assert report.tiers["failed"] == 1 and sum(report.severities.values()) == 1
    (failure,) = report.failures
    assert (failure["row"], failure["col"]) == (2, 5)
    assert json.loads(report.to_json())["passed"] is False
    with pytest.raises(normoracle.KernelFailure) as caught:
        report.raise_for_failure()
    assert isinstance(caught.value, AssertionError) and caught.value.report is report
    assert str(caught.value).startswith("FAIL: ")
    # The reproducer is a call that fails the same way, on the failing row alone.
    again = eval(report.reproducer, {"normoracle": normoracle, "x": x, "y": bad, "gamma": g, "beta": b})
    assert not again.passed and again.tally["judged"] == 16
    # The CLI's report on the same files has the same verdict and tallies.
    for name, a in (("x", x), ("y", bad), ("g", g), ("b", b)):
        save(tmp_path / f"{name}.npy", a)
    code, out = cli("check", "--op", "layer_norm", "--dtype", "f32", "--x", tmp_path / "x.npy", "--y",
                    tmp_path / "y.npy", "--gamma", tmp_path / "g.npy", "--beta", tmp_path / "b.npy", "--json")
    assert code == 1
    same_numbers(report.tally, json.loads(out)["tally"], "tally")


def test_require_holds_outputs_to_a_stricter_standard():
    x = np.array([[1.0, 2.0, 3.0, 4.5]], np.float32)
    y = normoracle.reference(x, op="rms_norm")
    off = y.copy()
    off[0, 1] = np.nextafter(off[0, 1], np.float32(0))
    assert normoracle.check(x, off, op="rms_norm").passed
    assert not normoracle.check(x, off, op="rms_norm", require="exact").passed
    assert normoracle.check(x, off, op="rms_norm", require="ulp:1").passed


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call, exception, message",
    [
        (lambda: normoracle.reference(np.zeros((2, 0), np.float32), op="layer_norm"), ValueError,
         "input error: x: rows have width d = 0"),
        (lambda: normoracle.reference(np.ones((2, 3), np.float32), op="layer_norm", gamma=np.ones(4, np.float32)),
         ValueError, "input error: gamma has shape [4] but rows of x have d = 3"),
        (lambda: normoracle.reference(np.ones((2, 3), np.float32), op="layer_norm", gamma=np.ones(3)), ValueError,
         "input error: gamma holds '<f8' but --dtype f32 needs '<f4'"),
        (lambda: normoracle.reference(np.ones(3, np.float32), op="layer_norm", eps=-1.0), ValueError,
         "usage error: eps must not be negative"),
        (lambda: normoracle.reference(np.ones(3, np.float32), op="layer_norm", eps=float("nan")), ValueError,
         "usage error: eps must be finite"),
        (lambda: normoracle.reference(np.ones(3, np.float32), op="softmax"), ValueError,
         "usage error: unknown op 'softmax' (layer_norm, rms_norm)"),
        (lambda: normoracle.reference(np.ones(3, np.float32), op="layer_norm", eps_convention="middle"), ValueError,
         "usage error: unknown eps convention 'middle'"),
        (lambda: normoracle.reference(np.ones(3, np.int32), op="layer_norm"), TypeError, "x has dtype int32"),
        (lambda: normoracle.reference(np.ones(3, np.float32), op=1), TypeError, "op must be a string"),
        (lambda: normoracle.reference("x", op="layer_norm"), TypeError, "x must be an array"),
        (lambda: normoracle.check(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), op="rms_norm"),
         ValueError, "input error: y has shape [3, 2] but x has shape [2, 3]"),
        (lambda: normoracle.check(np.ones(3, np.float32), np.ones(3, np.float32), op="rms_norm", require="best"),
         ValueError, "--require 'best': expected exact, faithful, ulp:N or bound"),
        (lambda: list(normoracle.battery("rms_norm", "f32", families=["gaussian", "nope"])), ValueError,
         "usage error: unknown family 'nope'"),
        (lambda: list(normoracle.battery("rms_norm", "f8")), ValueError, "unknown dtype 'f8'"),
        (lambda: list(normoracle.battery("rms_norm", "f32", cases=-1)), ValueError, "cases must be"),
        (lambda: list(normoracle.battery("rms_norm", "f32", cases=10**7 + 1)), ValueError,
         "'10000001' is not a case count from 0 to 10000000"),
        (lambda: normoracle.assert_kernel(42, op="rms_norm", dtype="f32"), TypeError, "fn must be callable"),
    ],
)
def test_bad_input_raises_with_the_clis_one_line_message(call, exception, message):
    with pytest.raises(exception) as caught:
        call()
    text = str(caught.value)
    assert message in text and "\n" not in text, text


def test_the_seed_comes_from_the_environment_as_in_the_cli(monkeypatch):
    monkeypatch.setenv("NORMORACLE_SEED", "banana")
    with pytest.raises(ValueError, match="NORMORACLE_SEED='banana' is not an unsigned integer"):
        list(normoracle.battery("rms_norm", "f32"))
    monkeypatch.setenv("NORMORACLE_SEED", "77")
    first = next(normoracle.battery("rms_norm", "f32", cases=0))
    same = next(normoracle.battery("rms_norm", "f32", cases=0, seed=77))
    np.testing.assert_array_equal(first.x, same.x)


# ---------------------------------------------------------------- battery


@pytest.mark.parametrize("dtype", DTYPES)
def test_battery_is_the_clis_cases_directory(cli, tmp_path, dtype):
    code, out = cli("cases", "--out", tmp_path, "--op", "layer_norm", "--dtype", dtype, "--seed", SEED,
                    "--cases", 3)
    assert code == 0, out
    manifest = json.loads((tmp_path / "manifest.json").read_text())["cases"]
    ours = list(normoracle.battery("layer_norm", dtype, seed=SEED, cases=3, bf16_as_ml_dtypes=False))
    assert len(ours) == len(manifest) == len(normoracle.FAMILIES) * 22 + 3
    for case, c in zip(ours, manifest):
        assert (case.id, case.family) == (c["id"], c["family"])
        assert np.float32(case.eps).view(np.uint32) == int(c["eps_bits"], 16)
        for ours_a, name in ((case.x, c["x"]), (case.gamma, c["gamma"]), (case.beta, c["beta"])):
            if name is None:
                assert ours_a is None
            else:
                np.testing.assert_array_equal(bits(ours_a), bits(np.load(tmp_path / name)))


def test_battery_families_filter_and_keep_ids():
    cases = list(normoracle.battery("rms_norm", "f16", seed=1, cases=50, families=["constant", "subnormal"]))
    assert {c.family for c in cases} == {"constant", "subnormal"}
    full = {c.id: c for c in normoracle.battery("rms_norm", "f16", seed=1, cases=50)}
    for c in cases:
        np.testing.assert_array_equal(bits(c.x), bits(full[c.id].x))
        assert c.beta is None  # RMSNorm cases carry no β


# ---------------------------------------------------------------- assert_kernel


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_numpy_two_pass_passes_and_one_pass_fails_as_in_the_cli(cli, tmp_path, op, dtype):
    if dtype == "bf16" and BF16 is None:
        pytest.skip("bf16 kernels take ml_dtypes arrays; ml_dtypes is not installed")
    code, out = cli("cases", "--out", tmp_path, "--op", op, "--dtype", dtype, "--seed", SEED)
    assert code == 0, out
    for variant in ("two-pass", "one-pass"):
        kernel = nk.KERNELS[variant][op]
        report = normoracle.judge_kernel(kernel, op=op, dtype=dtype, seed=SEED, cases=0)
        write_outputs(tmp_path, lambda o, d: kernel)
        code, reports, _ = cli_reports(cli, tmp_path)
        theirs = reports[(op, dtype)]
        assert report.passed == theirs["passed"] == (code == 0), (variant, report.text)
        same_numbers(report.tally, theirs["tally"], "tally")
        same_numbers(report.per_family, theirs["per_family"], "per_family")
        assert [f["case"] for f in report.failures] == [f["case"] for f in theirs["failures"]]
        if variant == "two-pass":
            assert report.passed, report.text
    # The float32 one-pass fails LayerNorm in f32 (large means, negative variance).
    if (op, dtype) == ("layer_norm", "f32"):
        assert not report.passed


def test_assert_kernel_raises_with_the_report_and_a_reproducer():
    kernel = nk.layer_norm_one_pass_f32
    with pytest.raises(normoracle.KernelFailure) as caught:
        normoracle.assert_kernel(kernel, op="layer_norm", dtype="f32", seed=SEED, cases=20)
    report = caught.value.report
    assert str(caught.value) == report.text and report.text.startswith("FAIL: python:layer_norm_one_pass_f32")
    assert report.seed == SEED and report.cases == len(normoracle.FAMILIES) * 22 + 20
    case = min([f["case"] for f in report.failures] + [f["case"] for f in report.findings])
    expected = (f'normoracle.assert_kernel(layer_norm_one_pass_f32, op="layer_norm", dtype="f32", seed={SEED}, '
                f'cases=20, require="bound", case={case})')
    assert report.reproducer == expected
    with pytest.raises(normoracle.KernelFailure) as again:
        eval(report.reproducer, {"normoracle": normoracle, "layer_norm_one_pass_f32": kernel})
    assert again.value.report.cases == 1
    # The two-pass kernel passes and returns its report.
    passed = normoracle.assert_kernel(nk.rms_norm_two_pass, op="rms_norm", dtype="f32", seed=SEED, cases=20)
    assert passed.passed and passed.reproducer is None


def test_the_reference_as_a_kernel_is_exact():
    def exact(x, gamma, beta, eps):
        return normoracle.reference(x, op="layer_norm", gamma=gamma, beta=beta, eps=eps)

    report = normoracle.assert_kernel(exact, op="layer_norm", dtype="f16", require="exact", cases=10)
    assert report.tiers["exact"] == report.tally["judged"] > 0


def test_a_kernel_that_raises_fails_its_cases_and_the_exception_is_chained():
    def refuses_wide_rows(x, gamma, eps):
        if x.shape[1] > 64:
            raise NotImplementedError(f"d = {x.shape[1]} is too wide")
        return nk.rms_norm_two_pass(x, gamma, eps)

    with pytest.raises(normoracle.KernelFailure) as caught:
        normoracle.assert_kernel(refuses_wide_rows, op="rms_norm", dtype="f32", cases=0)
    report = caught.value.report
    assert isinstance(caught.value.__cause__, NotImplementedError)
    assert report.tally["failed"] == 0 and report.kernel_errors
    assert "NotImplementedError: d = 65 is too wide" in report.kernel_errors[0]


@pytest.mark.parametrize(
    "returned, message",
    [
        (lambda x: x.astype(np.float64), "the kernel's output has dtype float64 but the case is f32"),
        (lambda x: x[:, :-1], "the kernel's output has shape"),
        (lambda x: "y", "the kernel's output must be an array"),
    ],
)
def test_outputs_of_the_wrong_dtype_or_shape_fail_the_case(returned, message):
    report = normoracle.judge_kernel(lambda x, g, eps: returned(x), op="rms_norm", dtype="f32", cases=0,
                                     families=["gaussian"])
    assert not report.passed and message in report.kernel_errors[0], report.text


def test_judging_releases_the_gil():
    x = np.random.default_rng(0).normal(size=(64, 4096)).astype(np.float32)
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.0005)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        time.sleep(0.05)
        before = ticks[0]
        start = time.perf_counter()
        y = normoracle.reference(x, op="layer_norm")
        report = normoracle.check(x, y, op="layer_norm")
        elapsed = time.perf_counter() - start
        during = ticks[0] - before
    finally:
        stop.set()
        thread.join()
    assert report.passed
    # Held GIL: the counter would stand still for the whole call (the interpreter switches
    # threads only between bytecodes).
    assert during >= 10, (elapsed, during)
