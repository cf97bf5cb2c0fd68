//! Per-element tiers and their tallies.

use serde::Serialize;

/// How close an output is to the correctly rounded reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Equal to the correctly rounded value (±0 count as equal; NaN where NaN is expected).
    Exact,
    /// One of the two values bracketing the exact result (≤ 1 ULP, on the right side; never
    /// ±∞ for a finite correctly rounded value).
    Faithful,
    /// Within the tolerance formula's bound (`judge::tolerance`); ±∞ where a finite value is
    /// expected only where the bound reaches the overflow threshold.
    WithinBound,
    /// Outside the bound (±∞ included), or NaN where a finite value is expected, or finite
    /// where NaN is.
    Fail,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Faithful => "faithful",
            Tier::WithinBound => "within-bound",
            Tier::Fail => "FAIL",
        }
    }
}

/// How badly a failing element missed (`judge::severity`): the classes a report counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Beyond B_i but within `OFF_MODEL_ULPS` ULPs more: what a kernel outside the model by
    /// one rounding makes (double rounding, one intermediate in a 16-bit format).
    OffModel,
    /// Further off, yet finite, of the right sign and within the element's output scale.
    Inaccurate,
    /// NaN or ±∞ where a finite value is exact, a finite value where NaN is required, the
    /// wrong sign (both values beyond the tolerance of 0), or an error beyond the element's
    /// output scale |γ_i| + |β_i|.
    Wrong,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::OffModel, Severity::Inaccurate, Severity::Wrong];

    pub fn name(self) -> &'static str {
        match self {
            Severity::OffModel => "off-model",
            Severity::Inaccurate => "inaccurate",
            Severity::Wrong => "wrong",
        }
    }
}

/// ULPs beyond B_i that are still *off-model* rather than *inaccurate*: double rounding costs
/// half an ULP, one intermediate rounded to the output's 16-bit format about one, a few such
/// steps a few; an error past B_i + 4 ULPs is no longer one misplaced rounding.
pub const OFF_MODEL_ULPS: f64 = 4.0;

/// Counts of tiers and the worst errors seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Elements judged (undefined ones excluded).
    pub judged: u64,
    pub exact: u64,
    pub faithful: u64,
    pub within_bound: u64,
    pub failed: u64,
    /// The failed elements by severity (they sum to `failed`).
    pub off_model: u64,
    pub inaccurate: u64,
    pub wrong: u64,
    /// Failed elements without a ULP distance (NaN or a non-finite mismatch): what no ULP
    /// allowance admits.
    pub unmeasured_failures: u64,
    /// Elements of undefined rows (σ²+ε = 0): not judged.
    pub undefined: u64,
    /// Largest ULP distance to the correctly rounded value among finite-vs-finite elements.
    pub max_ulp: u64,
    /// Largest relative error |o − y|/|y| (∞ for a nonzero output where y = 0; 0 for an
    /// output that is the correctly rounded ±∞, which has no finite error to measure).
    pub max_rel_err: f64,
    /// Largest per-row normalized mean squared error Σ(o−y)²/Σy² (a correctly rounded ±∞
    /// adds no error).
    pub max_row_nmse: f64,
    /// Largest fraction of the tolerance used, |o − y|/(B + ulp), over elements judged against
    /// the bound (how close a passing kernel came to failing; > 1 means FAIL).
    pub max_bound_use: f64,
    /// The worst error in units of the tolerance, |o − y|/(B + ulp), over every element judged
    /// against the bound, failures included (∞ for a NaN or non-finite mismatch): how far
    /// beyond the model a failing kernel went, where ULPs near an exact zero mislead.
    pub max_bound_units: f64,
    /// The worst error in units of the element's output scale, |o − y|/(|γ_i| + |β_i|) (∞ for
    /// a NaN or non-finite mismatch): 1 or more is an output as far off as the output itself.
    pub max_scale_units: f64,
}

impl Tally {
    pub fn add(&mut self, tier: Tier) {
        self.judged += 1;
        match tier {
            Tier::Exact => self.exact += 1,
            Tier::Faithful => self.faithful += 1,
            Tier::WithinBound => self.within_bound += 1,
            Tier::Fail => self.failed += 1,
        }
    }

    /// Counts a failed element's severity (after `add(Tier::Fail)`).
    pub fn add_severity(&mut self, severity: Severity) {
        match severity {
            Severity::OffModel => self.off_model += 1,
            Severity::Inaccurate => self.inaccurate += 1,
            Severity::Wrong => self.wrong += 1,
        }
    }

    /// The worst severity counted, if any element failed.
    pub fn worst_severity(&self) -> Option<Severity> {
        [
            (Severity::Wrong, self.wrong),
            (Severity::Inaccurate, self.inaccurate),
            (Severity::OffModel, self.off_model),
        ]
        .into_iter()
        .find(|&(_, n)| n > 0)
        .map(|(s, _)| s)
    }

    /// "a off-model, b inaccurate, c wrong".
    pub fn severities(&self) -> String {
        format!(
            "{} off-model, {} inaccurate, {} wrong",
            self.off_model, self.inaccurate, self.wrong
        )
    }

    pub fn merge(&mut self, other: &Tally) {
        self.judged += other.judged;
        self.exact += other.exact;
        self.faithful += other.faithful;
        self.within_bound += other.within_bound;
        self.failed += other.failed;
        self.off_model += other.off_model;
        self.inaccurate += other.inaccurate;
        self.wrong += other.wrong;
        self.unmeasured_failures += other.unmeasured_failures;
        self.undefined += other.undefined;
        self.max_ulp = self.max_ulp.max(other.max_ulp);
        self.max_rel_err = max_nan_aware(self.max_rel_err, other.max_rel_err);
        self.max_row_nmse = max_nan_aware(self.max_row_nmse, other.max_row_nmse);
        self.max_bound_use = max_nan_aware(self.max_bound_use, other.max_bound_use);
        self.max_bound_units = max_nan_aware(self.max_bound_units, other.max_bound_units);
        self.max_scale_units = max_nan_aware(self.max_scale_units, other.max_scale_units);
    }

    /// The largest ULP distance as text, "NaN/∞" where a failure has none (a NaN or
    /// non-finite output where a finite one is exact): never "0" for a failing tally.
    pub fn max_ulp_text(&self) -> String {
        if self.unmeasured_failures > 0 {
            "NaN/∞".into()
        } else {
            self.max_ulp.to_string()
        }
    }

    /// Percentage of judged elements that are correctly rounded.
    pub fn percent_correctly_rounded(&self) -> f64 {
        percent(self.exact, self.judged)
    }

    /// Percentage of judged elements that are faithful (exact included).
    pub fn percent_faithful(&self) -> f64 {
        percent(self.exact + self.faithful, self.judged)
    }
}

fn percent(n: u64, of: u64) -> f64 {
    if of == 0 {
        100.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// max that lets NaN win (a NaN error is the worst error).
pub fn max_nan_aware(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}
