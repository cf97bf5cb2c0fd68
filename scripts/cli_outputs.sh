#!/usr/bin/env bash
# Every CLI output that is not a timing, captured for a before/after comparison of a
# refactoring (docs/design.md): stdout, stderr and exit code of each command under OUT, with
# the provenance line's commit and the seconds columns of `audit` and `theorems` blanked.
#
#   scripts/cli_outputs.sh BIN OUT        then: diff -r OUT_BEFORE OUT_AFTER
#
# BIN is a normoracle binary (give both the same file name: clap prints it in usage lines).
# About 4 minutes with a release build on 2 cores.
set -uo pipefail
bin=$(realpath "$1"); out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"; out=$(realpath "$out")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC -o "$tmp/example.so" "$root/examples/c/normoracle_example.c" -lm
python3 -c "import numpy as np; np.save('$tmp/gain.npy', np.array([2, 9, 12, 13, 0.5, -3, 7, 1.25], dtype=np.float32))"
cd "$tmp"
normalize() {
    sed -E -e 's/^(#? ?normoracle [0-9.]+ \(git )[^)]*\)/\1…)/' -e 's/\| [0-9]+\.[0-9]+ \|$/| … |/'
}
run() {
    name=$1; shift
    "$bin" "$@" 2>"$out/$name.err" | normalize >"$out/$name.out"
    echo "${PIPESTATUS[0]}" >"$out/$name.rc"
}
run help --help
run audit audit
run zoo zoo --builtins-only
run zoo-json zoo --builtins-only --format json --cases 20
run theorems theorems
run list reproduce --list
for a in theorems figure1d eps-counterexample ellipsoid-example ellipsoid-concentration \
    accuracy-table error-model; do
    run "reproduce-$a" reproduce "$a"
done
run reproduce-figure1d-eps-csv reproduce figure1d-eps --format csv
run reproduce-figure1c-csv reproduce figure1c --format csv
run reproduce-concentration-svg reproduce ellipsoid-concentration --format svg
for op in layer_norm rms_norm; do
    for dtype in f32 f16 bf16; do
        for builtin in native reference-f64; do
            run "fuzz-$builtin-$op-$dtype" fuzz --builtin "$builtin" --op "$op" --dtype "$dtype" \
                --seed 7 --cases 60 --json
        done
    done
done
run fuzz-lib fuzz --lib ./example.so --op layer_norm --dtype f32 --seed 3 --cases 40 --json
run cases cases --out cases --seed 5 --cases 5
run check-cases check cases --json
run ellipsoid ellipsoid --gain gain.npy --json
run unselectable-help unselectable --help
run bad-input check /nonexistent
