"""The time to judge the default battery of a numpy kernel: `normoracle.assert_kernel` against
the `.npy` round trip (`normoracle cases` → a driver → `normoracle check`), measured in
alternation in one run, and the package's import time.

    python3 python/bench/roundtrip.py [--runs 7] [--bin target/release/normoracle]

Prints the median and range (min–max) of each and the ratio of medians. Both paths judge
the same battery (layer_norm f32, the seed's systematic cases and 200 random ones) with
the same kernel (examples/python/numpy_kernels.py, float64 two-pass).
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))


def median_range(samples):
    return f"median {statistics.median(samples):.3f} s (range {min(samples):.3f}–{max(samples):.3f}, n = {len(samples)})"


def import_time(runs):
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", "import time; t = time.perf_counter(); import normoracle; print(time.perf_counter() - t)"],
            capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(),
        )
        times.append(float(out.stdout))
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bin", default=str(ROOT / "target" / "release" / "normoracle"))
    args = parser.parse_args()

    import normoracle
    import numpy_kernels

    kernel = numpy_kernels.layer_norm_two_pass
    driver = ROOT / "examples" / "python" / "numpy_driver.py"
    package, roundtrip = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        normoracle.assert_kernel(kernel, op="layer_norm", dtype="f32", seed=1)
        package.append(time.perf_counter() - t)

        directory = tempfile.mkdtemp()
        try:
            t = time.perf_counter()
            subprocess.run([args.bin, "cases", "--out", directory, "--op", "layer_norm", "--dtype", "f32",
                            "--seed", "1", "--cases", "200"], check=True, capture_output=True)
            subprocess.run([sys.executable, str(driver), directory, "two-pass"], check=True, capture_output=True)
            subprocess.run([args.bin, "check", directory], check=True, capture_output=True)
            roundtrip.append(time.perf_counter() - t)
        finally:
            shutil.rmtree(directory)
    imports = import_time(args.runs)
    print(f"normoracle {normoracle.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"import normoracle:                 {median_range(imports)}")
    print(f"assert_kernel (layer_norm f32):    {median_range(package)}")
    print(f".npy round trip (cases/driver/check): {median_range(roundtrip)}")
    print(f"round trip / assert_kernel:        {statistics.median(roundtrip) / statistics.median(package):.2f}×")


if __name__ == "__main__":
    main()
