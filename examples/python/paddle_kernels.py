"""PaddlePaddle's LayerNorm and RMSNorm (paddle.nn.functional.layer_norm, .rms_norm) in
normoracle.assert_kernel's convention: numpy arrays of the case's dtype in and out (bf16 as
ml_dtypes.bfloat16), on Paddle's CPU.

On the CPU, paddle 3.3's layer_norm kernel is registered for float32 and float64 only and
rms_norm for none: those calls raise, and the driver leaves their cases without outputs (the
table reads "unsupported").
"""
import numpy as np
import paddle
import paddle.nn.functional as F

VERSION = f"paddlepaddle {paddle.__version__}"
paddle.set_device("cpu")

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BF16 = None


def _tensor(a):
    if a is None:
        return None
    if _BF16 is not None and a.dtype == _BF16:
        return paddle.to_tensor(np.ascontiguousarray(a).view(np.uint16)).view(paddle.bfloat16)
    return paddle.to_tensor(np.ascontiguousarray(a))


def _numpy(t, like):
    if _BF16 is not None and like.dtype == _BF16:
        return t.view(paddle.uint16).numpy().view(_BF16)
    return t.numpy().astype(like.dtype, copy=False)


def layer_norm(x, gamma, beta, eps):
    y = F.layer_norm(_tensor(x), [x.shape[-1]], weight=_tensor(gamma), bias=_tensor(beta), epsilon=eps)
    return _numpy(y, x)


def rms_norm(x, gamma, eps):
    y = F.rms_norm(_tensor(x), [x.shape[-1]], weight=_tensor(gamma), eps=eps)
    return _numpy(y[0] if isinstance(y, (tuple, list)) else y, x)


KERNELS = {"layer_norm": layer_norm, "rms_norm": rms_norm}
