//! Univariate polynomials over ℚ (exact, `rug::Rational` coefficients): the characteristic
//! polynomials of the ellipsoid's matrices, Sturm root counting and square-free factorisation
//! (Yun), so that eigenvalues can be certified by sign changes instead of tolerances.

use rug::{Integer, Rational};
use std::cmp::Ordering;
use std::fmt;

/// A polynomial `c[0] + c[1] x + … + c[d] x^d` with exact rational coefficients. The leading
/// coefficient is nonzero (the zero polynomial has no coefficients).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Poly {
    coeffs: Vec<Rational>,
}

impl Poly {
    /// From ascending coefficients; trailing zeros are dropped.
    pub fn new(coeffs: Vec<Rational>) -> Self {
        let mut p = Poly { coeffs };
        p.trim();
        p
    }

    pub fn zero() -> Self {
        Poly { coeffs: Vec::new() }
    }

    pub fn constant(c: Rational) -> Self {
        Poly::new(vec![c])
    }

    /// `x`.
    pub fn x() -> Self {
        Poly::new(vec![Rational::new(), Rational::from(1)])
    }

    /// `x − r`.
    pub fn linear_root(r: &Rational) -> Self {
        Poly::new(vec![Rational::from(-r), Rational::from(1)])
    }

    fn trim(&mut self) {
        while self
            .coeffs
            .last()
            .is_some_and(|c| c.cmp0() == Ordering::Equal)
        {
            self.coeffs.pop();
        }
    }

    pub fn is_zero(&self) -> bool {
        self.coeffs.is_empty()
    }

    /// Degree; `None` for the zero polynomial.
    pub fn degree(&self) -> Option<usize> {
        self.coeffs.len().checked_sub(1)
    }

    /// Ascending coefficients.
    pub fn coeffs(&self) -> &[Rational] {
        &self.coeffs
    }

    pub fn leading(&self) -> Option<&Rational> {
        self.coeffs.last()
    }

    /// Horner evaluation, exact.
    pub fn eval(&self, x: &Rational) -> Rational {
        let mut acc = Rational::new();
        for c in self.coeffs.iter().rev() {
            acc *= x;
            acc += c;
        }
        acc
    }

