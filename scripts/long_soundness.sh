#!/usr/bin/env bash
# The judge's long soundness run (docs/judge.md, "How it is tested"): every careful kernel of
# the model over the battery with seeds 1–20, and the model's adversarial kernels over the
# battery and a million random rows. Not part of CI (hours on 2 cores); exits 1 at the first
# careful kernel that FAILs.
#
#   scripts/long_soundness.sh [FIRST_SEED [LAST_SEED]]
set -euo pipefail
cd "$(dirname "$0")/.."
first=${1:-1}
last=${2:-20}
cases=${CASES:-200}

cargo build --release -q
bin=target/release/normoracle
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The C zoo's careful kernels (double two-pass, double Welford, pairwise f32 with scaling) and
# the C example, as shared libraries behind the C ABI.
libs=("$tmp/example.so")
cc -O2 -shared -fPIC -o "$tmp/example.so" examples/c/normoracle_example.c -lm
for v in 1 2 3; do
    cc -O2 -shared -fPIC -o "$tmp/zoo$v.so" tests/c/zoo.c -lm -DVARIANT=$v
    libs+=("$tmp/zoo$v.so")
done

for seed in $(seq "$first" "$last"); do
    for op in layer_norm rms_norm; do
        for dtype in f32 f16 bf16; do
            for builtin in reference-f64 native; do
                "$bin" fuzz --builtin "$builtin" --op "$op" --dtype "$dtype" --seed "$seed" \
                    --cases "$cases" >"$tmp/out" 2>&1 \
                    || { cat "$tmp/out"; echo "FAIL: $builtin $op $dtype seed $seed"; exit 1; }
            done
            for lib in "${libs[@]}"; do
                "$bin" fuzz --lib "$lib" --op "$op" --dtype "$dtype" --seed "$seed" \
                    --cases "$cases" >"$tmp/out" 2>&1 \
                    || { cat "$tmp/out"; echo "FAIL: $lib $op $dtype seed $seed"; exit 1; }
            done
        done
    done
    echo "seed $seed: every careful kernel passes ($cases random cases per battery)"
done

# The adversarial model kernels (crates/oracle/src/judge/soundness.rs): every variant on every battery case
# per seed, then a million random rows (seeded by the first seed).
for seed in $(seq "$first" "$last"); do
    NORMORACLE_LONG=1 NORMORACLE_SEED=$seed cargo test --release -q --lib \
        judge::soundness::every_model_kernel_passes_the_ -- --nocapture
done
NORMORACLE_LONG=1 NORMORACLE_SEED=$first cargo test --release -q --lib \
    judge::soundness::every_model_kernel_passes_random_rows -- --nocapture
