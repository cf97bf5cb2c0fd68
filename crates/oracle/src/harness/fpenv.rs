//! The floating-point environment a kernel runs in, and what a kernel may not change in it.
//!
//! A kernel that leaves flush-to-zero, denormals-are-zero, a directed rounding mode or unmasked
//! exceptions behind breaks every caller in a real program: the rest of that program then
//! computes in another arithmetic. A library built with `-Ofast`/`-ffast-math` does it when it is
//! loaded (its startup code sets FTZ/DAZ). The harness reads the control state before and after
//! loading a library and around each call, and reports any change as a finding.
//!
//! Only *control* bits are compared: the sticky status flags (inexact, overflow, …) change
//! whenever anything computes, and say nothing about the arithmetic that follows.
//!
//! - x86-64: MXCSR's bits 6-15 (DAZ, the exception masks, rounding control, FTZ) and the x87
//!   control word (exception masks, precision and rounding control), packed as
//!   `mxcsr | x87 << 32`.
//! - AArch64: FPCR (rounding mode, FZ, FZ16, DN, trap enables).
//! - Elsewhere: nothing is read (always 0), and no change can be seen.

use std::fmt;

/// A snapshot of the control state (see the module docs for the packing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FpControl(pub u64);

#[cfg(target_arch = "x86_64")]
mod arch {
    /// MXCSR's control bits: DAZ (6), exception masks (7-12), rounding (13-14), FTZ (15).
    pub const MXCSR_CONTROL: u64 = 0xffc0;
    /// The x87 control word's defined bits: masks (0-5), precision (8-9), rounding (10-11).
    pub const X87_CONTROL: u64 = 0x0f3f;

