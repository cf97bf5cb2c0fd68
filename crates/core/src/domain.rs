//! The domain a kernel is documented for (`--domain`), as libm-test restricts each function's
//! inputs: the verdict and exit code are decided on the rows inside it; the rows outside are
//! still judged and reported, apart, as information. The default is every row.
//!
//! A domain is written as comma-separated clauses, each optional:
//! `eps=LO..HI` (ε, compared as the f32 nearest to each end, as `--eps` reads ε),
//! `absx=LO..HI` (every |x| of the row ≤ HI, and the row's largest |x| ≥ LO: a kernel
//! that underflows on tiny rows declares LO), `d=LO..HI` (the row width) and `finite`
//! (every x finite). Either end of a range may be left out: `eps=1e-6..` is ε ≥ 1e-6.
//! Example: `--domain eps=1e-6..,absx=..1e4,finite`.

use crate::error::{Error, Result};
use crate::problem::Problem;
use std::fmt;
use std::str::FromStr;

/// A closed interval of f64 whose ends may be absent (unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Interval {
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Interval {
    pub const ALL: Interval = Interval { lo: None, hi: None };

    /// Whether v lies in [lo, hi] (NaN lies in no bounded interval).
    pub fn contains(&self, v: f64) -> bool {
        self.lo.is_none_or(|lo| v >= lo) && self.hi.is_none_or(|hi| v <= hi)
    }

    pub fn is_all(&self) -> bool {
        self.lo.is_none() && self.hi.is_none()
    }

    /// `LO..HI`, either end optional; each end read by `end` (which may round it).
    pub fn parse_with(text: &str, what: &str, end: impl Fn(f64) -> f64) -> Result<Interval> {
        let bad = || {
            Error::usage(format!(
                "{what} range '{text}': expected LO..HI with LO ≤ HI (either end may be left out)"
            ))
        };
        let (lo, hi) = text.split_once("..").ok_or_else(bad)?;
        let read = |s: &str| -> Result<Option<f64>> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            match s.parse::<f64>() {
                Ok(v) if !v.is_nan() => Ok(Some(end(v))),
                _ => Err(bad()),
            }
        };
        let interval = Interval {
            lo: read(lo)?,
            hi: read(hi)?,
        };
        match (interval.lo, interval.hi) {
            (Some(lo), Some(hi)) if lo > hi => Err(bad()),
            _ => Ok(interval),
        }
    }

    /// An ε range: each end the f32 nearest to it, as `--eps` reads ε.
    pub fn parse_eps(text: &str) -> Result<Interval> {
        Interval::parse_with(text, "eps", |v| v as f32 as f64)
    }
}

impl Interval {
    /// `LO..HI` with each end written by `end`.
    fn write(&self, end: impl Fn(f64) -> String) -> String {
        let end = |v: Option<f64>| v.map_or(String::new(), &end);
        format!("{}..{}", end(self.lo), end(self.hi))
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.write(|v| format!("{v:e}")))
    }
}

/// Where a kernel is documented to work (see the module's docs). `Domain::default()` is
/// every row.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Domain {
    pub eps: Interval,
    pub abs_x: Interval,
    pub d: Interval,
    pub finite: bool,
}

/// The domain the accuracy table reads each kernel on beside the whole battery: what
/// frameworks commonly document (ε ≥ 1e-6, finite inputs of magnitude ≤ 10⁴).
pub const TYPICAL: &str = "eps=1e-6..,absx=..1e4,finite";

impl Domain {
    /// [`TYPICAL`].
    pub fn typical() -> Domain {
        TYPICAL.parse().expect("the typical domain parses")
    }

    /// Whether this is every row (no clause).
    pub fn is_everything(&self) -> bool {
        *self == Domain::default()
    }

    /// Whether the problem's ε and width lie inside (its rows may still not).
    fn admits_shape(&self, problem: &Problem) -> bool {
        self.eps.contains(problem.eps.value() as f64) && self.d.contains(problem.d as f64)
    }

    /// Whether row `r` of the problem lies inside.
    pub fn admits_row(&self, problem: &Problem, r: usize) -> bool {
        if !self.admits_shape(problem) {
            return false;
        }
        if !self.finite && self.abs_x.is_all() {
            return true;
        }
        let dtype = problem.dtype;
        let mut largest = 0.0f64;
        for &bits in problem.row(r) {
            let v = dtype.to_f64(bits);
            if self.finite && !v.is_finite() {
                return false;
            }
            if v.is_nan() {
                // |NaN| has no magnitude to compare with a bound.
                if !self.abs_x.is_all() {
                    return false;
                }
                continue;
            }
            if self.abs_x.hi.is_some_and(|hi| v.abs() > hi) {
                return false;
            }
            largest = largest.max(v.abs());
        }
        self.abs_x.lo.is_none_or(|lo| largest >= lo)
    }

