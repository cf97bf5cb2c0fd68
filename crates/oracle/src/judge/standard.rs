//! The standard a kernel is held to (`--require`): the model's bound by default, or a stricter
//! one a kernel author asks for, as libm-test keeps per-function ULP allowances.

use super::{Report, Tally};
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// What every judged element must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Standard {
    /// Correctly rounded: for kernels that claim the last bit (our native kernels do).
    Exact,
    /// Within one ULP, on the exact value's side: for kernels computing in a wider format and
    /// rounding once.
    Faithful,
    /// Within N ULPs of the correctly rounded value: an allowance per kernel, libm-style.
    Ulp(u64),
    /// Within the careful-kernel model's bound B_i (`tolerance`): what any careful kernel of
    /// the dtype meets, whatever its summation order.
    #[default]
    Bound,
}

impl Standard {
    /// Whether the report meets this standard (a kernel that refused a problem, was caught
    /// misbehaving by the harness or left cases unrun never does).
    pub fn met_by(self, r: &Report) -> bool {
        let t = &r.tally;
        if !r.kernel_errors.is_empty() || !r.findings.is_empty() || r.not_run > 0 {
            return false;
        }
        self.met_by_tally(t)
    }

    /// Whether every element of a tally meets this standard (a case's, a family's).
    pub fn met_by_tally(self, t: &Tally) -> bool {
        match self {
            Standard::Exact => t.exact == t.judged,
            Standard::Faithful => t.exact + t.faithful == t.judged,
            Standard::Ulp(n) => t.unmeasured_failures == 0 && t.max_ulp <= n,
            Standard::Bound => t.failed == 0,
        }
    }
}

impl serde::Serialize for Standard {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Standard::Exact => write!(f, "exact"),
            Standard::Faithful => write!(f, "faithful"),
            Standard::Ulp(n) => write!(f, "ulp:{n}"),
            Standard::Bound => write!(f, "bound"),
        }
    }
}

impl FromStr for Standard {
    type Err = Error;

    fn from_str(text: &str) -> Result<Standard> {
        match text {
            "exact" => Ok(Standard::Exact),
            "faithful" => Ok(Standard::Faithful),
            "bound" => Ok(Standard::Bound),
            _ => text
                .strip_prefix("ulp:")
                .and_then(|n| n.parse().ok())
                .map(Standard::Ulp)
                .ok_or_else(|| {
                    Error::usage(format!(
                        "--require '{text}': expected exact, faithful, ulp:N or bound"
                    ))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{EpsConvention, Op};
    use crate::Dtype;

    #[test]
    fn standards_parse_print_and_judge_a_tally() {
        for text in ["exact", "faithful", "ulp:0", "ulp:17", "bound"] {
            assert_eq!(text.parse::<Standard>().unwrap().to_string(), text);
        }
        for bad in ["", "ulp:", "ulp:-1", "Exact", "bounds"] {
            assert!(bad.parse::<Standard>().is_err(), "{bad}");
        }
        let mut r = Report::new("k", Op::LayerNorm, Dtype::F32, EpsConvention::Inside, None);
        r.tally.judged = 10;
        r.tally.exact = 7;
        r.tally.faithful = 2;
        r.tally.within_bound = 1;
        r.tally.max_ulp = 3;
        assert!(Standard::Bound.met_by(&r) && Standard::Ulp(3).met_by(&r));
        assert!(
            !Standard::Ulp(2).met_by(&r)
                && !Standard::Faithful.met_by(&r)
                && !Standard::Exact.met_by(&r)
        );
        r.tally.within_bound = 0;
        r.tally.faithful = 3;
        r.tally.max_ulp = 1;
        assert!(Standard::Faithful.met_by(&r) && !Standard::Exact.met_by(&r));
        r.tally.failed = 1;
        r.tally.unmeasured_failures = 1;
        r.tally.faithful = 2;
        assert!(!Standard::Bound.met_by(&r) && !Standard::Ulp(1000).met_by(&r));
        r.kernel_errors.push("case 0: refused".into());
        r.tally = Tally {
            judged: 1,
            exact: 1,
            ..Tally::default()
        };
        assert!(!Standard::Exact.met_by(&r));
    }
}
