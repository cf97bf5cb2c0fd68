"""PaddlePaddle's layer_norm / rms_norm on the CPU (paddle_kernels.py) over a `normoracle
cases` directory, in the case's own dtype (f32, f16, bf16; what Paddle's CPU kernels do not
take is left without outputs and reads "unsupported").

    normoracle cases --out cases
    python3 examples/python/paddle_driver.py cases
    normoracle check cases

paddlepaddle's CPU wheel installs 770 MB: not in CI (docs/zoo.md, "Frameworks outside CI").
"""
from normoracle_cases import directory_from_argv, run
from paddle_kernels import KERNELS, VERSION


def main():
    run(directory_from_argv(), lambda op, dtype: KERNELS[op], VERSION)


if __name__ == "__main__":
    main()