    /// Whether any row of the problem lies inside: its kernel findings (a crash, a timeout)
    /// count in the verdict then, and are information otherwise.
    pub fn admits_any_row(&self, problem: &Problem) -> bool {
        self.is_everything() || (0..problem.rows).any(|r| self.admits_row(problem, r))
    }
}

impl FromStr for Domain {
    type Err = Error;

    fn from_str(text: &str) -> Result<Domain> {
        let mut domain = Domain::default();
        for clause in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            match clause.split_once('=') {
                None if clause == "finite" => domain.finite = true,
                Some(("eps", range)) => domain.eps = Interval::parse_eps(range)?,
                Some(("absx", range)) => {
                    domain.abs_x = Interval::parse_with(range, "absx", f64::abs)?
                }
                Some(("d", range)) => domain.d = Interval::parse_with(range, "d", f64::trunc)?,
                _ => {
                    return Err(Error::usage(format!(
                        "--domain clause '{clause}': expected eps=LO..HI, absx=LO..HI, d=LO..HI or finite"
                    )))
                }
            }
        }
        Ok(domain)
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut clauses = Vec::new();
        if !self.eps.is_all() {
            // ε's ends are f32s: their shortest f32 form reads back as the same f32.
            clauses.push(format!(
                "eps={}",
                self.eps.write(|v| format!("{:e}", v as f32))
            ));
        }
        if !self.abs_x.is_all() {
            clauses.push(format!("absx={}", self.abs_x));
        }
        if !self.d.is_all() {
            clauses.push(format!("d={}", self.d.write(|v| format!("{v}"))));
        }
        if self.finite {
            clauses.push("finite".into());
        }
        if clauses.is_empty() {
            write!(f, "all")
        } else {
            write!(f, "{}", clauses.join(","))
        }
    }
}

impl serde::Serialize for Domain {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::problem::{EpsConvention, Op};

    fn problem(eps: f32, rows: &[&[f64]]) -> Problem {
        let d = rows[0].len();
        let mut p = Problem::one_row(Op::RmsNorm, Dtype::F32, eps, rows[0], None, None);
        for row in &rows[1..] {
            p.x.extend(row.iter().map(|&v| Dtype::F32.round_f64(v)));
            p.rows += 1;
        }
        p.convention = EpsConvention::Inside;
        assert_eq!(p.d, d);
        p
    }

    #[test]
    fn domains_parse_print_and_round_trip() {
        let d: Domain = "eps=1e-6..,absx=..1e4,finite".parse().unwrap();
        assert_eq!(d.eps.lo, Some(1e-6f32 as f64));
        assert_eq!(d.abs_x.hi, Some(1e4));
        assert!(d.finite && d.d.is_all());
        assert_eq!(d.to_string().parse::<Domain>().unwrap(), d);
        assert_eq!(Domain::default().to_string(), "all");
        assert!("".parse::<Domain>().unwrap().is_everything());
        let d: Domain = "d=2..4096, eps=..1e-3".parse().unwrap();
        assert_eq!((d.d.lo, d.d.hi), (Some(2.0), Some(4096.0)));
        for bad in [
            "eps=1..0",
            "eps=1e-6",
            "absx=..x",
            "finite=1",
            "depth=1..2",
            "eps=NaN..",
        ] {
            assert!(bad.parse::<Domain>().is_err(), "{bad}");
        }
    }

    /// Each clause excludes exactly what it says, row by row.
    #[test]
    fn rows_are_admitted_by_every_clause() {
        let p = problem(
            1e-6,
            &[
                &[1.0, -2.0],
                &[1e5, 0.0],
                &[f64::INFINITY, 1.0],
                &[1e-40, 0.0],
            ],
        );
        let admitted = |text: &str| -> Vec<bool> {
            let d: Domain = text.parse().unwrap();
            (0..p.rows).map(|r| d.admits_row(&p, r)).collect()
        };
        assert_eq!(admitted(""), [true; 4]);
        assert_eq!(admitted("finite"), [true, true, false, true]);
        assert_eq!(admitted("absx=..1e4"), [true, false, false, true]);
        assert_eq!(admitted("absx=1e-30.."), [true, true, true, false]);
        // ε = f32(1e-6) lies in eps=1e-6.. (the end is read as the same f32), not in 1e-5..
        assert_eq!(admitted("eps=1e-6.."), [true; 4]);
        assert_eq!(admitted("eps=1e-5.."), [false; 4]);
        assert_eq!(admitted("d=3.."), [false; 4]);
        assert_eq!(admitted("d=..2"), [true; 4]);
        let d: Domain = "absx=..1e4".parse().unwrap();
        assert!(d.admits_any_row(&p));
        assert!(!"eps=..0".parse::<Domain>().unwrap().admits_any_row(&p));
    }
}
