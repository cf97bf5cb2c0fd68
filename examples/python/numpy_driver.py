"""numpy LayerNorm/RMSNorm over a `normoracle cases` directory.

    normoracle cases --out cases
    python3 examples/python/numpy_driver.py cases two-pass   # float64 two-pass: passes
    normoracle check cases
    python3 examples/python/numpy_driver.py cases one-pass   # float32 E[x²]−E[x]²: fails
    normoracle check cases
"""
import sys

import numpy as np

from normoracle_cases import cases, directory_from_argv, eps_of, store


def two_pass(x, g, b, eps, rms):
    xd = x.astype(np.float64)
    mean = 0.0 if rms else xd.mean(axis=-1, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (xd - mean) / np.sqrt(var + eps)
    return y * (1.0 if g is None else g.astype(np.float64)) + (0.0 if b is None else b.astype(np.float64))


def one_pass_f32(x, g, b, eps, rms):
    x = x.astype(np.float32)
    mean = np.float32(0) if rms else x.mean(axis=-1, keepdims=True, dtype=np.float32)
    var = (x * x).mean(axis=-1, keepdims=True, dtype=np.float32) - mean * mean
    y = (x - mean) / np.sqrt(var + np.float32(eps))
    return y * (np.float32(1) if g is None else g) + (np.float32(0) if b is None else b)


def main():
    directory = directory_from_argv()
    variant = sys.argv[2] if len(sys.argv) > 2 else "two-pass"
    kernel = {"two-pass": two_pass, "one-pass": one_pass_f32}[variant]
    n = 0
    with np.errstate(all="ignore"):
        for c, x, g, b in cases(directory):
            y = kernel(x, g, b, eps_of(c), c["op"] == "rms_norm")
            store(directory, c["y"], y, c["dtype"])
            n += 1
    print(f"numpy {variant}: wrote outputs of {n} cases")


if __name__ == "__main__":
    main()
