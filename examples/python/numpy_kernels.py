"""Two numpy kernels in normoracle.assert_kernel's convention: `fn(x, gamma, beta, eps)` for
LayerNorm, `fn(x, gamma, eps)` for RMSNorm, arrays of the case's dtype (bf16 as
ml_dtypes.bfloat16), outputs in that dtype.

- `*_two_pass`: statistics in float64, two passes, one rounding at the end: passes.
- `*_one_pass_f32`: float32 E[x²]−E[x]², the classic bug: fails (catastrophic cancellation
  on large means, NaN where the difference goes negative).
"""
import numpy as np


def _finish(y, x, gamma, beta, wide):
    if gamma is not None:
        y = y * gamma.astype(wide)
    if beta is not None:
        y = y + beta.astype(wide)
    return y.astype(x.dtype)


def layer_norm_two_pass(x, gamma, beta, eps):
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        mean = xd.mean(axis=-1, keepdims=True)
        var = ((xd - mean) ** 2).mean(axis=-1, keepdims=True)
        return _finish((xd - mean) / np.sqrt(var + eps), x, gamma, beta, np.float64)


def rms_norm_two_pass(x, gamma, eps):
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        ms = (xd * xd).mean(axis=-1, keepdims=True)
        return _finish(xd / np.sqrt(ms + eps), x, gamma, None, np.float64)


def layer_norm_one_pass_f32(x, gamma, beta, eps):
    with np.errstate(all="ignore"):
        xf = x.astype(np.float32)
        mean = xf.mean(axis=-1, keepdims=True, dtype=np.float32)
        var = (xf * xf).mean(axis=-1, keepdims=True, dtype=np.float32) - mean * mean
        return _finish((xf - mean) / np.sqrt(var + np.float32(eps)), x, gamma, beta, np.float32)


def rms_norm_one_pass_f32(x, gamma, eps):
    with np.errstate(all="ignore"):
        xf = x.astype(np.float32)
        ms = (xf * xf).mean(axis=-1, keepdims=True, dtype=np.float32)
        return _finish(xf / np.sqrt(ms + np.float32(eps)), x, gamma, None, np.float32)


KERNELS = {
    "two-pass": {"layer_norm": layer_norm_two_pass, "rms_norm": rms_norm_two_pass},
    "one-pass": {"layer_norm": layer_norm_one_pass_f32, "rms_norm": rms_norm_one_pass_f32},
}