    pub fn read() -> u64 {
        let mut mxcsr: u32 = 0;
        let mut x87: u16 = 0;
        // SAFETY: stmxcsr and fnstcw store 4 and 2 bytes to the given, valid addresses.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr, options(nostack, preserves_flags));
            std::arch::asm!("fnstcw [{}]", in(reg) &mut x87, options(nostack, preserves_flags));
        }
        (u64::from(mxcsr) & MXCSR_CONTROL) | ((u64::from(x87) & X87_CONTROL) << 32)
    }

    pub fn write(state: u64) {
        // Keep the current status flags; set the control bits.
        let mut mxcsr: u32 = 0;
        // SAFETY: as in `read`; ldmxcsr and fldcw load the values just built, whose
        // reserved bits are the ones read.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr, options(nostack, preserves_flags));
            let mxcsr = (mxcsr & !(MXCSR_CONTROL as u32)) | (state & MXCSR_CONTROL) as u32;
            std::arch::asm!("ldmxcsr [{}]", in(reg) &mxcsr, options(nostack, preserves_flags));
            let mut x87: u16 = 0;
            std::arch::asm!("fnstcw [{}]", in(reg) &mut x87, options(nostack, preserves_flags));
            let x87 = (x87 & !(X87_CONTROL as u16)) | ((state >> 32) & X87_CONTROL) as u16;
            std::arch::asm!("fldcw [{}]", in(reg) &x87, options(nostack, preserves_flags));
        }
    }

    pub fn describe(before: u64, after: u64, out: &mut Vec<String>) {
        let (m0, m1) = (before & 0xffff, after & 0xffff);
        let bit = |v: u64, b: u32| v >> b & 1 == 1;
        for (b, name) in [(15, "flush-to-zero (FTZ)"), (6, "denormals-are-zero (DAZ)")] {
            if bit(m0, b) != bit(m1, b) {
                let state = if bit(m1, b) { "on" } else { "off" };
                out.push(format!("{name} turned {state}"));
            }
        }
        let rounding = |v: u64| match v >> 13 & 3 {
            0 => "to nearest",
            1 => "toward −∞",
            2 => "toward +∞",
            _ => "toward zero",
        };
        if m0 >> 13 & 3 != m1 >> 13 & 3 {
            out.push(format!(
                "SSE rounding changed from {} to {}",
                rounding(m0),
                rounding(m1)
            ));
        }
        const EXCEPTIONS: [&str; 6] = [
            "invalid",
            "denormal",
            "divide-by-zero",
            "overflow",
            "underflow",
            "inexact",
        ];
        let unmasked: Vec<&str> = (0..6)
            .filter(|&k| bit(m0, 7 + k) && !bit(m1, 7 + k))
            .map(|k| EXCEPTIONS[k as usize])
            .collect();
        if !unmasked.is_empty() {
            out.push(format!("SSE exceptions unmasked: {}", unmasked.join(", ")));
        }
        let (x0, x1) = (before >> 32, after >> 32);
        if x0 != x1 {
            let precision = |v: u64| match v >> 8 & 3 {
                0 => "single",
                2 => "double",
                3 => "extended",
                _ => "reserved",
            };
            out.push(format!(
                "x87 control word changed from {x0:#06x} to {x1:#06x} (precision {} → {}, rounding {} → {})",
                precision(x0),
                precision(x1),
                rounding(x0 >> 10 << 13),
                rounding(x1 >> 10 << 13)
            ));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub fn read() -> u64 {
        let fpcr: u64;
        // SAFETY: reading FPCR has no side effect.
        unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack)) };
        fpcr
    }

    pub fn write(state: u64) {
        // SAFETY: writes back a value read from FPCR (or a snapshot of it).
        unsafe { std::arch::asm!("msr fpcr, {}", in(reg) state, options(nomem, nostack)) };
    }

    pub fn describe(before: u64, after: u64, out: &mut Vec<String>) {
        let bit = |v: u64, b: u32| v >> b & 1 == 1;
        for (b, name) in [
            (24, "flush-to-zero (FZ)"),
            (19, "half-precision flush-to-zero (FZ16)"),
            (25, "default NaN (DN)"),
        ] {
            if bit(before, b) != bit(after, b) {
                let state = if bit(after, b) { "on" } else { "off" };
                out.push(format!("{name} turned {state}"));
            }
        }
        if before >> 22 & 3 != after >> 22 & 3 {
            out.push(format!(
                "rounding mode changed from {} to {}",
                before >> 22 & 3,
                after >> 22 & 3
            ));
        }
        if before & 0x9f00 != after & 0x9f00 {
            out.push("trap enables changed".into());
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub fn read() -> u64 {
        0
    }
    pub fn write(_: u64) {}
    pub fn describe(_: u64, _: u64, _: &mut Vec<String>) {}
}

impl FpControl {
    /// The calling thread's control state now.
    pub fn read() -> Self {
        FpControl(arch::read())
    }

    /// Makes this the calling thread's control state (status flags are kept).
    pub fn restore(self) {
        arch::write(self.0)
    }

    /// What changed from `self` to `after`, in words (empty when nothing did).
    pub fn changes_to(self, after: FpControl) -> Vec<String> {
        let mut out = Vec::new();
        if self != after {
            arch::describe(self.0, after.0, &mut out);
            if out.is_empty() {
                out.push(format!(
                    "control state changed from {:#x} to {:#x}",
                    self.0, after.0
                ));
            }
        }
        out
    }
}

impl fmt::Display for FpControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setting FTZ/DAZ and round-toward-zero is seen, described, and undone by `restore`;
    /// the status flags raised by arithmetic are not a change.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_changed_mxcsr_is_seen_described_and_restored() {
        let clean = FpControl::read();
        // Raise inexact and overflow: status, not control.
        let big = std::hint::black_box(f64::MAX);
        std::hint::black_box(big * 2.0 + 1.0 / 3.0);
        assert_eq!(FpControl::read(), clean);
        let ftz_daz_rtz = FpControl(clean.0 | 0x8040 | 0x6000);
        ftz_daz_rtz.restore();
        let seen = FpControl::read();
        clean.restore();
        assert_eq!(seen, ftz_daz_rtz);
        assert_eq!(FpControl::read(), clean);
        let words = clean.changes_to(seen);
        assert_eq!(words.len(), 3, "{words:?}");
        assert!(words[0].contains("flush-to-zero (FTZ) turned on"));
        assert!(words[1].contains("denormals-are-zero (DAZ) turned on"));
        assert!(words[2].contains("to nearest to toward zero"));
        // Subnormals are flushed under the state read back, and not after the restore.
        assert!(clean.changes_to(clean).is_empty());
        let unmask = FpControl(clean.0 & !(1 << 9));
        assert_eq!(
            clean.changes_to(unmask),
            vec!["SSE exceptions unmasked: divide-by-zero".to_string()]
        );
        let x87 = FpControl(clean.0 ^ (3 << 40));
        assert!(clean.changes_to(x87)[0].starts_with("x87 control word changed"));
    }
}
