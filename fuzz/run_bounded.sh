#!/usr/bin/env bash
# A short, reproducible run of every fuzz target, for CI: installs cargo-fuzz if missing, writes
# the seed corpora from the battery, builds every target (stable toolchain, no sanitizer) and
# runs each for a fixed number of inputs from a fixed libFuzzer seed. Exits non-zero when any
# target finds a crash, a timeout or a failed property; the input is saved under
# fuzz/artifacts/<target>/ (see fuzz/README.md to replay and minimize it).
#
# Reproducible: what a run explores depends on the binary and FUZZ_SEED only, not on the
# machine's speed or luck, so a red CI run is red again on rerun of the same build (a build
# from another rustc or on a CPU with other SIMD paths has other coverage counters, and
# explores other inputs):
# - the libFuzzer seed is fixed (FUZZ_SEED, printed);
# - each target runs a fixed number of inputs (-runs, the table below); -max_total_time is a
#   safety net only (FUZZ_MAX_SECONDS, far above any target's time here), and a run it cuts
#   short is reported as such;
# - the seeds are given as a sorted list of files (-seed_inputs; libFuzzer would take a
#   directory in the file system's listing order), and new inputs go to a fresh directory
#   per run, not to fuzz/corpus, which long campaigns grow (-reload=0: nothing is re-read);
# - no worker threads: libFuzzer's coverage counters are not atomic, and even one idle rayon
#   worker adds scheduling-dependent coverage (its spin-then-sleep loop is instrumented), so
#   the harness makes rayon's pool the fuzzing thread alone (fuzz/src/lib.rs), and
#   RAYON_NUM_THREADS=1 is set for anything that reads it;
# - -use_cmp=0: libFuzzer's CMP-guided mutations insert values seen in traced comparisons,
#   some of them addresses (randomized per process by ASLR); without them a run depends on
#   the binary and the seed only. (setarch -R would keep them, but container seccomp
#   profiles refuse it.) Long campaigns keep them (the default).
# Two runs of one build report the same final stats (cov, ft, corpus, new units).
#
#   FUZZ_SEED          libFuzzer -seed (default 1)
#   FUZZ_RUNS          inputs per target, for every target (default: the table below)
#   FUZZ_MAX_SECONDS   safety net per target (default 300)
#   FUZZ_JOBS          targets run side by side (default: the cores, from nproc); what
#                      each explores does not depend on it
#   FUZZ_FEATURES      cargo features of the fuzz crate (default none: a lean build without
#                      candle-nn, whose release build with coverage is about 3 minutes of
#                      the 2 cores; "candle" builds and runs its targets too; targets that
#                      need a feature not given are skipped, and said so)
#   FUZZ_TARGETS       space-separated targets to run (default: all of `cargo fuzz list`)
#   FUZZ_CODEGEN_UNITS codegen units of the build (default 16: a build about twice as fast
#                      as cargo-fuzz's 1, for short runs; use 1 for long campaigns)
#
# Long campaigns stay time-based (fuzz/README.md): cargo fuzz run --sanitizer none TARGET
# fuzz/corpus/TARGET -- -max_total_time=SECONDS.
#
# Targets of third-party kernels (kernel_candle_*) are subjects, not our code: a verdict
# failure there is the finding the target exists for (candle-nn's f32 E[x²] − μ², see the
# accuracy table, docs/zoo.md), so it is reported with its saved input and does not fail the run.
# Anything else from them (a panic in an adapter, a refusal of a valid problem) does.
set -euo pipefail
cd "$(dirname "$0")/.."

seed="${FUZZ_SEED:-1}"
max_seconds="${FUZZ_MAX_SECONDS:-300}"
jobs_max="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
if ! [[ "$jobs_max" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz: FUZZ_JOBS must be a whole number of at least 1, got '$jobs_max'" >&2
    exit 2
fi
features="${FUZZ_FEATURES-}"
feature_args=()
[ -n "$features" ] && feature_args=(--features "$features")

# Inputs per target, from the exec/s measured on a 2-core machine (nice 19, one thread):
# about 20 s for the targets findings have come from (reference-f64 in f64: ~2000 exec/s;
# the reference and the judge: ~2300), 20 s for the certificates (~360), 15 s for the cli
# (~3500), 10 s for the other kernels (~9000–11000), 5 s for npy (~150000). The candle
# targets stop at their first finding, within a second or two. Slower machines run them at
# about a third of those rates: on a 2-vCPU AMD EPYC (Zen) all targets took 267 s two at a
# time, the judge 85 s and reference-f64 in f64 106 s of it before they were cut to these
# counts; the CI dry runs on a 2-core Cascade Lake Xeon took 412 and 505 s for all targets
# one at a time (now two at a time there, see FUZZ_JOBS).
runs_of() {
    case "$1" in
    kernel_reference_f64_f64) echo 40000 ;;
    kernel_reference_f64_f32) echo 100000 ;;
    kernel_reference_f64_f16) echo 100000 ;;
    kernel_reference_f64_bf16) echo 90000 ;;
    kernel_native_f32) echo 115000 ;;
    kernel_native_f16) echo 115000 ;;
    kernel_native_bf16) echo 90000 ;;
    kernel_candle_*) echo 20000 ;;
    reference) echo 50000 ;;
    judge) echo 40000 ;;
    npy) echo 750000 ;;
    worker_protocol) echo 400000 ;;
    certificate) echo 7500 ;;
    cli) echo 50000 ;;
    *) echo 20000 ;;
    esac
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    nice cargo install cargo-fuzz --locked
fi

