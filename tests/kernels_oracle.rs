//! Every native kernel (op × dtype × instruction set) through the oracle's battery: the
//! judge must pass it, every element must be correctly rounded or faithful (never merely
//! within the tolerance bound), and the correctly rounded share must meet the targets
//! (f32 ≥ 99.9%, f16/bf16 ≥ 99.99%). NORMORACLE_LONG=1 runs a larger battery.

use normoracle::adapters::native::Native;
use normoracle::adapters::Kernel;
use normoracle::cases::BatteryConfig;
use normoracle::dtype::Dtype;
use normoracle::judge;
use normoracle::kernels::Isa;
use normoracle::problem::Op;

fn random_cases() -> usize {
    if std::env::var_os("NORMORACLE_LONG").is_some() {
        2000
    } else {
        20
    }
}

fn judge_native(kernel: &Native, dtype: Dtype, min_percent_correctly_rounded: f64) {
    for op in Op::ALL {
        let mut config = BatteryConfig::new(op, dtype, 0x0c0ffee);
        config.random_cases = random_cases();
        let report = judge::run_battery(kernel, &config, None, false).unwrap();
        let t = &report.tally;
        eprintln!(
            "{} {op} {dtype}: {} judged, {:.5}% correctly rounded, {:.5}% faithful, max ULP {}",
            kernel.name(),
            t.judged,
            t.percent_correctly_rounded(),
            t.percent_faithful(),
            t.max_ulp
        );
        assert!(report.passed(), "{}", judge::report::text(&report));
        assert!(t.judged > 10_000, "{} elements", t.judged);
        assert_eq!(t.within_bound, 0, "{}", judge::report::text(&report));
        assert!(t.max_ulp <= 1, "{}", judge::report::text(&report));
        assert!(
            t.percent_correctly_rounded() >= min_percent_correctly_rounded,
            "{}",
            judge::report::text(&report)
        );
    }
}

fn every_path(dtype: Dtype, min_percent_correctly_rounded: f64) {
    judge_native(&Native::default(), dtype, min_percent_correctly_rounded);
    for isa in Isa::available() {
        if isa != Isa::detect() {
            judge_native(&Native::on(isa), dtype, min_percent_correctly_rounded);
        }
    }
}

#[test]
fn native_f32_passes_the_oracle() {
    every_path(Dtype::F32, 99.9);
}

#[test]
fn native_f16_passes_the_oracle() {
    every_path(Dtype::F16, 99.99);
}

#[test]
fn native_bf16_passes_the_oracle() {
    every_path(Dtype::BF16, 99.99);
}

/// The same through the CLI: `normoracle fuzz --builtin native` exits 0 with a PASS line.
#[test]
fn fuzz_builtin_native_passes() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_normoracle"))
        .args([
            "fuzz",
            "--builtin",
            "native",
            "--op",
            "rms_norm",
            "--dtype",
            "bf16",
        ])
        .args(["--seed", "5", "--cases", "10"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("PASS: native"), "{stdout}");
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_normoracle"))
        .args([
            "fuzz",
            "--builtin",
            "native-nonesuch",
            "--op",
            "rms_norm",
            "--dtype",
            "f32",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
