"""onnxruntime's LayerNormalization/RMSNormalization (onnxruntime_kernels.py) over a
`normoracle cases` directory, in the case's own dtype.

    normoracle cases --out cases
    python3 examples/python/onnxruntime_driver.py cases
    normoracle check cases

Cases whose dtype or op the installed onnxruntime cannot run are left without outputs: the
check fails on them (exit 1) and names them; `normoracle cases --op ... --dtype ...` writes
only the cases it runs.
"""
from normoracle_cases import directory_from_argv, run
from onnxruntime_kernels import KERNELS, VERSION


def main():
    run(directory_from_argv(), lambda op, dtype: KERNELS[op], VERSION)


if __name__ == "__main__":
    main()