# cargo-fuzz builds into fuzz/target (its own flags; never the main target directory).
fuzz() { env -u CARGO_TARGET_DIR nice cargo fuzz "$@"; }

targets="${FUZZ_TARGETS:-$(fuzz list)}"
# The seed writer in the test profile with every feature: the example that the README's test
# command (`cargo test --workspace --all-features`) has just built. A plain `cargo run` would
# build the library and its dependencies once more, for the dev profile's other feature set
# (about 4 minutes of CI's 2 cores, for a program that runs in a second).
# shellcheck disable=SC2086
nice cargo run -q --profile test --all-features --example fuzz_seeds -- fuzz/corpus $targets

fuzz build --sanitizer none --codegen-units "${FUZZ_CODEGEN_UNITS:-16}" "${feature_args[@]}"
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"
work="fuzz/target/bounded"

# The features a target's [[bin]] in fuzz/Cargo.toml requires (its binary may be a stale
# one from an earlier build with them).
required_features() {
    awk -v t="$1" '/^\[\[bin\]\]/ { name = "" }
        /^name = / { gsub(/"/, "", $3); name = $3 }
        /^required-features/ && name == t { print }' fuzz/Cargo.toml |
        grep -oE '"[A-Za-z0-9_-]+"' | tr -d '"'
}

# One target's run. Its report goes to $work/$target/report and, where our code failed, the
# target's name to $work/$target/failed: targets run side by side (below), so nothing is
# printed or collected here.
run_target() {
    local target="$1" missing="" feature runs log executed
    local report="$work/$target/report"
    for feature in $(required_features "$target"); do
        case " ${features//,/ } " in *" $feature "*) ;; *) missing="$feature" ;; esac
    done
    if [ -n "$missing" ] || [ ! -x "$bin_dir/$target" ]; then
        echo "fuzz: $target skipped (needs the fuzz crate's feature '$missing'; set FUZZ_FEATURES)" >"$report"
        return
    fi
    mkdir -p "$work/$target/corpus" "fuzz/artifacts/$target"
    runs="${FUZZ_RUNS:-$(runs_of "$target")}"
    local dict=()
    [ -f "fuzz/dictionaries/$target.dict" ] && dict=("-dict=fuzz/dictionaries/$target.dict")
    # The seeds in name order, and a fresh directory for what the run adds.
    find "fuzz/corpus/$target" -maxdepth 1 -type f -name 'seed-*' | LC_ALL=C sort |
        paste -sd, - >"$work/$target/seeds"
    echo "fuzz: $target, $runs inputs" >"$report"
    # The binary directly (what `cargo fuzz run` does after its build), so one build serves
    # every target. -close_fd_mask=1: the cli target's commands print reports on stdout.
    log="$work/$target/log"
    if ! RAYON_NUM_THREADS=1 nice "$bin_dir/$target" "$work/$target/corpus" \
        -seed_inputs=@"$work/$target/seeds" -seed="$seed" -runs="$runs" -reload=0 -use_cmp=0 \
        -max_total_time="$max_seconds" -artifact_prefix="fuzz/artifacts/$target/" \
        -timeout=20 -rss_limit_mb=4096 -close_fd_mask=1 -print_final_stats=1 \
        "${dict[@]}" 2>"$log"; then
        if [[ "$target" == kernel_candle_* ]] && grep -qE '^candle-nn(-module)? FAILS:' "$log"; then
            {
                grep -m1 -A12 -E '^candle-nn(-module)? FAILS:' "$log"
                echo "fuzz: $target found a verdict failure of the third-party kernel (expected);" \
                    "input: $(sed -n 's/.*Test unit written to //p' "$log" | head -n 1)"
            } >>"$report"
            return
        fi
        {
            tail -n 60 "$log"
            echo "fuzz: $target FAILED; replay: cargo fuzz run --sanitizer none $target fuzz/artifacts/$target/<file>"
        } >>"$report"
        touch "$work/$target/failed"
    else
        executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        # The final status line (cov, ft, corpus) and what the run added: equal for two runs
        # of one build and seed.
        echo "  $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tr -s '\t ' ' ')" \
            "new_units_added: $(sed -n 's/^stat::new_units_added: *//p' "$log")" >>"$report"
        if [ "${executed:-0}" -lt "$runs" ]; then
            echo "fuzz: $target stopped by the ${max_seconds}s safety net after $executed of" \
                "$runs inputs: this run is not reproducible (raise FUZZ_MAX_SECONDS)" >>"$report"
        fi
    fi
}

# Targets run side by side, FUZZ_JOBS at a time (default: one per core). Each is one
# single-threaded process with its own seed, inputs and directories, so what it explores is
# the same alone or beside another; on CI's 2 cores this halves the run (one target at a
# time left a core idle for about 7 minutes).
echo "fuzz: libFuzzer seed $seed (FUZZ_SEED), a fixed number of inputs per target," \
    "$jobs_max at a time (FUZZ_JOBS)"
started=$SECONDS
running=0
for target in $targets; do
    # A fresh directory for the target's report, its log and what its run adds.
    rm -rf "${work:?}/$target"
    mkdir -p "$work/$target"
    if [ "$running" -ge "$jobs_max" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_target "$target" &
    running=$((running + 1))
done
wait
# The reports in the targets' order, whichever finished first.
failed=()
for target in $targets; do
    if [ ! -e "$work/$target/report" ]; then
        echo "fuzz: $target stopped before its run (see the errors above)"
        failed+=("$target")
        continue
    fi
    cat "$work/$target/report"
    if [ -e "$work/$target/failed" ]; then failed+=("$target"); fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FINDINGS in ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: every target ran its inputs without a finding ($((SECONDS - started))s, seed $seed)"
