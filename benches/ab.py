#!/usr/bin/env python3
"""Alternating A/B of two normoracle binaries (the A/B figures of docs/speed.md).

    benches/ab.py OLD_BINARY NEW_BINARY [--rounds N] [bench options...]

Runs `nice -n -5 BINARY bench --json --no-candle [bench options]` of the two binaries in
turn, N rounds (default 5), the order swapped every round, and prints per case (op, dtype,
rows x d) the median of the paired ratios NEW/OLD of the kernel's seconds, with their
range. Each ratio compares two runs taken moments apart, which follows this machine's load
more closely than two medians taken minutes apart. Build each binary with
`cargo build --release` and copy it aside before changing the code.
"""
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run(
        ["nice", "-n", "-5", binary, "bench", "--json", "--no-candle"] + args,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        (r["op"], r["dtype"], r["rows"], r["d"]): r["seconds"]
        for r in json.loads(out)
        if r["kernel"] != "memcpy"
    }


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    rounds = 5
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i : i + 2]
    ratios = {}
    for k in range(rounds):
        order = (old, new) if k % 2 == 0 else (new, old)
        times = {b: run(b, args) for b in order}
        for case, seconds in times[old].items():
            ratios.setdefault(case, []).append(times[new][case] / seconds)
    for (op, dtype, rows, d), v in sorted(ratios.items()):
        v.sort()
        print(
            f"{op:10s} {dtype:4s} {rows:>5}x{d:<6} new/old median {statistics.median(v):.3f}"
            f"  [{v[0]:.3f} .. {v[-1]:.3f}]"
        )


if __name__ == "__main__":
    main()
