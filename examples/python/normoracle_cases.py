"""Shared helpers for drivers of `normoracle cases` directories.

A driver reads manifest.json, computes each case's outputs with its framework, and writes
them where the manifest says; `normoracle check DIR` then judges them. Storage: f16 as
'<f2', bf16 as '<u2' bit patterns, f32 '<f4', f64 '<f8'.
"""
import json
import os
import sys

import numpy as np


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """Round float32 to bfloat16 (nearest, ties to even), as uint16 bit patterns."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    rounded[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def load(directory, name, dtype):
    """Loads a case array as float32 (f16, bf16, f32) or float64 (f64)."""
    a = np.load(os.path.join(directory, name))
    if dtype == "bf16":
        return bf16_bits_to_f32(a)
    if dtype == "f64":
        return a.astype(np.float64)
    return a.astype(np.float32)


def store(directory, name, y, dtype):
    """Writes outputs in the case's storage format (rounding once from y's precision)."""
    path = os.path.join(directory, name)
    if dtype == "bf16":
        np.save(path, f32_to_bf16_bits(np.asarray(y, dtype=np.float32)))
    elif dtype == "f16":
        np.save(path, np.asarray(y).astype(np.float16))
    elif dtype == "f32":
        np.save(path, np.asarray(y).astype(np.float32))
    else:
        np.save(path, np.asarray(y).astype(np.float64))


def cases(directory, ops=("layer_norm", "rms_norm"), conventions=("inside",)):
    """Yields (case, x, gamma, beta) for the cases a driver handles."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    for c in manifest["cases"]:
        if c["op"] not in ops or c["convention"] not in conventions:
            continue
        dt = c["dtype"]
        x = load(directory, c["x"], dt)
        g = load(directory, c["gamma"], dt) if c["gamma"] else None
        b = load(directory, c["beta"], dt) if c["beta"] else None
        yield c, x, g, b


def eps_of(case):
    """ε exactly as normoracle uses it: the f32 with the manifest's bits."""
    return float(np.array([int(case["eps_bits"], 16)], dtype=np.uint32).view(np.float32)[0])


def directory_from_argv():
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} CASES_DIR [options]")
    return sys.argv[1]
