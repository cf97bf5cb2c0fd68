//! A small dense tableau simplex, written once over a scalar trait and used twice: in f64 (the
//! fast path, whose answers are only candidates) and in `rug::Rational` with Bland's rule
//! (the exact fallback, which always terminates with the right answer).
//!
//! Problem: minimize cᵀx subject to A x = b, x ≥ 0 (A is m × n, dense). Phase 1 minimizes
//! the sum of artificials after flipping rows so b ≥ 0. When phase 1 ends with a positive
//! optimum the final duals give a Farkas certificate y: Aᵀy ≤ 0 and bᵀy > 0, read off the
//! reduced costs of the artificial columns (r_k = 1 − D_k y_k, D the row signs).

use rug::Rational;
use std::cmp::Ordering;
use std::fmt::Debug;

/// What the simplex needs from its numbers.
pub trait LpScalar: Clone + Debug {
    /// Exact arithmetic: use Bland's rule from the first pivot.
    const EXACT: bool;
    fn zero() -> Self;
    fn one() -> Self;
    /// Proved or judged (within tolerance, for f64) > 0.
    fn is_pos(&self) -> bool;
    /// Judged < 0.
    fn is_neg(&self) -> bool;
    fn neg(&self) -> Self;
    fn ratio(&self, den: &Self) -> Self;
    fn cmp_value(&self, other: &Self) -> Ordering;
    /// self −= a·b
    fn sub_mul(&mut self, a: &Self, b: &Self);
    /// self /= d
    fn div_assign_by(&mut self, d: &Self);
    fn is_exact_zero(&self) -> bool;
}

/// Absolute tolerance of the f64 simplex (data is scaled to magnitude ≈ 1 by the callers).
pub const F64_TOL: f64 = 1e-9;

impl LpScalar for f64 {
    const EXACT: bool = false;
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    fn is_pos(&self) -> bool {
        *self > F64_TOL
    }
    fn is_neg(&self) -> bool {
        *self < -F64_TOL
    }
    fn neg(&self) -> Self {
        -*self
    }
    fn ratio(&self, den: &Self) -> Self {
        self / den
    }
    fn cmp_value(&self, other: &Self) -> Ordering {
        self.partial_cmp(other).unwrap_or(Ordering::Equal)
    }
    fn sub_mul(&mut self, a: &Self, b: &Self) {
        *self -= a * b;
    }
    fn div_assign_by(&mut self, d: &Self) {
        *self /= d;
    }
    fn is_exact_zero(&self) -> bool {
        *self == 0.0
    }
}

impl LpScalar for Rational {
    const EXACT: bool = true;
    fn zero() -> Self {
        Rational::new()
    }
    fn one() -> Self {
        Rational::from(1)
    }
    fn is_pos(&self) -> bool {
        self.cmp0() == Ordering::Greater
    }
    fn is_neg(&self) -> bool {
        self.cmp0() == Ordering::Less
    }
    fn neg(&self) -> Self {
        Rational::from(-self)
    }
    fn ratio(&self, den: &Self) -> Self {
        Rational::from(self / den)
    }
    fn cmp_value(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
    fn sub_mul(&mut self, a: &Self, b: &Self) {
        *self -= Rational::from(a * b);
    }
    fn div_assign_by(&mut self, d: &Self) {
        *self /= d;
    }
    fn is_exact_zero(&self) -> bool {
        self.cmp0() == Ordering::Equal
    }
}

/// minimize cᵀx s.t. A x = b, x ≥ 0; `cost: None` asks for feasibility only.
#[derive(Debug, Clone)]
pub struct Lp<S> {
    /// m rows of n entries.
    pub a: Vec<Vec<S>>,
    pub b: Vec<S>,
    pub cost: Option<Vec<S>>,
}

/// The simplex's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum LpOutcome<S> {
    /// No x ≥ 0 with A x = b; y has Aᵀy ≤ 0 and bᵀy > 0.
    Infeasible { y: Vec<S> },
    /// An optimal (or, without a cost, feasible) basic solution; `basis` lists the basic
    /// structural columns.
    Optimal { x: Vec<S>, basis: Vec<usize> },
    /// A ray r ≥ 0 with A r = 0 and cᵀr < 0.
    Unbounded { ray: Vec<S> },
    /// The pivot budget ran out (f64 only, in practice).
    IterationLimit,
}

struct Tableau<S> {
    m: usize,
    /// (m + 1) rows × (n + m + 1) columns: structural, artificial, right-hand side; the last
    /// row holds reduced costs and −objective.
    t: Vec<S>,
    basis: Vec<usize>,
    width: usize,
}

impl<S: LpScalar> Tableau<S> {
    fn at(&self, r: usize, c: usize) -> &S {
        &self.t[r * self.width + c]
    }

