"""tinygrad's nn.LayerNorm / nn.RMSNorm (tinygrad_kernels.py) over a `normoracle cases`
directory, in the case's own dtype (f32, f16, bf16), on tinygrad's default device.

    normoracle cases --out cases
    python3 examples/python/tinygrad_driver.py cases
    normoracle check cases

Its CPU device compiles kernels with `clang`: without it the driver exits 1 saying so, and the
accuracy table leaves tinygrad out.
"""
import shutil
import sys

from normoracle_cases import directory_from_argv, run


def main():
    directory = directory_from_argv()
    try:
        from tinygrad import Device

        device = Device.DEFAULT
    except Exception as e:  # noqa: BLE001 - no usable device (no clang for CPU)
        sys.exit(f"tinygrad: no usable device ({e}); its CPU device needs clang")
    if device == "CPU" and shutil.which("clang") is None:
        sys.exit("tinygrad: its CPU device compiles kernels with clang, which is not installed")
    from tinygrad_kernels import KERNELS, VERSION, bf16_compiles

    # Without bf16 in the compiler, every bf16 case would fail to compile: leave them all
    # without outputs at once (the table reads "unsupported").
    dtypes = ("f32", "f16", "bf16") if bf16_compiles() else ("f32", "f16")
    if "bf16" not in dtypes:
        print(f"{VERSION} {device}: bf16 does not compile here (clang without __bf16)", file=sys.stderr)
    run(directory, lambda op, dtype: KERNELS[op] if dtype in dtypes else None, f"{VERSION} {device}")


if __name__ == "__main__":
    main()
