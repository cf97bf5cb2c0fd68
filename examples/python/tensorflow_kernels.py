"""TensorFlow/Keras LayerNorm and RMSNorm (keras.layers.LayerNormalization,
keras.layers.RMSNormalization) in normoracle.assert_kernel's convention: numpy arrays of the
case's dtype in and out (bf16 as ml_dtypes.bfloat16), on the CPU.

Each layer is built in the case's dtype (`dtype=` the policy's variable and compute dtype),
over the last axis, with ε and, when given, γ and β as its weights (center/scale off when
absent). Keras computes the statistics in float32 for f16/bf16 inputs (its layers upcast) or in
the input's dtype otherwise, as the installed version does.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

VERSION = f"tensorflow {tf.__version__} keras {keras.__version__}"

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BF16 = None


def _dtype(a):
    if _BF16 is not None and a.dtype == _BF16:
        return "bfloat16"
    return {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}[a.dtype]


def _layer(kind, d, dtype, eps, gamma, beta):
    if kind == "layer_norm":
        layer = keras.layers.LayerNormalization(
            axis=-1, epsilon=eps, center=beta is not None, scale=gamma is not None, dtype=dtype
        )
    else:
        layer = keras.layers.RMSNormalization(axis=-1, epsilon=eps, dtype=dtype)
    layer.build((None, d))
    weights = []
    if kind == "layer_norm":
        weights = [w for w in (gamma, beta) if w is not None]
    else:
        weights = [gamma if gamma is not None else np.ones(d, np.float32)]
    if weights:
        layer.set_weights([np.asarray(w).astype(layer.weights[i].dtype) for i, w in enumerate(weights)])
    return layer


def _run(kind, x, gamma, beta, eps):
    dtype = _dtype(x)
    layer = _layer(kind, x.shape[-1], dtype, float(eps), gamma, beta)
    y = layer(tf.constant(x.astype(np.float32)) if dtype != "float32" else tf.constant(x))
    # A layer in a float16/bfloat16 policy casts its float32 input to its compute dtype first
    # (exact: the values come from that dtype) and returns that dtype.
    return np.asarray(y).astype(x.dtype)


def layer_norm(x, gamma, beta, eps):
    return _run("layer_norm", x, gamma, beta, eps)


def rms_norm(x, gamma, eps):
    return _run("rms_norm", x, gamma, None, eps)


KERNELS = {"layer_norm": layer_norm, "rms_norm": rms_norm}
