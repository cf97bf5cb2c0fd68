"""`normoracle.jax.assert_kernel`: the battery through a function of JAX arrays.

    import normoracle.jax

    def test_flax_layer_norm():
        normoracle.jax.assert_kernel(my_layer_norm, op="layer_norm", dtype="bf16")

Each case's arrays are put on `device` (jax's default device when None) as jax arrays of
the case's dtype (bfloat16 is jax's own, ml_dtypes.bfloat16); `fn` is called as in
`normoracle.assert_kernel` (jit it yourself if you want it compiled: every width is a new
shape) and its output is brought back with `numpy.asarray`. float64 needs jax's x64 mode
(`jax.config.update("jax_enable_x64", True)`); without it jax computes in float32 and the
output's dtype fails the case. jax is imported when this function runs.
"""
import numpy as np

import normoracle

from . import _arrays


def _converters(device):
    import jax  # lazily: jax is optional

    def to_jax(a):
        if a.dtype == np.uint16:
            a = a.view(_arrays.bfloat16())
        return jax.device_put(a, device)

    def from_jax(y):
        return np.asarray(y)

    return to_jax, from_jax


def judge_kernel(fn, *, op, dtype, device=None, **options):
    """Runs the battery through `fn` (jax arrays on `device`) and returns the Report."""
    extra = "" if device is None else f", device={device!r}"
    return normoracle._judge(fn, _converters(device), "normoracle.jax.assert_kernel", extra=extra,
                             op=op, dtype=dtype, **options)


def assert_kernel(fn, *, op, dtype, device=None, **options):
    """`normoracle.assert_kernel` for a function of jax arrays; dtype may be a jnp dtype."""
    return normoracle._raise_for(judge_kernel(fn, op=op, dtype=dtype, device=device, **options))
