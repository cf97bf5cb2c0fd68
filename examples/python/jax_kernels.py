"""jax LayerNorm/RMSNorm in normoracle.assert_kernel's convention (jax arrays of the case's
dtype in, the same dtype out): statistics in float32 as flax computes them.

- `layer_norm_two_pass`: var = E[(x−E[x])²].
- `layer_norm_fast_variance`: flax.linen.LayerNorm's default (use_fast_variance=True),
  var = max(0, E[x²] − E[x]²): the clamp turns the one-pass bug's negative variance into 0,
  so the outputs blow up by 1/√ε instead of becoming NaN.
"""
import jax
import jax.numpy as jnp


def _norm(x, gamma, beta, eps, rms, fast):
    xf = x.astype(jnp.float32)
    if rms:
        mean = 0.0
        var = jnp.mean(xf * xf, axis=-1, keepdims=True)
    elif fast:
        mean = jnp.mean(xf, axis=-1, keepdims=True)
        var = jnp.maximum(0.0, jnp.mean(xf * xf, axis=-1, keepdims=True) - mean * mean)
    else:
        mean = jnp.mean(xf, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + eps)
    if gamma is not None:
        y = y * gamma.astype(jnp.float32)
    if beta is not None:
        y = y + beta.astype(jnp.float32)
    return y.astype(x.dtype)


def layer_norm_two_pass(x, gamma, beta, eps):
    return _norm(x, gamma, beta, eps, rms=False, fast=False)


def layer_norm_fast_variance(x, gamma, beta, eps):
    return _norm(x, gamma, beta, eps, rms=False, fast=True)


def rms_norm(x, gamma, eps):
    return _norm(x, gamma, None, eps, rms=True, fast=False)


KERNELS = {
    "two-pass": {"layer_norm": layer_norm_two_pass, "rms_norm": rms_norm},
    "fast-variance": {"layer_norm": layer_norm_fast_variance, "rms_norm": rms_norm},
}
DTYPES = ("f32", "f16", "bf16")
