"""The examples' kernels as a kernel author tests them: one line of pytest each.

    pip install ./python            # from the repository's root: the normoracle package
    pytest examples/python

Each test runs the battery (seeded; $NORMORACLE_SEED or the default) through the kernel and
fails with the oracle's report. The kernels are the ones the .npy drivers beside this file
run over a `normoracle cases` directory.
"""
import pytest

import normoracle
import numpy_kernels

DTYPES = ["f32", "f16", "bf16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_two_pass_layer_norm(dtype):
    if dtype == "bf16":
        pytest.importorskip("ml_dtypes")
    normoracle.assert_kernel(numpy_kernels.layer_norm_two_pass, op="layer_norm", dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_two_pass_rms_norm(dtype):
    if dtype == "bf16":
        pytest.importorskip("ml_dtypes")
    normoracle.assert_kernel(numpy_kernels.rms_norm_two_pass, op="rms_norm", dtype=dtype)


def test_numpy_one_pass_float32_is_caught():
    # E[x²] − E[x]² in float32: cancellation on large means, NaN on a negative variance.
    with pytest.raises(AssertionError, match="FAIL: python:layer_norm_one_pass_f32"):
        normoracle.assert_kernel(numpy_kernels.layer_norm_one_pass_f32, op="layer_norm", dtype="f32")


def test_jax_two_pass_f16():
    jax_kernels = pytest.importorskip("jax_kernels", reason="jax is not installed")
    import normoracle.jax

    # (In f32 and bf16 its float32 sums of squares overflow: the accuracy table's FAIL.)
    normoracle.jax.assert_kernel(jax_kernels.layer_norm_two_pass, op="layer_norm", dtype="f16")
    normoracle.jax.assert_kernel(jax_kernels.rms_norm, op="rms_norm", dtype="f16")


def test_flax_fast_variance_is_caught():
    jax_kernels = pytest.importorskip("jax_kernels", reason="jax is not installed")
    import normoracle.jax

    report = normoracle.jax.judge_kernel(jax_kernels.layer_norm_fast_variance, op="layer_norm", dtype="f32")
    assert not report.passed and report.tally["failed"] > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_two_pass_layer_norm(dtype):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import normoracle.torch

    def layer_norm(x, gamma, beta, eps):
        # Statistics in float64, one rounding at the end (torch's own F.layer_norm is in
        # the accuracy table, docs/zoo.md).
        xd = x.double()
        mean = xd.mean(-1, keepdim=True)
        y = (xd - mean) / torch.sqrt(((xd - mean) ** 2).mean(-1, keepdim=True) + eps)
        if gamma is not None:
            y = y * gamma.double()
        if beta is not None:
            y = y + beta.double()
        return y.to(x.dtype)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    normoracle.torch.assert_kernel(layer_norm, op="layer_norm", dtype=dtype, device=device)
