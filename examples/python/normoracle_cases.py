"""Running a kernel over a `normoracle cases` directory: the .npy path, for frameworks the
Python package does not reach and as the model for drivers in other languages.

`normoracle cases --out DIR` writes each case's x, γ and β as .npy files and a manifest.json
(op, dtype, ε as exact f32 bits, convention, family, where the outputs go); a driver computes
each case's outputs and saves them where the manifest says; `normoracle check DIR` judges
them all. Storage: f16 '<f2', f32 '<f4', f64 '<f8'; bf16 inputs are '<u2' bit patterns, and
outputs may be '<u2' bit patterns or ml_dtypes.bfloat16 arrays (np.save writes '<V2').

In Python, `normoracle.assert_kernel` (python/, `pip install ./python`) does all of this in
one call; the kernels of these examples are the same functions in both paths.
"""
import json
import os
import sys

import numpy as np

try:
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 cases need ml_dtypes (it comes with jax)
    BFLOAT16 = None

STORAGE = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def load(directory, name, dtype):
    """A case array in the case's dtype (bf16 as ml_dtypes.bfloat16)."""
    a = np.load(os.path.join(directory, name))
    return a.view(BFLOAT16) if dtype == "bf16" else a


def eps_of(case):
    """ε exactly as normoracle uses it: the f32 with the manifest's bits."""
    return float(np.array([int(case["eps_bits"], 16)], dtype=np.uint32).view(np.float32)[0])


def cases(directory, conventions=("inside",)):
    """Yields (case, x, gamma, beta) for every case the driver can read: bf16 cases only
    where ml_dtypes is installed."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    for c in manifest["cases"]:
        dt = c["dtype"]
        if c["convention"] not in conventions or (dt == "bf16" and BFLOAT16 is None):
            continue
        x = load(directory, c["x"], dt)
        g = load(directory, c["gamma"], dt) if c["gamma"] else None
        b = load(directory, c["beta"], dt) if c["beta"] else None
        yield c, x, g, b


def run(directory, kernel_for, label, to_framework=lambda a: a):
    """Runs `kernel_for(op, dtype)` (a kernel in normoracle.assert_kernel's convention, or
    None to leave the case without outputs) on every case and saves its outputs. A kernel
    that raises leaves its case without outputs (the check names the case)."""
    done = skipped = 0
    told = set()
    for c, x, g, b in cases(directory):
        kernel = kernel_for(c["op"], c["dtype"])
        if kernel is None:
            skipped += 1
            continue
        x, g, b = (None if a is None else to_framework(a) for a in (x, g, b))
        try:
            with np.errstate(all="ignore"):
                y = kernel(x, g, b, eps_of(c)) if c["op"] == "layer_norm" else kernel(x, g, eps_of(c))
        except Exception as e:  # noqa: BLE001 - an unsupported op or dtype of the framework
            if (c["op"], c["dtype"]) not in told:
                told.add((c["op"], c["dtype"]))
                print(f"{label}: {c['op']} {c['dtype']}, case {c['id']} and maybe more: {type(e).__name__}: {e}", file=sys.stderr)
            skipped += 1
            continue
        np.save(os.path.join(directory, c["y"]), np.asarray(y))
        done += 1
    print(f"{label}: wrote outputs of {done} cases, {skipped} without")


def directory_from_argv():
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} CASES_DIR [options]")
    return sys.argv[1]
