"""jax LayerNorm/RMSNorm over a `normoracle cases` directory, in the case's dtype (jax's
default float32 for f32; f16/bf16 as jax computes them).

    python3 examples/python/jax_driver.py cases [two-pass|fast-variance]

`fast-variance` is flax.linen.LayerNorm's default statistics (use_fast_variance=True):
var = max(0, E[x²] − E[x]²), mean and mean of squares in float32.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

from normoracle_cases import cases, directory_from_argv, eps_of, store

JAX_DTYPE = {"f32": jnp.float32, "f16": jnp.float16, "bf16": jnp.bfloat16}


def norm(x, g, b, eps, rms, fast):
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
    if g is not None:
        y = y * g.astype(jnp.float32)
    if b is not None:
        y = y + b.astype(jnp.float32)
    return y.astype(x.dtype)


def main():
    directory = directory_from_argv()
    fast = len(sys.argv) > 2 and sys.argv[2] == "fast-variance"
    n = 0
    for c, x, g, b in cases(directory):
        dt = JAX_DTYPE.get(c["dtype"])
        if dt is None:
            continue
        to = lambda a: None if a is None else jnp.asarray(a, dtype=jnp.float32).astype(dt)
        y = norm(to(x), to(g), to(b), eps_of(c), c["op"] == "rms_norm", fast)
        store(directory, c["y"], np.asarray(y.astype(jnp.float32)), c["dtype"])
        n += 1
    print(f"jax {jax.__version__} {'fast-variance' if fast else 'two-pass'}: wrote outputs of {n} cases")


if __name__ == "__main__":
    main()