    fn pivot(&mut self, row: usize, col: usize) {
        let w = self.width;
        let p = self.t[row * w + col].clone();
        for c in 0..w {
            self.t[row * w + c].div_assign_by(&p);
        }
        let pivot_row: Vec<S> = self.t[row * w..(row + 1) * w].to_vec();
        for r in 0..=self.m {
            if r == row {
                continue;
            }
            let f = self.t[r * w + col].clone();
            if f.is_exact_zero() {
                continue;
            }
            for (c, pv) in pivot_row.iter().enumerate() {
                if !pv.is_exact_zero() {
                    self.t[r * w + c].sub_mul(&f, pv);
                }
            }
        }
        self.basis[row] = col;
    }

    /// Runs the simplex on the current objective row, entering only columns `< enter_limit`.
    /// Returns Ok(()) at optimum, Err(Some(col)) when unbounded along `col`, Err(None) at
    /// the iteration limit.
    fn optimize(&mut self, enter_limit: usize, max_iter: usize) -> Result<(), Option<usize>> {
        let rhs = self.width - 1;
        let mut degenerate_run = 0usize;
        for _ in 0..max_iter {
            let bland = S::EXACT || degenerate_run > 50;
            let mut enter = None;
            for c in 0..enter_limit {
                let rc = self.at(self.m, c);
                if rc.is_neg() {
                    match enter {
                        None => enter = Some(c),
                        Some(e) if !bland && rc.cmp_value(self.at(self.m, e)) == Ordering::Less => {
                            enter = Some(c)
                        }
                        _ => {}
                    }
                    if bland {
                        break;
                    }
                }
            }
            let Some(col) = enter else { return Ok(()) };
            let mut leave: Option<(usize, S)> = None;
            for r in 0..self.m {
                let a = self.at(r, col);
                if !a.is_pos() {
                    continue;
                }
                let ratio = self.at(r, rhs).ratio(a);
                let better = match &leave {
                    None => true,
                    Some((lr, best)) => match ratio.cmp_value(best) {
                        Ordering::Less => true,
                        Ordering::Equal => self.basis[r] < self.basis[*lr],
                        Ordering::Greater => false,
                    },
                };
                if better {
                    leave = Some((r, ratio));
                }
            }
            let Some((row, ratio)) = leave else {
                return Err(Some(col));
            };
            if ratio.is_pos() {
                degenerate_run = 0;
            } else {
                degenerate_run += 1;
            }
            self.pivot(row, col);
        }
        Err(None)
    }
}

/// Solves the LP. `max_iter` bounds the pivots of each phase.
pub fn solve<S: LpScalar>(lp: &Lp<S>, max_iter: usize) -> LpOutcome<S> {
    let m = lp.b.len();
    let n = lp.a.first().map_or(0, Vec::len);
    debug_assert!(lp.a.len() == m && lp.a.iter().all(|r| r.len() == n));
    let width = n + m + 1;
    let mut t = vec![S::zero(); (m + 1) * width];
    let mut signs = Vec::with_capacity(m);
    for r in 0..m {
        let flip = lp.b[r].cmp_value(&S::zero()) == Ordering::Less;
        signs.push(!flip);
        let s = |x: &S| if flip { x.neg() } else { x.clone() };
        for c in 0..n {
            t[r * width + c] = s(&lp.a[r][c]);
        }
        t[r * width + n + r] = S::one();
        t[r * width + n + m] = s(&lp.b[r]);
    }
    // Phase-1 reduced costs: −Σ_rows for structural columns and the right-hand side.
    for c in (0..n).chain(std::iter::once(n + m)) {
        let mut acc = S::zero();
        for r in 0..m {
            acc.sub_mul(&t[r * width + c], &S::one());
        }
        t[m * width + c] = acc;
    }
    let mut tab = Tableau {
        m,
        t,
        basis: (n..n + m).collect(),
        width,
    };
    match tab.optimize(n, max_iter) {
        Ok(()) => {}
        Err(_) => return LpOutcome::IterationLimit,
    }
    let rhs = width - 1;
    // −T[m][rhs] is the phase-1 optimum.
    let infeasibility = tab.at(m, rhs).neg();
    if infeasibility.is_pos() {
        let y = (0..m)
            .map(|k| {
                // y'_k = 1 − r_k; y_k = D_k y'_k.
                let mut yk = S::one();
                yk.sub_mul(tab.at(m, n + k), &S::one());
                if signs[k] {
                    yk
                } else {
                    yk.neg()
                }
            })
            .collect();
        return LpOutcome::Infeasible { y };
    }
    // Drive zero-level artificials out of the basis where a structural column allows it.
    for row in 0..m {
        if tab.basis[row] >= n {
            if let Some(col) = (0..n).find(|&c| tab.at(row, c).is_pos() || tab.at(row, c).is_neg())
            {
                tab.pivot(row, col);
            }
        }
    }
    if let Some(cost) = &lp.cost {
        // Phase-2 reduced costs: c_j − Σ_r c_B(r) T[r][j] (artificials cost 0 and never enter).
        for c in (0..n + m).chain(std::iter::once(rhs)) {
            let mut acc = if c < n { cost[c].clone() } else { S::zero() };
            for r in 0..m {
                let b = tab.basis[r];
                if b < n {
                    let entry = tab.at(r, c).clone();
                    acc.sub_mul(&cost[b], &entry);
                }
            }
            tab.t[m * width + c] = acc;
        }
        match tab.optimize(n, max_iter) {
            Ok(()) => {}
            Err(Some(col)) => {
                let mut ray = vec![S::zero(); n];
                ray[col] = S::one();
                for r in 0..m {
                    let b = tab.basis[r];
                    if b < n {
                        ray[b] = tab.at(r, col).neg();
                    }
                }
                return LpOutcome::Unbounded { ray };
            }
            Err(None) => return LpOutcome::IterationLimit,
        }
    }
    let mut x = vec![S::zero(); n];
    let mut basis = Vec::new();
    for r in 0..m {
        let b = tab.basis[r];
        if b < n {
            x[b] = tab.at(r, rhs).clone();
            basis.push(b);
        }
    }
    basis.sort_unstable();
    LpOutcome::Optimal { x, basis }
}

