#!/usr/bin/env python3
"""all-MiniLM-L6-v2's encoder in numpy float64, from the same model.safetensors: an
independent check of normoracle's candle forward pass (tests/model.rs).

Usage: minilm_numpy.py MODEL_DIR IDS OUT_DIR
  IDS: comma-separated token ids ([CLS] ... [SEP]).
Writes OUT_DIR/hidden.npy (tokens x 384, the last hidden state) and OUT_DIR/ln_NN.npy (each
LayerNorm's output, NN = 00..12 in forward order), all float64.
"""
import json
import math
import os
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw[base + a : base + b], dtype="<f4").reshape(meta["shape"]).astype(np.float64)
    return out


def main():
    model_dir, ids, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    w = load(os.path.join(model_dir, "model.safetensors"))
    ids = np.array([int(t) for t in ids.split(",")])
    n = len(ids)
    eps = 1e-12
    lns = []

    def ln(x, name):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        y = (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]
        lns.append(y)
        return y

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    erf = np.vectorize(math.erf)
    h = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    h = h + w["embeddings.token_type_embeddings.weight"][0]
    h = ln(h, "embeddings.LayerNorm")
    for l in range(6):
        p = f"encoder.layer.{l}."
        split = lambda t: t.reshape(n, 12, 32).transpose(1, 0, 2)
        q = split(lin(h, p + "attention.self.query"))
        k = split(lin(h, p + "attention.self.key"))
        v = split(lin(h, p + "attention.self.value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s = s / s.sum(axis=-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, 384)
        a = ln(lin(ctx, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
        i = lin(a, p + "intermediate.dense")
        i = 0.5 * i * (1.0 + erf(i / math.sqrt(2.0)))
        h = ln(lin(i, p + "output.dense") + a, p + "output.LayerNorm")
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "hidden.npy"), h)
    for j, y in enumerate(lns):
        np.save(os.path.join(out_dir, f"ln_{j:02d}.npy"), y)


if __name__ == "__main__":
    main()
