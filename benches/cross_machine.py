#!/usr/bin/env python3
"""The native kernels' verdicts as a digest to compare between machines.

    benches/cross_machine.py [BINARY] [--cases N] [--seed S]

Runs `BINARY fuzz --builtin native --op OP --dtype DT --json` (BINARY defaults to
target/release/normoracle) for both ops and the three formats on one seeded battery, and
prints one line per case: the verdict, the elements judged, how many of them were the
correct rounding, and the SHA-256 of the whole JSON report. The report holds nothing of the
machine (no timings, no instruction set, the same bytes whatever the thread count), so two
machines whose kernels write the same bits print the same lines: `diff` the outputs. Where
`exact` equals `judged`, every judged element was the correctly rounded value itself, which
is the same on every machine. Exit status 1 if a case did not pass, 2 if one could not run.
"""
import argparse
import hashlib
import json
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", nargs="?", default="target/release/normoracle")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"# cases {args.cases}, seed {args.seed}")
    print("op dtype passed judged exact sha256")
    all_passed = True
    for dtype in ("f32", "f16", "bf16"):
        for op in ("layer_norm", "rms_norm"):
            command = [
                args.binary, "fuzz", "--builtin", "native", "--op", op, "--dtype", dtype,
                "--cases", str(args.cases), "--seed", str(args.seed), "--json",
            ]
            try:
                run = subprocess.run(command, capture_output=True)
            except OSError as error:
                print(f"cannot run {args.binary}: {error.strerror}", file=sys.stderr)
                sys.exit(2)
            try:
                report = json.loads(run.stdout)
            except ValueError:
                message = run.stderr.decode(errors="replace").strip().splitlines()
                print(f"{op} {dtype}: no report ({message[-1] if message else run.returncode})",
                      file=sys.stderr)
                sys.exit(2)
            tally = report["tally"]
            digest = hashlib.sha256(run.stdout).hexdigest()
            print(f"{op} {dtype} {report['passed']} {tally['judged']} {tally['exact']} {digest}")
            all_passed &= bool(report["passed"])
    sys.exit(0 if all_passed else 1)


if __name__ == "__main__":
    main()
