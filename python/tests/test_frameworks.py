"""Framework kernels through the package and through the CLI's .npy path agree: the same
battery, the same verdicts and tallies. The frameworks are those .ci/run installs (pinned in
examples/python/requirements.txt); torch's tests skip where torch is absent."""
import pytest

import normoracle
from conftest import cli_reports, same_numbers, write_outputs

SEED = 5
OPS = ["layer_norm", "rms_norm"]


def battery_dir(cli, tmp_path, op, dtype):
    code, out = cli("cases", "--out", tmp_path, "--op", op, "--dtype", dtype, "--seed", SEED)
    assert code == 0, out
    return tmp_path


def same_verdict(report, theirs):
    assert report.passed == theirs["passed"], report.text
    same_numbers(report.tally, theirs["tally"], "tally")
    same_numbers(report.per_family, theirs["per_family"], "per_family")
    assert [f["case"] for f in report.failures] == [f["case"] for f in theirs["failures"]]


# A slice of the accuracy table's jax rows (each takes tens of seconds on CI's 2 cores).
@pytest.mark.parametrize("variant, dtype", [("fast-variance", "f32"), ("two-pass", "f16"), ("two-pass", "bf16")])
def test_jax_agrees_with_the_cli(cli, tmp_path, variant, dtype):
    pytest.importorskip("jax")
    import jax.numpy as jnp
    import jax_kernels

    import normoracle.jax

    kernel = jax_kernels.KERNELS[variant]["layer_norm"]
    report = normoracle.jax.judge_kernel(kernel, op="layer_norm", dtype=dtype, seed=SEED, cases=0)
    directory = battery_dir(cli, tmp_path, "layer_norm", dtype)
    write_outputs(directory, lambda op, dt: kernel, to_framework=jnp.asarray)
    _, reports, _ = cli_reports(cli, directory)
    same_verdict(report, reports[("layer_norm", dtype)])
    # The accuracy table's finding: flax's fast variance fails f32 (docs/zoo.md).
    if (variant, dtype) == ("fast-variance", "f32"):
        assert not report.passed


# (framework, dtype): the module of examples/python, and the verdict the accuracy table
# records where it does not depend on the CPU (None: only agreement is checked).
NUMPY_FRAMEWORKS = [
    ("onnxruntime", "layer_norm", "f32", False),  # squares that overflow
    ("onnxruntime", "layer_norm", "f16", True),
    ("onnxruntime", "rms_norm", "f16", True),
    ("openvino", "layer_norm", "f32", False),  # MVN's squares overflow and underflow
    ("openvino", "rms_norm", "bf16", None),
]


@pytest.mark.parametrize("framework, op, dtype, passes", NUMPY_FRAMEWORKS)
def test_framework_agrees_with_the_cli(cli, tmp_path, framework, op, dtype, passes):
    pytest.importorskip(framework)
    if dtype == "bf16":
        pytest.importorskip("ml_dtypes")
    kernel = __import__(f"{framework}_kernels").KERNELS[op]
    report = normoracle.judge_kernel(kernel, op=op, dtype=dtype, seed=SEED, cases=0)
    directory = battery_dir(cli, tmp_path, op, dtype)
    write_outputs(directory, lambda o, dt: kernel)
    _, reports, _ = cli_reports(cli, directory)
    same_verdict(report, reports[(op, dtype)])
    if passes is not None:
        assert report.passed == passes, report.text


def test_onnxruntime_bf16_is_refused_case_by_case():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ml_dtypes")
    import onnxruntime_kernels

    report = normoracle.judge_kernel(onnxruntime_kernels.layer_norm, op="layer_norm", dtype="bf16", cases=0,
                                     families=["gaussian"])
    # Its CPU provider has no bf16 LayerNormalization: every case is a kernel error.
    assert not report.passed and report.tally["judged"] == 0
    assert len(report.kernel_errors) >= 1


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_torch_adapter_judges_a_torch_kernel(dtype):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import normoracle.torch

    def one_pass(x, gamma, eps):
        xf = x.float()
        y = xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps)
        return (y if gamma is None else y * gamma.float()).to(x.dtype)

    def two_pass(x, gamma, eps):
        xd = x.double()
        y = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + eps)
        return (y if gamma is None else y * gamma.double()).to(x.dtype)

    torch_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    normoracle.torch.assert_kernel(two_pass, op="rms_norm", dtype=torch_dtype)
    # Squares summed in float32 overflow for f32 inputs (the table's finding).
    if dtype == "f32":
        with pytest.raises(normoracle.KernelFailure):
            normoracle.torch.assert_kernel(one_pass, op="rms_norm", dtype=torch_dtype)

