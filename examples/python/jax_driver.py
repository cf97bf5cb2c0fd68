"""jax LayerNorm/RMSNorm (jax_kernels.py) over a `normoracle cases` directory, in the case's
dtype (f32, f16, bf16).

    python3 examples/python/jax_driver.py cases [two-pass|fast-variance]

With the Python package: `normoracle.jax.assert_kernel(jax_kernels.layer_norm_two_pass,
op="layer_norm", dtype="bf16")` (see test_examples.py).
"""
import sys

import jax
import jax.numpy as jnp

from jax_kernels import DTYPES, KERNELS
from normoracle_cases import directory_from_argv, run


def main():
    directory = directory_from_argv()
    variant = sys.argv[2] if len(sys.argv) > 2 else "two-pass"
    kernels = KERNELS[variant]
    run(
        directory,
        lambda op, dtype: kernels[op] if dtype in DTYPES else None,
        f"jax {jax.__version__} {variant}",
        to_framework=jnp.asarray,
    )


if __name__ == "__main__":
    main()
