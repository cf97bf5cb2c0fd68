//! The fuzz targets' assertions under `cargo test`: every target's seed corpus (from the
//! battery) and every minimized finding replayed through the same decoding and checks as
//! `fuzz/fuzz_targets/*` (`normoracle_cli::fuzzing`). The CLI target's inputs run through the
//! binary itself.

use normoracle_cli::fuzzing::{self, input, sandbox, seeds, Target};
use std::process::Command;

fn assert_passes(target: &Target, bytes: &[u8]) {
    if let Err(finding) = fuzzing::check(target, bytes) {
        panic!("{}: {finding}", target.name());
    }
}

#[test]
fn every_library_target_passes_its_seed_corpus() {
    for target in Target::library_checked() {
        let seeds = target.seeds();
        assert!(
            (10..=60).contains(&seeds.len()),
            "{}: {} seeds",
            target.name(),
            seeds.len()
        );
        for seed in &seeds {
            assert_passes(&target, seed);
        }
    }
}

/// The checks can fail: a kernel that is off by one ULP where the reference is exact, and a
/// judge input whose outputs are all NaN, are findings.
#[test]
fn the_checks_detect_what_they_look_for() {
    use normoracle::adapters::closure::SliceKernel;
    use normoracle::problem::{EpsConvention, Op};
    // The first layer-norm seed of some width whose rows are all defined.
    let (problem, reference) = seeds::kernel(normoracle::Dtype::F32)
        .iter()
        .map(|seed| input::decode_problem(seed, Some(normoracle::Dtype::F32), false).0)
        .filter(|p| p.op == Op::LayerNorm && p.d >= 8)
        .map(|p| {
            let r = normoracle::exact::reference(&p).unwrap();
            (p, r)
        })
        .find(|(_, r)| r.undefined_rows().is_empty())
        .expect("a defined layer-norm seed");
    let off_by_far = SliceKernel::<f32, _>::new(
        "off",
        Op::LayerNorm,
        problem.convention,
        |_x: &[f32], _g: Option<&[f32]>, _b: Option<&[f32]>, y: &mut [f32], _d, _eps| {
            y.fill(0.5);
            Ok(())
        },
    );
    assert!(reference.y.iter().any(|&b| f32::from_bits(b as u32) != 0.5));
    assert!(fuzzing::checks::kernel_passes(&off_by_far, &problem).is_err());
    let refusing = SliceKernel::<f32, _>::new(
        "refusing",
        Op::LayerNorm,
        EpsConvention::Inside,
        |_x: &[f32], _g: Option<&[f32]>, _b: Option<&[f32]>, _y: &mut [f32], _d, _eps| {
            Err("no".to_string())
        },
    );
    let inside = normoracle::problem::Problem {
        convention: EpsConvention::Inside,
        ..problem.clone()
    };
    assert!(fuzzing::checks::kernel_passes(&refusing, &inside).is_err());
    // The judge's books: NaN outputs must fail on defined rows; the check holds when they do.
    let mut bytes = input::encode_problem(&problem).unwrap();
    bytes.push(0);
    bytes.extend(input::encode_values(
        problem.dtype,
        &vec![normoracle::Dtype::F32.nan_bits(); problem.x.len()],
    ));
    assert_passes(&Target::Judge, &bytes);
}

/// Minimized inputs of findings (`cargo fuzz tmin`), replayed: each was a crash or a failed
/// property before its fix.
#[test]
fn minimized_findings_stay_fixed() {
    for (target, bytes) in REGRESSIONS {
        let target = Target::from_name(target).unwrap();
        assert_passes(&target, bytes);
    }
}

/// Findings kept as the fuzzer saved them, one directory a target (tests/fuzz_findings/README.md).
#[test]
fn saved_findings_stay_fixed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_findings");
    let mut replayed = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let target = Target::from_name(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
        for file in std::fs::read_dir(&dir).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            assert_passes(&target, &bytes);
            replayed += 1;
        }
    }
    assert!(replayed >= 3, "only {replayed} saved findings replayed");
}

