#!/bin/bash -eu
# The standard OSS-Fuzz / ClusterFuzzLite build of a cargo-fuzz project: every target of
# fuzz/ into $OUT, with its seed corpus (battery cases, normoracle::fuzzing::seeds) and its
# dictionary where one exists. The base image's cargo wrapper supplies the sanitizer flags.
cd "$SRC/normoracle"

cargo fuzz build -O --debug-assertions
bin_dir=fuzz/target/x86_64-unknown-linux-gnu/release

# Seeds are written by a plain (uninstrumented) build of the library's example.
seeds="$WORK/seeds"
rm -rf "$seeds"
targets=$(cargo fuzz list)
# shellcheck disable=SC2086
env -u RUSTFLAGS -u CARGO_BUILD_RUSTFLAGS cargo run --target-dir "$WORK/seed-target" \
    --example fuzz_seeds -- "$seeds" $targets

for target in $targets; do
    # Targets behind a feature of fuzz/Cargo.toml (candle) are not built by default.
    [ -x "$bin_dir/$target" ] || continue
    cp "$bin_dir/$target" "$OUT/"
    (cd "$seeds/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
    if [ -f "fuzz/dictionaries/$target.dict" ]; then
        cp "fuzz/dictionaries/$target.dict" "$OUT/$target.dict"
    fi
done
