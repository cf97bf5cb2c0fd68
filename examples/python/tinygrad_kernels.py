"""tinygrad's LayerNorm and RMSNorm (tinygrad.nn.LayerNorm, tinygrad.nn.RMSNorm) in
normoracle.assert_kernel's convention: numpy arrays of the case's dtype in and out (bf16 as
ml_dtypes.bfloat16).

LayerNorm is `x.layernorm(eps)` (two passes in the input's dtype: y = x − mean(x), then
y·rsqrt(mean(y²) + ε)) times γ plus β; RMSNorm is x·rsqrt(mean(x²) + ε) computed in float32
(`x.float()`), cast back, times γ. Runs on tinygrad's default device; its CPU device compiles
every kernel with `clang`, which must be installed (bf16 needs a clang that has `__bf16` for
x86-64: clang 14 has not, and those cases are left without outputs).
"""
import numpy as np
from tinygrad import Tensor, dtypes, nn
import tinygrad

try:
    from importlib.metadata import version as _version

    VERSION = f"tinygrad {_version('tinygrad')}"
except Exception:  # noqa: BLE001 - metadata missing
    VERSION = f"tinygrad {getattr(tinygrad, '__version__', '?')}"

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BF16 = None


def _tensor(a):
    """A tinygrad tensor of a's dtype (bf16 goes through its bit patterns)."""
    if _BF16 is not None and a.dtype == _BF16:
        return Tensor(np.ascontiguousarray(a).view(np.uint16)).bitcast(dtypes.bfloat16)
    return Tensor(np.ascontiguousarray(a))


def _numpy(t, like):
    if _BF16 is not None and like.dtype == _BF16:
        return t.bitcast(dtypes.uint16).numpy().view(_BF16).reshape(like.shape)
    return t.numpy().astype(like.dtype, copy=False).reshape(like.shape)


def layer_norm(x, gamma, beta, eps):
    d = x.shape[-1]
    m = nn.LayerNorm(d, eps=eps, elementwise_affine=gamma is not None or beta is not None)
    if m.weight is not None:
        m.weight = _tensor(gamma) if gamma is not None else Tensor.ones(d, dtype=_tensor(x).dtype)
        m.bias = _tensor(beta) if beta is not None else Tensor.zeros(d, dtype=_tensor(x).dtype)
    return _numpy(m(_tensor(x)), x)


def rms_norm(x, gamma, eps):
    m = nn.RMSNorm(x.shape[-1], eps=eps, elementwise_affine=gamma is not None)
    if gamma is not None:
        m.weight = _tensor(gamma)
    return _numpy(m(_tensor(x)), x)


def bf16_compiles():
    """Whether the device compiles a bf16 kernel (clang 14 has no __bf16 for x86-64)."""
    if _BF16 is None:
        return False
    try:
        layer_norm(np.array([[1.0, 2.0]], np.float32).astype(_BF16), None, None, 1e-5)
        rms_norm(np.array([[1.0, 2.0]], np.float32).astype(_BF16), None, 1e-5)
        return True
    except Exception:  # noqa: BLE001 - the compiler's error
        return False


KERNELS = {"layer_norm": layer_norm, "rms_norm": rms_norm}
