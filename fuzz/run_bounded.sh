#!/usr/bin/env bash
# A short bounded run of every fuzz target, for CI: installs cargo-fuzz if missing, writes the
# seed corpora from the battery, builds every target (stable toolchain, no sanitizer) and runs
# each for FUZZ_SECONDS. Exits non-zero when any target finds a crash, a timeout or a failed
# property; the input is saved under fuzz/artifacts/<target>/ (see fuzz/README.md to replay
# and minimize it).
#
#   FUZZ_SECONDS   seconds per target (default 10)
#   FUZZ_RUNS      at most this many inputs per target (default 100000000)
#   FUZZ_FEATURES  cargo features of the fuzz crate (default "candle"; set it empty for a
#                  lean build without candle-nn; targets
#                  that need a feature not given are skipped, and said so)
#   FUZZ_TARGETS   space-separated targets to run (default: all of `cargo fuzz list`)
#   FUZZ_CODEGEN_UNITS  codegen units of the build (default 16: a build about twice as fast
#                  as cargo-fuzz's 1, for runs of seconds; use 1 for long campaigns)
#
# Targets of third-party kernels (kernel_candle_*) are subjects, not our code: a verdict
# failure there is the finding the target exists for (candle-nn's f32 E[x²] − μ², see the
# README's accuracy table), so it is reported with its saved input and does not fail the run.
# Anything else from them (a panic in an adapter, a refusal of a valid problem) does.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-10}"
runs="${FUZZ_RUNS:-100000000}"
features="${FUZZ_FEATURES-candle}"
feature_args=()
[ -n "$features" ] && feature_args=(--features "$features")

if ! cargo fuzz --version >/dev/null 2>&1; then
    nice cargo install cargo-fuzz --locked
fi

# cargo-fuzz builds into fuzz/target (its own flags; never the main target directory).
fuzz() { env -u CARGO_TARGET_DIR nice cargo fuzz "$@"; }

targets="${FUZZ_TARGETS:-$(fuzz list)}"
# shellcheck disable=SC2086
nice cargo run -q --example fuzz_seeds -- fuzz/corpus $targets

fuzz build --sanitizer none --codegen-units "${FUZZ_CODEGEN_UNITS:-16}" "${feature_args[@]}"
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# The features a target's [[bin]] in fuzz/Cargo.toml requires (its binary may be a stale
# one from an earlier build with them).
required_features() {
    awk -v t="$1" '/^\[\[bin\]\]/ { name = "" }
        /^name = / { gsub(/"/, "", $3); name = $3 }
        /^required-features/ && name == t { print }' fuzz/Cargo.toml |
        grep -oE '"[A-Za-z0-9_-]+"' | tr -d '"'
}

failed=()
for target in $targets; do
    missing=""
    for feature in $(required_features "$target"); do
        case " ${features//,/ } " in *" $feature "*) ;; *) missing="$feature" ;; esac
    done
    if [ -n "$missing" ] || [ ! -x "$bin_dir/$target" ]; then
        echo "fuzz: $target skipped (needs the fuzz crate's feature '$missing'; set FUZZ_FEATURES)"
        continue
    fi
    dict=()
    [ -f "fuzz/dictionaries/$target.dict" ] && dict=("-dict=fuzz/dictionaries/$target.dict")
    echo "fuzz: $target for ${seconds}s"
    mkdir -p "fuzz/artifacts/$target"
    # The binary directly (what `cargo fuzz run` does after its build), so one build serves
    # every target. -close_fd_mask=1: the cli target's commands print reports on stdout.
    log="fuzz/target/$target.log"
    if ! nice "$bin_dir/$target" "fuzz/corpus/$target" -artifact_prefix="fuzz/artifacts/$target/" \
        -max_total_time="$seconds" -runs="$runs" -timeout=20 -rss_limit_mb=4096 \
        -close_fd_mask=1 -print_final_stats=1 "${dict[@]}" 2>"$log"; then
        if [[ "$target" == kernel_candle_* ]] && grep -qE '^candle-nn(-module)? FAILS:' "$log"; then
            grep -m1 -A12 -E '^candle-nn(-module)? FAILS:' "$log"
            echo "fuzz: $target found a verdict failure of the third-party kernel (expected);" \
                "input: $(sed -n 's/^Test unit written to //p' "$log" | head -n 1)"
            continue
        fi
        tail -n 60 "$log"
        echo "fuzz: $target FAILED; replay: cargo fuzz run --sanitizer none $target fuzz/artifacts/$target/<file>"
        failed+=("$target")
    else
        grep -E '^stat::number_of_executed_units|^Done' "$log" | tr '\n' ' '
        echo
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FINDINGS in ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: every target ran ${seconds}s without a finding"