/// (target, minimized input).
const REGRESSIONS: &[(&str, &[u8])] = &[
    // reference-f64 lost γ·(x−μ)/s to underflow on f64 rows spanning 10^340 with γ ≈ −7·10^215:
    // rms_norm, x = [1e300, 1e-40] (the scaled copy of 1e-40 underflows to 0, output 0 for
    // ≈ −1e-124) and x = [1e300, 1e-20] (the quotient is subnormal, 4 digits survive).
    (
        "kernel_reference_f64_f64",
        &[
            53, 1, 0, 3, 156, 117, 0, 136, 60, 228, 55, 126, 156, 87, 119, 39, 38, 108, 161, 55, 0,
            0, 0, 0, 0, 0, 240, 63, 215, 174, 241, 70, 163, 62, 192, 236,
        ],
    ),
    (
        "kernel_reference_f64_f64",
        &[
            53, 1, 0, 3, 156, 117, 0, 136, 60, 228, 55, 126, 35, 66, 146, 12, 161, 156, 199, 59, 0,
            0, 0, 0, 0, 0, 240, 63, 215, 174, 241, 70, 163, 62, 192, 236,
        ],
    ),
    // The reference gave a wrong correctly rounded value: rms_norm f64, ε = 0,
    // x = [1e100, 1e-300], γ = [1, 1e200], β = [0, 1e-190]. The fast path's δ·(1/s)
    // underflowed to exactly 0, which `Element::approximate` let through (it rejected only
    // nonzero tiny products): t ≈ β with a bound of ~1e-290 while t = 1e-190 + 1.41e-200.
    // The reference said 1e-190, the slow path 1.0000000001414214e-190.
    (
        "reference",
        &[
            61, 1, 0, 0, 125, 195, 148, 37, 173, 73, 178, 84, 89, 243, 248, 194, 31, 110, 165, 1,
            0, 0, 0, 0, 0, 0, 240, 63, 90, 98, 215, 215, 24, 231, 116, 105, 0, 0, 0, 0, 0, 0, 0, 0,
            254, 110, 78, 173, 231, 131, 124, 24,
        ],
    ),
    // The reference hung: layer_norm f32, ε outside, ε = 0x00020000, x = [0x6d6d218d,
    // 0x6d6d6d6d], γ = β = 0x6d6d6d6d. t = γ·ε/(σ+ε) ≈ 2.9e-37 cancels to 0 in the fast path
    // (bound ≈ 93), and the exact rounding walked from the candidate 0 to t one value at a
    // time (~4·10^7 exact comparisons; in f64 such walks are ~10^18 steps). The same bytes
    // for both targets (the flags say f32).
    ("kernel_reference_f64_f32", HANG_F32),
    ("reference", HANG_F32),
    // reference-f64 again, a subnormal output: rms_norm f64, ε = 1e-6 outside,
    // x = [5e305, 0x0000000080000000 (1.06e-314)], γ = [1, −2.9e305]: the earlier 2^1000 lift of
    // x/s still left it subnormal (12004 ULP off); now every factor is normalized first.
    (
        "kernel_reference_f64_f64",
        &[
            55, 1, 0, 2, 41, 144, 35, 202, 229, 200, 102, 127, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 240, 63, 27, 34, 164, 70, 41, 110, 90, 255,
        ],
    ),
    // The slow path (the reference's cross-check) missed exact ties that MPFR only
    // approximates: layer_norm f16, ε = 0 outside, x = [0x0a00, 0 × 16], γ = 0x04ae: every
    // zero element is −γ/4 = 299.5 subnormal quanta, which rounds to even (300); the slow
    // path's √ of 16x²/289 landed beside the midpoint and it rounded to 299.
    (
        "reference",
        &[
            6, 16, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4,
            174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4, 174, 4,
        ],
    ),
    // The gallop of the reference's exact rounding (added for the hang above) overflowed
    // its step on an f64 element whose candidate was near ±max (found by the judge target).
    (
        "judge",
        &[
            61, 0, 3, 0, 190, 32, 255, 93, 0, 190, 32, 255, 0, 254, 21, 5, 93, 114, 190, 32, 255,
            93, 114, 21, 5, 147, 0, 0, 254, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203,
            203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203,
            203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203,
            203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 203, 21, 5, 147, 0, 0, 254, 0,
            254, 0, 114, 190, 32, 255, 93, 114, 21, 5, 147, 0, 0, 254, 21, 5, 147, 0, 0, 254, 0,
            254, 0, 254, 0, 254,
        ],
    ),
    // The judge's bound underflowed to 0: layer_norm f64, ε = 0 outside, a row at 65504 with
    // spread 2^-7 (κ ≈ 3.6e7) and subnormal γ ≈ 1e-314: |γ|·2(L+9)·u underflowed before κ
    // brought it back, so reference-f64's 3-ULP subnormal outputs failed against a bound of 0.
    (
        "kernel_reference_f64_f64",
        &[
            62, 16, 0, 0, 0, 0, 0, 128, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0,
            0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0,
            0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0,
            0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0,
            0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0,
            0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 0, 0, 0, 252, 239, 64, 0, 0, 208,
            191, 0, 0, 0, 0, 0, 0, 224, 191, 0, 0, 0, 0, 0, 0, 208, 191, 0, 0, 0, 0, 0, 0, 232,
            191, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 224, 191, 0, 0, 0, 0, 0, 0, 224, 191, 0,
            0, 0, 0, 0, 0, 232, 191, 0, 0, 0, 0, 0, 0, 208, 191, 0, 0, 0, 0, 0, 0, 240, 191, 0, 0,
            0, 0, 0, 0, 240, 191, 0, 0, 0, 0, 0, 0, 240, 191, 0, 0, 0, 0, 0, 0, 224, 191, 0, 0, 0,
            0, 0, 0, 224, 191, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 232, 191, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 191, 0, 0, 0, 0, 0, 165, 141, 77, 189, 250, 177, 191,
            50, 6, 173, 227, 253, 189, 171, 191, 211, 86, 105, 63, 169, 43, 29, 193, 191, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    ),
    // reference-f64: γ·(x−μ)/s past the f64 range with β bringing the sum back
    // (layer_norm f64, μ ≈ 9.4e307): −∞ where −1.52e308 was expected.
    (
        "kernel_reference_f64_f64",
        &[
            60, 7, 0, 5, 140, 143, 182, 157, 51, 160, 230, 127, 65, 126, 218, 168, 70, 42, 227,
            127, 209, 150, 148, 205, 61, 28, 229, 127, 122, 85, 57, 239, 141, 189, 224, 127, 159,
            253, 52, 36, 183, 83, 34, 140, 54, 1, 47, 22, 199, 55, 236, 127, 248, 226, 247, 41, 72,
            24, 234, 127, 79, 96, 125, 182, 93, 105, 231, 238, 122, 85, 57, 239, 141, 189, 224,
            127, 159, 253, 52, 36, 183, 83, 236, 134, 30, 239, 56, 126, 240, 100, 14, 127, 248,
            226, 247, 41, 72, 24, 234, 127, 79, 96, 125, 182, 105, 231, 238, 127, 56, 9, 68, 179,
            123, 14, 227, 127, 187, 145, 134, 171, 118, 137, 232, 127, 245, 212, 6, 253, 79, 140,
            23, 239, 50, 127, 155, 56, 147, 28, 238, 127, 229, 23, 54, 1, 222, 30, 237, 127, 137,
            182, 255, 21, 96, 2, 224, 127, 3, 95, 189, 30, 214, 100, 224, 127, 196, 8, 21, 166, 61,
            100, 231, 127, 116, 162, 51, 23, 38, 141, 48, 6, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0,
        ],
    ),
    // The reference's fast-path bound lost its main term: |γ|·(1/s) underflowed
    // (γ ≈ −8.7e-246, 1/s ≈ 3.6e-139) before (|δ|+|μ|) ≈ 2.7e154 brought it back, so a 1-ULP
    // wrong double-double candidate passed as correctly rounded (layer_norm f64, ε = 0.1,
    // x = [0xe000000000000040, 0xe00000000000003f × 2]: −6.15503732281421e-246 for
    // −6.155037322814211e-246).
    (
        "reference",
        &[
            60, 2, 0, 4, 64, 0, 0, 0, 0, 0, 0, 224, 63, 0, 0, 0, 0, 0, 0, 224, 63, 0, 0, 0, 0, 0,
            0, 224, 63, 6, 96, 202, 255, 255, 255, 112, 181, 235, 230, 63, 176, 14, 121, 156, 33,
            88, 235, 63, 67, 110, 14, 141, 244, 229, 233, 63, 165, 85, 223, 170, 99, 104, 190, 63,
            11, 55, 249, 196, 142, 222, 130, 191, 207, 156, 93, 8,
        ],
    ),
    // The judge failed a finite output whose exact value lies past f64::MAX: layer_norm f64,
    // ε = 0.1, x = [0xefffffffffffff7f × 8 with one 0xefffffffffffff7e] (≈ −3.1e231, spread
    // one ulp: κ ≈ 5.7e16), γ = f64::MAX. reference-f64's mean is an ulp off, so it gave 0
    // where the exact value is ≈ 2.83·MAX (correctly rounded: +∞), well within its bound
    // (0.001 of it used); the judge had compared with the f64 value ∞ and failed it whatever
    // the bound. The exact value past MAX is now taken from MPFR as a `Wide` (found by CI's
    // bounded fuzz run; its failing row, re-encoded alone).
    (
        "kernel_reference_f64_f64",
        &[
            52, 8, 0, 4, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255,
            239, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255, 239,
            126, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255, 239, 127,
            255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255,
            255, 255, 255, 255, 255, 239, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255,
            255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255,
            255, 255, 239, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255,
            255, 239, 127, 255, 255, 255, 255, 255, 255, 239, 127, 255, 255, 255, 255, 255, 255,
            239, 127, 255, 255, 255, 255, 255, 255, 239, 127,
        ],
    ),
];

const HANG_F32: &[u8] = &[
    110, 1, 0, 0, 0, 2, 0, 141, 33, 109, 109, 109, 109, 109, 109, 109, 109, 109, 109, 109, 109,
    109, 109, 109, 109, 109, 109, 109, 109, 109, 109,
];

/// The CLI seeds through the binary, in a fresh sandbox: every exit is 0, 1 or 2 with a
/// one-line error, never a panic.
#[test]
fn cli_seeds_exit_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    sandbox::write(dir.path()).unwrap();
    let mut exits = std::collections::BTreeSet::new();
    for args in seeds::cli_argvs() {
        let out = Command::new(env!("CARGO_BIN_EXE_normoracle"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)) && !stderr.contains("panicked"),
            "{args:?}: exit {code:?}\n{stderr}"
        );
        if code == Some(2) && !args.iter().any(|a| a.starts_with("--help")) {
            let last = stderr.trim_end().lines().last().unwrap_or("");
            assert!(!last.is_empty(), "{args:?}: exit 2 without a message");
        }
        exits.insert(code);
    }
    // The seeds reach every exit: pass, a failing verdict, and an error.
    assert_eq!(exits.len(), 3, "{exits:?}");
}
