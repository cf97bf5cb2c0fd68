#!/usr/bin/env python3
"""Issue 5's targets over several bench runs: the status tables of docs/speed.md.

    benches/runs_table.py RUN.json [RUN.json ...] [--format md|csv|latex] [--ranges]

Each RUN.json is the output of one `normoracle bench --json` (built with `--features candle`
for the ×candle rows). Prints one row per target, one column per size (in the order of the
first run), each cell the median over the runs of the record's own ratio (`vs_memcpy`, or
`vs_candle` against `candle_dtype`: each already a median of ratios taken moments apart),
with `--ranges` its [min–max] over the runs; in Markdown, met targets in bold. A last row
gives the floor's ×memcpy in f32 (`kernels::floor`: what every kernel must do, so no
kernel's ×memcpy can exceed it). Then the medians of the seconds per call of every kernel,
op and dtype. A target whose records are absent (no candle-nn, a size or dtype not run)
reads "–".

Exit status 2 with a one-line message if a file cannot be read or is not a bench report.
"""
import argparse
import json
import signal
import statistics
import sys

# (label, op, dtype, ratio, threshold): issue 5's targets, in its order.
TARGETS = [
    ("f32 LayerNorm ≥ 0.8× memcpy", "layer_norm", "f32", "vs_memcpy", 0.8),
    ("f32 RMSNorm ≥ 0.8× memcpy", "rms_norm", "f32", "vs_memcpy", 0.8),
    ("f32 LayerNorm ≥ 3× candle-nn", "layer_norm", "f32", "vs_candle", 3.0),
    ("f16 LayerNorm ≥ 20× candle-nn's f16", "layer_norm", "f16", "vs_candle", 20.0),
    ("bf16 LayerNorm ≥ 20× candle-nn's f16", "layer_norm", "bf16", "vs_candle", 20.0),
]
FLOOR_LABEL = "f32 floor ×memcpy (no kernel above it)"
KEYS = ("kernel", "op", "dtype", "rows", "d", "seconds", "vs_memcpy", "vs_candle")


def fail(message):
    print(f"runs_table: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            records = json.load(f)
    except (OSError, ValueError) as error:
        fail(f"{path}: {error}")
    if not isinstance(records, list) or not records or not all(
        isinstance(r, dict) and all(k in r for k in KEYS) for r in records
    ):
        fail(f"{path}: not the output of `normoracle bench --json`")
    return records


def native(kernel):
    return kernel.startswith("native-")


def over_runs(runs, field, wanted, case):
    """`field` of the records whose kernel name `wanted` accepts, for `case` (op, dtype,
    rows, d), in every run that has it."""
    return [
        r[field]
        for records in runs
        for r in records
        if wanted(r["kernel"]) and (r["op"], r["dtype"], r["rows"], r["d"]) == case
        and r[field] is not None
    ]


def cell(values, show, ranges=False, meets=None):
    """The median of `values` as `show` writes it ("–" where there are none), with
    `ranges` its [min–max], in bold where `meets` accepts the median."""
    if not values:
        return "–"
    median = statistics.median(values)
    text = show(median)
    if ranges:
        text += f" [{show(min(values))}–{show(max(values))}]"
    return f"**{text}**" if meets and meets(median) else text


def render(header, rows, style):
    if style == "csv":
        return "\n".join(",".join(f'"{c}"' if "," in c else c for c in row) for row in [header] + rows)
    if style == "latex":
        def tex(c):
            return c.replace("×", r"$\times$").replace("≥", r"$\geq$").replace("–", "--")
        lines = [r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\hline"]
        lines.append(" & ".join(tex(c) for c in header) + r" \\ \hline")
        lines += [" & ".join(tex(c) for c in row) + r" \\" for row in rows]
        return "\n".join(lines + [r"\hline", r"\end{tabular}"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN.json")
    parser.add_argument("--format", choices=("md", "csv", "latex"), default="md")
    parser.add_argument("--ranges", action="store_true", help="add [min–max] over the runs")
    args = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    runs = [load(path) for path in args.runs]
    sizes = list(dict.fromkeys((r["rows"], r["d"]) for r in runs[0]))
    size_names = [f"{rows} × {d}" for rows, d in sizes]
    cpus = sorted({r.get("cpu", "?") for records in runs for r in records})
    threads = sorted({str(r.get("threads", "?")) for records in runs for r in records})
    about = f"{len(runs)} run{'s' if len(runs) > 1 else ''}; threads {', '.join(threads)}; {'; '.join(cpus)}"
    # A line of its own above a Markdown table, a comment in LaTeX, and kept out of CSV.
    if args.format == "md":
        print(about + "\n")
    elif args.format == "latex":
        print(f"% {about}")
    else:
        print(about, file=sys.stderr)

    rows = []
    for label, op, dtype, ratio, threshold in TARGETS:
        digits = 2 if ratio == "vs_memcpy" else 1
        # In Markdown, met targets in bold.
        meets = (lambda m, t=threshold: m >= t) if args.format == "md" else None
        rows.append([label] + [
            cell(over_runs(runs, ratio, native, (op, dtype, *size)),
                 lambda v, n=digits: f"{v:.{n}f}", args.ranges, meets)
            for size in sizes
        ])
    # The floor's ×memcpy: the ceiling of the two memcpy targets, never in bold.
    rows.append([FLOOR_LABEL] + [
        cell(over_runs(runs, "vs_memcpy", "floor".__eq__, ("floor", "f32", *size)),
             lambda v: f"{v:.2f}", args.ranges)
        for size in sizes
    ])
    print(render(["target"] + size_names, rows, args.format))

    # Median seconds per call, in the units the docs quote.
    def duration(seconds):
        return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} µs"

    kernels = list(dict.fromkeys((r["kernel"], r["op"], r["dtype"]) for r in runs[0]))
    times = [
        [f"{kernel} {op} {dtype}"]
        + [cell(over_runs(runs, "seconds", kernel.__eq__, (op, dtype, *size)), duration) for size in sizes]
        for kernel, op, dtype in kernels
    ]
    print()
    print(render(["median seconds per call"] + size_names, times, args.format))


if __name__ == "__main__":
    main()