/// A pivot budget that is generous for the dense problems here.
pub fn default_iterations(m: usize, n: usize) -> usize {
    50 * (m + n) + 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rat(v: &[i64]) -> Vec<Rational> {
        v.iter().map(|&x| Rational::from(x)).collect()
    }

    /// x1 + x2 = 1, x1 − x2 = 0 (feasible, x = (1/2, 1/2)).
    #[test]
    fn feasibility_exact_and_float() {
        let lp = Lp {
            a: vec![rat(&[1, 1]), rat(&[1, -1])],
            b: rat(&[1, 0]),
            cost: None,
        };
        match solve(&lp, 100) {
            LpOutcome::Optimal { x, .. } => assert_eq!(x, vec![Rational::from((1, 2)); 2]),
            o => panic!("{o:?}"),
        }
        let lpf = Lp {
            a: vec![vec![1.0, 1.0], vec![1.0, -1.0]],
            b: vec![1.0, 0.0],
            cost: None,
        };
        match solve(&lpf, 100) {
            LpOutcome::Optimal { x, basis } => {
                assert!((x[0] - 0.5).abs() < 1e-12 && (x[1] - 0.5).abs() < 1e-12);
                assert_eq!(basis, vec![0, 1]);
            }
            o => panic!("{o:?}"),
        }
    }

    /// x1 + x2 = −1 has no x ≥ 0; the Farkas vector must satisfy Aᵀy ≤ 0, bᵀy > 0.
    #[test]
    fn infeasibility_gives_farkas_vector() {
        let a = vec![rat(&[1, 1]), rat(&[1, -1])];
        let b = rat(&[-1, 0]);
        let lp = Lp {
            a: a.clone(),
            b: b.clone(),
            cost: None,
        };
        let LpOutcome::Infeasible { y } = solve(&lp, 100) else {
            panic!()
        };
        for c in 0..2 {
            let col: Rational = a
                .iter()
                .zip(&y)
                .map(|(row, yr)| Rational::from(&row[c] * yr))
                .sum();
            assert!(col <= 0, "Aᵀy ≤ 0 violated");
        }
        let by: Rational = (0..2).map(|r| Rational::from(&b[r] * &y[r])).sum();
        assert!(by > 0);
    }

    /// min −x1 s.t. x1 − x2 = 0 is unbounded along (1, 1); min x1 + x2 s.t. x1 + 2x2 = 2 has
    /// optimum x = (0, 1).
    #[test]
    fn phase_two() {
        let lp = Lp {
            a: vec![rat(&[1, -1])],
            b: rat(&[0]),
            cost: Some(rat(&[-1, 0])),
        };
        let LpOutcome::Unbounded { ray } = solve(&lp, 100) else {
            panic!()
        };
        assert_eq!(ray, rat(&[1, 1]));
        let lp = Lp {
            a: vec![rat(&[1, 2])],
            b: rat(&[2]),
            cost: Some(rat(&[1, 1])),
        };
        let LpOutcome::Optimal { x, basis } = solve(&lp, 100) else {
            panic!()
        };
        assert_eq!(x, rat(&[0, 1]));
        assert_eq!(basis, vec![1]);
    }

    /// A redundant row (the second is twice the first) leaves an artificial basic at zero.
    #[test]
    fn redundant_rows() {
        let lp = Lp {
            a: vec![rat(&[1, 1, 0]), rat(&[2, 2, 0]), rat(&[0, 1, 1])],
            b: rat(&[1, 2, 1]),
            cost: Some(rat(&[0, 1, 0])),
        };
        let LpOutcome::Optimal { x, .. } = solve(&lp, 100) else {
            panic!()
        };
        assert_eq!(x, rat(&[1, 0, 1]));
    }
}