    pub fn add(&self, other: &Poly) -> Poly {
        let n = self.coeffs.len().max(other.coeffs.len());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut c = self.coeffs.get(i).cloned().unwrap_or_default();
            if let Some(o) = other.coeffs.get(i) {
                c += o;
            }
            out.push(c);
        }
        Poly::new(out)
    }

    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.scale(&Rational::from(-1)))
    }

    pub fn scale(&self, s: &Rational) -> Poly {
        Poly::new(self.coeffs.iter().map(|c| Rational::from(c * s)).collect())
    }

    pub fn mul(&self, other: &Poly) -> Poly {
        if self.is_zero() || other.is_zero() {
            return Poly::zero();
        }
        let mut out = vec![Rational::new(); self.coeffs.len() + other.coeffs.len() - 1];
        for (i, a) in self.coeffs.iter().enumerate() {
            for (j, b) in other.coeffs.iter().enumerate() {
                out[i + j] += Rational::from(a * b);
            }
        }
        Poly::new(out)
    }

    /// `self^e`.
    pub fn pow(&self, e: usize) -> Poly {
        let mut out = Poly::constant(Rational::from(1));
        for _ in 0..e {
            out = out.mul(self);
        }
        out
    }

    pub fn derivative(&self) -> Poly {
        Poly::new(
            self.coeffs
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, c)| Rational::from(c * Integer::from(i)))
                .collect(),
        )
    }

    /// Euclidean division: `(q, r)` with `self = q·d + r`, `deg r < deg d`.
    /// Panics on a zero divisor (a programming error, never an input error).
    pub fn div_rem(&self, d: &Poly) -> (Poly, Poly) {
        let dd = d.degree().expect("division by the zero polynomial");
        let lead = d.coeffs[dd].clone();
        let mut r = self.coeffs.clone();
        let mut q = vec![Rational::new(); self.coeffs.len().saturating_sub(dd).max(1)];
        while r.len() > dd && !r.is_empty() {
            let k = r.len() - 1;
            let c = Rational::from(&r[k] / &lead);
            if c.cmp0() != Ordering::Equal {
                for (j, dc) in d.coeffs.iter().enumerate() {
                    r[k - dd + j] -= Rational::from(&c * dc);
                }
                q[k - dd] = c;
            }
            r.pop();
        }
        (Poly::new(q), Poly::new(r))
    }

    pub fn rem(&self, d: &Poly) -> Poly {
        self.div_rem(d).1
    }

    /// Divides the coefficients by the leading one (zero stays zero).
    pub fn monic(&self) -> Poly {
        match self.leading() {
            None => Poly::zero(),
            Some(l) => {
                let inv = Rational::from(l.recip_ref());
                self.scale(&inv)
            }
        }
    }

    /// Monic greatest common divisor.
    pub fn gcd(&self, other: &Poly) -> Poly {
        let (mut a, mut b) = (self.clone(), other.clone());
        while !b.is_zero() {
            let r = a.rem(&b);
            a = b;
            b = r.monic();
        }
        a.monic()
    }

    /// `x^d p(1/x)` with `d = deg p`: the polynomial whose roots are the reciprocals of the
    /// nonzero roots of `p` (after removing the factor `x^m` of zero roots first).
    pub fn reversed(&self) -> Poly {
        let mut c = self.coeffs.clone();
        c.reverse();
        Poly::new(c)
    }

    /// The multiplicity of the root 0 and `p / x^m`.
    pub fn split_zero_roots(&self) -> (usize, Poly) {
        let m = self
            .coeffs
            .iter()
            .take_while(|c| c.cmp0() == Ordering::Equal)
            .count();
        (
            m,
            Poly::new(self.coeffs[m.min(self.coeffs.len())..].to_vec()),
        )
    }

    /// Square-free factorisation (Yun): `self = lc · ∏ f_i^i`; returns `(i, f_i)` for the
    /// non-constant monic `f_i`.
    pub fn square_free_factors(&self) -> Vec<(usize, Poly)> {
        let mut out = Vec::new();
        if self.degree().unwrap_or(0) == 0 {
            return out;
        }
        let f = self.monic();
        let df = f.derivative();
        let a0 = f.gcd(&df);
        let mut b = f.div_rem(&a0).0;
        let mut c = df.div_rem(&a0).0;
        let mut d = c.sub(&b.derivative());
        let mut i = 1;
        while b.degree().unwrap_or(0) > 0 {
            let a = b.gcd(&d);
            if a.degree().unwrap_or(0) > 0 {
                out.push((i, a.clone()));
            }
            b = b.div_rem(&a).0;
            c = d.div_rem(&a).0;
            d = c.sub(&b.derivative());
            i += 1;
        }
        out
    }

    /// The Sturm chain `p, p', −rem(p, p'), …` of a square-free polynomial.
    pub fn sturm_chain(&self) -> Vec<Poly> {
        let mut chain = vec![self.clone()];
        if self.degree().unwrap_or(0) == 0 {
            return chain;
        }
        chain.push(self.derivative());
        loop {
            let n = chain.len();
            let r = chain[n - 2].rem(&chain[n - 1]);
            if r.is_zero() {
                break;
            }
            chain.push(r.scale(&Rational::from(-1)));
        }
        chain
    }

    /// The number of distinct real roots in `(lo, hi]` (Sturm's theorem). Roots are counted
    /// with multiplicity one, whatever `self` is: the chain is built on the square-free part.
    pub fn count_distinct_roots(&self, lo: &Rational, hi: &Rational) -> usize {
        if self.is_zero() || lo >= hi {
            return 0;
        }
        let g = self.gcd(&self.derivative());
        let square_free = self.div_rem(&g).0;
        let chain = square_free.sturm_chain();
        let v_lo = sign_changes(&chain, lo);
        let v_hi = sign_changes(&chain, hi);
        v_lo.saturating_sub(v_hi)
    }

    /// The number of real roots in `(lo, hi]` counted with multiplicity.
    pub fn count_roots_with_multiplicity(&self, lo: &Rational, hi: &Rational) -> usize {
        self.square_free_factors()
            .iter()
            .map(|(m, f)| m * f.count_distinct_roots(lo, hi))
            .sum()
    }

    /// Writes the polynomial with variable `var`, highest power first, e.g. `x^2 - 3/2 x`.
    pub fn display(&self, var: &str) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut out = String::new();
        for (i, c) in self.coeffs.iter().enumerate().rev() {
            if c.cmp0() == Ordering::Equal {
                continue;
            }
            let neg = c.cmp0() == Ordering::Less;
            let mag = Rational::from(c.abs_ref());
            if out.is_empty() {
                if neg {
                    out.push('-');
                }
            } else {
                out.push_str(if neg { " - " } else { " + " });
            }
            let one = mag == 1;
            match i {
                0 => out.push_str(&mag.to_string()),
                _ => {
                    if !one {
                        out.push_str(&mag.to_string());
                        out.push(' ');
                    }
                    out.push_str(var);
                    if i > 1 {
                        out.push_str(&format!("^{i}"));
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display("x"))
    }
}

fn sign_changes(chain: &[Poly], x: &Rational) -> usize {
    let mut count = 0;
    let mut last = Ordering::Equal;
    for p in chain {
        let s = p.eval(x).cmp0();
        if s == Ordering::Equal {
            continue;
        }
        if last != Ordering::Equal && s != last {
            count += 1;
        }
        last = s;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    fn from_roots(roots: &[Rational]) -> Poly {
        roots
            .iter()
            .fold(Poly::constant(q(1, 1)), |p, r| p.mul(&Poly::linear_root(r)))
    }

    #[test]
    fn division_reconstructs_the_dividend() {
        let a = Poly::new(vec![q(1, 1), q(-3, 2), q(0, 1), q(5, 7), q(2, 1)]);
        let d = Poly::new(vec![q(-1, 3), q(1, 1), q(4, 1)]);
        let (quot, rem) = a.div_rem(&d);
        assert!(rem.degree().unwrap() < 2);
        assert_eq!(quot.mul(&d).add(&rem), a);
    }

    #[test]
    fn sturm_counts_roots_in_half_open_intervals() {
        let p = from_roots(&[q(1, 2), q(3, 1), q(3, 1), q(-7, 5)]);
        assert_eq!(p.count_distinct_roots(&q(0, 1), &q(10, 1)), 2);
        assert_eq!(p.count_distinct_roots(&q(-2, 1), &q(10, 1)), 3);
        // (lo, hi]: the root at hi counts, the root at lo does not.
        assert_eq!(p.count_distinct_roots(&q(1, 2), &q(3, 1)), 1);
        assert_eq!(p.count_distinct_roots(&q(0, 1), &q(1, 2)), 1);
        assert_eq!(p.count_roots_with_multiplicity(&q(2, 1), &q(4, 1)), 2);
        assert_eq!(p.count_roots_with_multiplicity(&q(-10, 1), &q(10, 1)), 4);
    }

    #[test]
    fn yun_recovers_multiplicities() {
        let p =
            from_roots(&[q(1, 1), q(2, 1), q(2, 1), q(5, 3), q(5, 3), q(5, 3)]).scale(&q(-4, 1));
        let f = p.square_free_factors();
        let degrees: Vec<(usize, usize)> =
            f.iter().map(|(m, g)| (*m, g.degree().unwrap())).collect();
        assert_eq!(degrees, vec![(1, 1), (2, 1), (3, 1)]);
        assert_eq!(f[2].1, Poly::linear_root(&q(5, 3)));
    }

    #[test]
    fn reversal_inverts_roots_and_display_is_readable() {
        let p = from_roots(&[q(2, 1), q(1, 3)]);
        let r = p.reversed().monic();
        assert_eq!(r, from_roots(&[q(1, 2), q(3, 1)]));
        assert_eq!(p.display("x"), "x^2 - 7/3 x + 2/3");
        let (m, rest) = Poly::x().pow(2).mul(&p).split_zero_roots();
        assert_eq!((m, rest), (2, p));
    }
}
