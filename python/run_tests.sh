#!/usr/bin/env bash
# The Python package's tests: builds the wheel with maturin into a virtual environment under
# target/ and runs pytest over python/tests and examples/python. The venv sees the system's
# site-packages, so the frameworks .ci/run installs (numpy, jax, onnxruntime) are judged;
# torch's tests skip where torch is absent. maturin and pytest come from PyPI
# (python/requirements-test.txt) the first time.
#
# The wheel is built in cargo's dev profile into the repository's target/, reusing the
# dependencies `cargo test` built (they are optimized in that profile, see Cargo.toml);
# NORMORACLE_WHEEL_PROFILE=release builds what `pip install ./python` installs.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
profile=${NORMORACLE_WHEEL_PROFILE:-dev}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
rm -rf target/wheels/normoracle-*.whl
start=$(date +%s%N)
"$venv/bin/maturin" build --quiet --manifest-path python/Cargo.toml --profile "$profile" \
    --interpreter "$venv/bin/python" --out target/wheels
echo "normoracle wheel built in $((($(date +%s%N) - start) / 1000000)) ms ($profile profile)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
    target/wheels/normoracle-*.whl
# The CLI the package is compared with (built by `cargo test`).
export NORMORACLE_BIN=${NORMORACLE_BIN:-$PWD/target/debug/normoracle}
[ -x "$NORMORACLE_BIN" ] || cargo build --quiet --bin normoracle
# Run from outside the source tree, so that the installed package is what is imported.
# examples/python's tests (the default battery through each example kernel, the same kernels
# python/tests compares with the CLI) run with NORMORACLE_PY_EXAMPLES=1.
cd python/tests
examples=()
[ "${NORMORACLE_PY_EXAMPLES:-0}" = 1 ] && examples=(../../examples/python)
exec "../../$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=5 . "${examples[@]}" "$@"
