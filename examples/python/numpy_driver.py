"""numpy LayerNorm/RMSNorm (numpy_kernels.py) over a `normoracle cases` directory.

    normoracle cases --out cases
    python3 examples/python/numpy_driver.py cases two-pass   # float64 two-pass: passes
    normoracle check cases
    python3 examples/python/numpy_driver.py cases one-pass   # float32 E[x²]−E[x]²: fails
    normoracle check cases

With the Python package, the same kernels in one call each: see test_examples.py.
"""
import sys

from normoracle_cases import directory_from_argv, run
from numpy_kernels import KERNELS


def main():
    directory = directory_from_argv()
    variant = sys.argv[2] if len(sys.argv) > 2 else "two-pass"
    kernels = KERNELS[variant]
    run(directory, lambda op, dtype: kernels[op], f"numpy {variant}")


if __name__ == "__main__":
    main()
