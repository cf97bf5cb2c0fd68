"""TensorFlow/Keras LayerNormalization / RMSNormalization on the CPU (tensorflow_kernels.py)
over a `normoracle cases` directory, in the case's own dtype (f32, f16, bf16).

    normoracle cases --out cases
    python3 examples/python/tensorflow_driver.py cases
    normoracle check cases

tensorflow-cpu installs 1.4 GB: not in CI (docs/zoo.md, "Frameworks outside CI").
"""
from normoracle_cases import directory_from_argv, run
from tensorflow_kernels import KERNELS, VERSION


def main():
    run(directory_from_argv(), lambda op, dtype: KERNELS[op], VERSION)


if __name__ == "__main__":
    main()
