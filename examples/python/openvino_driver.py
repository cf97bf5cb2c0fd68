"""OpenVINO's CPU plugin (openvino_kernels.py) over a `normoracle cases` directory, in the
case's own dtype (f32, f16, bf16).

    normoracle cases --out cases
    python3 examples/python/openvino_driver.py cases
    normoracle check cases

With the Python package: `normoracle.assert_kernel(openvino_kernels.layer_norm,
op="layer_norm", dtype="f32")`.
"""
from normoracle_cases import directory_from_argv, run
from openvino_kernels import KERNELS, VERSION


def main():
    run(directory_from_argv(), lambda op, dtype: KERNELS[op], VERSION)


if __name__ == "__main__":
    main()
