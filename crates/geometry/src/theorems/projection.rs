//! Theorem 1, projection: LayerNorm's numerator x − μ1 is the orthogonal projection Px onto the
//! hyperplane 1⟂, and Brody et al.'s explicit construction of P (App. C) is right for every d.
//!
//! Matrices are exact integer matrices scaled by d (d·P = dI − 11ᵀ, d·M⁻¹), multiplied with
//! overflow-checked i64 arithmetic; rank is decided exactly: rank P ≤ d − 1 because P1 = 0, and
//! rank P ≥ rank of d·P over the field Z/p (a vanishing minor over Z vanishes mod p), so a rank
//! of d − 1 mod p proves rank d − 1.

use super::exact_vec::{centered, dot, expect_rational, len_q, mean, norm2, sum};
use super::faults::Centering;
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use rug::Rational;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "projection",
    statement: "x − μ1 = Px with P = I − 11ᵀ/d: P is symmetric and idempotent, P1 = 0, trace P = rank P = d − 1, and (x − μ1)·1 = 0, x − μ1 ⟂ μ1, ‖x‖² = ‖x − μ1‖² + dμ². Brody et al.'s construction P = M A M⁻¹ (M's columns: (1−d at i, 1 elsewhere) for i < d and 1; A = [e1 … e_{d−1}, 0]; M⁻¹ as printed in eq. 27) holds for every d tried.",
    source: "Brody et al. 2023, §2 eq. (4) and App. C eqs. (16)-(28); Gupta et al. 2024 §2.2; blog f(x) = (I − 1/n)x",
    check,
};

/// Widths whose matrices are built and multiplied densely (O(d³) per check).
pub const MATRIX_MAX_D: usize = 96;

/// Widths for which Px is also computed by a dense matrix–vector product (O(d²)).
pub const DENSE_MAX_D: usize = 256;

/// A square matrix of exact integers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntMatrix {
    pub n: usize,
    pub data: Vec<i64>,
}

impl IntMatrix {
    pub fn from_fn(n: usize, f: impl Fn(usize, usize) -> i64) -> IntMatrix {
        let data = (0..n * n).map(|k| f(k / n, k % n)).collect();
        IntMatrix { n, data }
    }

    pub fn at(&self, i: usize, j: usize) -> i64 {
        self.data[i * self.n + j]
    }

    pub fn transpose(&self) -> IntMatrix {
        IntMatrix::from_fn(self.n, |i, j| self.at(j, i))
    }

    /// The exact product; `None` on i64 overflow (never a wrapped value).
    pub fn mul(&self, other: &IntMatrix) -> Option<IntMatrix> {
        let n = self.n;
        let mut data = vec![0i64; n * n];
        for i in 0..n {
            for k in 0..n {
                let a = self.at(i, k);
                if a == 0 {
                    continue;
                }
                for j in 0..n {
                    let cell = &mut data[i * n + j];
                    *cell = cell.checked_add(a.checked_mul(other.at(k, j))?)?;
                }
            }
        }
        Some(IntMatrix { n, data })
    }

    /// c·self.
    pub fn scaled(&self, c: i64) -> Option<IntMatrix> {
        let data = self
            .data
            .iter()
            .map(|v| v.checked_mul(c))
            .collect::<Option<_>>()?;
        Some(IntMatrix { n: self.n, data })
    }

    pub fn trace(&self) -> i64 {
        (0..self.n).map(|i| self.at(i, i)).sum()
    }

    /// The first entry where two matrices differ.
    pub fn first_difference(&self, other: &IntMatrix) -> Option<(usize, usize)> {
        (0..self.n * self.n)
            .find(|&k| self.data[k] != other.data[k])
            .map(|k| (k / self.n, k % self.n))
    }

    /// Rank over Z/p, p = 2^61 − 1 (a lower bound on the rank over Q).
    pub fn rank_mod_p(&self) -> usize {
        const P: u128 = (1u128 << 61) - 1;
        let n = self.n;
        let mut m: Vec<u128> = self
            .data
            .iter()
            .map(|&v| v.rem_euclid(P as i64) as u128)
            .collect();
        let inverse = |a: u128| {
            // a^(p−2) mod p (Fermat).
            let (mut base, mut exp, mut acc) = (a, P - 2, 1u128);
            while exp > 0 {
                if exp & 1 == 1 {
                    acc = acc * base % P;
                }
                base = base * base % P;
                exp >>= 1;
            }
            acc
        };
        let mut rank = 0;
        for col in 0..n {
            let Some(pivot) = (rank..n).find(|&r| m[r * n + col] != 0) else {
                continue;
            };
            for j in 0..n {
                m.swap(rank * n + j, pivot * n + j);
            }
            let inv = inverse(m[rank * n + col]);
            for r in 0..n {
                let f = m[r * n + col] * inv % P;
                if r == rank || f == 0 {
                    continue;
                }
                for j in 0..n {
                    m[r * n + j] = (m[r * n + j] + P - f * m[rank * n + j] % P) % P;
                }
            }
            rank += 1;
        }
        rank
    }
}

/// d·P = dI − 11ᵀ (the definition of P, scaled to integers).
pub fn scaled_projection(d: usize) -> IntMatrix {
    IntMatrix::from_fn(d, |i, j| d as i64 * i64::from(i == j) - 1)
}

/// d·P as printed in Brody et al. eq. (28): d − 1 on the diagonal, −1 off it.
pub fn brody_eq28_scaled(d: usize) -> IntMatrix {
    IntMatrix::from_fn(d, |i, j| if i == j { d as i64 - 1 } else { -1 })
}

/// M of eq. (26): columns u_1 … u_{d−1} (1 − d at position i, 1 elsewhere) and 1.
pub fn brody_m(d: usize) -> IntMatrix {
    IntMatrix::from_fn(d, |i, j| if j + 1 < d && i == j { 1 - d as i64 } else { 1 })
}

/// d·M⁻¹ as printed in eq. (27): rows i < d are −e_i + e_d, the last row is 1ᵀ.
pub fn brody_m_inverse_scaled(d: usize) -> IntMatrix {
    IntMatrix::from_fn(d, |i, j| {
        if i + 1 == d || j + 1 == d {
            1
        } else if i == j {
            -1
        } else {
            0
        }
    })
}

/// A of eq. (24): [e_1 … e_{d−1}, 0].
pub fn brody_a(d: usize) -> IntMatrix {
    IntMatrix::from_fn(d, |i, j| i64::from(i == j && j + 1 < d))
}

/// The matrix claims for one d about a candidate d·P (the definition: [`scaled_projection`]):
/// symmetric, (dP)² = d·(dP), (dP)1 = 0, trace = d(d − 1), rank d − 1; and with the candidate
/// d·M⁻¹ (eq. 27: [`brody_m_inverse_scaled`]): M·(dM⁻¹) = (dM⁻¹)·M = dI and
/// M·A·(dM⁻¹) = dP = eq. 28.
pub fn check_matrices(d: usize, p: &IntMatrix, m_inverse_scaled: &IntMatrix) -> Result<(), String> {
    let overflow = || format!("d={d}: i64 overflow in an exact product");
    let di = d as i64;
    if let Some((i, j)) = p.first_difference(&p.transpose()) {
        return Err(format!("d={d}: P is not symmetric at ({i},{j})"));
    }
    let p2 = p.mul(p).ok_or_else(overflow)?;
    if let Some((i, j)) = p2.first_difference(&p.scaled(di).ok_or_else(overflow)?) {
        return Err(format!("d={d}: P² ≠ P at ({i},{j})"));
    }
    if let Some(i) = (0..d).find(|&i| (0..d).map(|j| p.at(i, j)).sum::<i64>() != 0) {
        return Err(format!("d={d}: (P1)_{i} ≠ 0"));
    }
    if p.trace() != di * (di - 1) {
        return Err(format!(
            "d={d}: trace P = {}/{d}, want {}",
            p.trace(),
            di - 1
        ));
    }
    let rank = p.rank_mod_p();
    if rank + 1 != d {
        return Err(format!("d={d}: rank P = {rank} (mod p), want {}", d - 1));
    }
    let m = brody_m(d);
    let identity = IntMatrix::from_fn(d, |i, j| if i == j { di } else { 0 });
    for (name, product) in [
        ("M·M⁻¹", m.mul(m_inverse_scaled)),
        ("M⁻¹·M", m_inverse_scaled.mul(&m)),
    ] {
        if let Some((i, j)) = product.ok_or_else(overflow)?.first_difference(&identity) {
            return Err(format!(
                "d={d}: {name} ≠ I at ({i},{j}) (eq. 27 is not M⁻¹)"
            ));
        }
    }
    let construction = m
        .mul(&brody_a(d))
        .and_then(|ma| ma.mul(m_inverse_scaled))
        .ok_or_else(overflow)?;
    if let Some((i, j)) = construction.first_difference(p) {
        return Err(format!("d={d}: M·A·M⁻¹ ≠ I − 11ᵀ/d at ({i},{j})"));
    }
    if let Some((i, j)) = brody_eq28_scaled(d).first_difference(p) {
        return Err(format!("d={d}: eq. 28 ≠ I − 11ᵀ/d at ({i},{j})"));
    }
    Ok(())
}

/// Px by a dense product with a d×d matrix d·P (e.g. [`scaled_projection`]), divided by d.
pub fn apply_dense(p: &IntMatrix, x: &[Rational]) -> Vec<Rational> {
    let d = x.len();
    let dq = len_q(x);
    (0..d)
        .map(|i| {
            let row: Rational = x
                .iter()
                .enumerate()
                .map(|(j, xj)| Rational::from(xj * p.at(i, j)))
                .sum();
            row / &dq
        })
        .collect()
}

/// The vector claims for one row about a centring (the definition: `exact_vec::centered`) and
/// a matrix d·P (the definition: [`scaled_projection`]):
/// (x − μ1)·1 = 0 (eq. 4); Px = x − μ1 (dense P, d ≤ [`DENSE_MAX_D`]); P(x − μ1) = x − μ1;
/// x − Px = μ1 ⟂ x − μ1; ‖x‖² = ‖x − μ1‖² + dμ².
pub fn check_row(
    centering: Centering,
    projection: fn(usize) -> IntMatrix,
    x: &[Rational],
) -> Result<(), String> {
    let c = centering(x);
    expect_rational("(x − μ1)·1", &sum(&c), &Rational::new())?;
    if x.len() <= DENSE_MAX_D && apply_dense(&projection(x.len()), x) != c {
        return Err("Px ≠ x − μ1".into());
    }
    if centering(&c) != c {
        return Err("P(x − μ1) ≠ x − μ1".into());
    }
    let mu = mean(x);
    let residual: Vec<Rational> = x
        .iter()
        .zip(&c)
        .map(|(xi, ci)| Rational::from(xi - ci))
        .collect();
    if residual.iter().any(|r| *r != mu) {
        return Err("x − Px ≠ μ1".into());
    }
    expect_rational("(x − μ1)·μ1", &dot(&c, &residual), &Rational::new())?;
    let pythagoras = norm2(&c) + Rational::from(mu.square_ref()) * len_q(x);
    expect_rational("‖x − μ1‖² + dμ²", &pythagoras, &norm2(x))
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            for d in 1..=64 {
                let outcome = check_matrices(d, &scaled_projection(d), &brody_m_inverse_scaled(d));
                tally.record(|| "edge".into(), outcome);
            }
        },
        |inputs| {
            let row = inputs.row();
            let d = row.d();
            if d <= MATRIX_MAX_D {
                check_matrices(d, &scaled_projection(d), &brody_m_inverse_scaled(d))?;
            }
            check_row(centered, scaled_projection, &row.values)
                .map_err(|e| format!("{}: {e}", row.describe()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults::{centre_off_by_one, centre_on_first};

    fn check_d(d: usize) -> Result<(), String> {
        check_matrices(d, &scaled_projection(d), &brody_m_inverse_scaled(d))
    }

    #[test]
    fn matrices_hold_for_small_d() {
        for d in 1..=12 {
            check_d(d).unwrap();
        }
        assert_eq!(brody_m(3).data, vec![-2, 1, 1, 1, -2, 1, 1, 1, 1]);
        assert_eq!(
            brody_m_inverse_scaled(3).data,
            vec![-1, 0, 1, 0, -1, 1, 1, 1, 1]
        );
        assert_eq!(brody_a(3).data, vec![1, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(scaled_projection(2).data, vec![1, -1, -1, 1]);
        assert_eq!(brody_eq28_scaled(3), scaled_projection(3));
    }

    #[test]
    fn a_wrong_inverse_is_caught() {
        // Eq. 27 with +1 on the diagonal, or without its 1/d, is not M⁻¹ (d ≥ 2).
        for d in 2..=8 {
            let good = brody_m_inverse_scaled(d);
            let flipped = IntMatrix::from_fn(d, |i, j| {
                if i == j && i + 1 < d {
                    1
                } else {
                    good.at(i, j)
                }
            });
            let e = check_matrices(d, &scaled_projection(d), &flipped).unwrap_err();
            assert!(e.contains("eq. 27"), "{e}");
            let e = check_matrices(d, &scaled_projection(d), &good.scaled(d as i64).unwrap())
                .unwrap_err();
            assert!(e.contains("eq. 27"), "{e}");
        }
    }

    #[test]
    fn wrong_projections_are_caught() {
        let d = 5;
        let m_inv = brody_m_inverse_scaled(d);
        let expect = |p: IntMatrix, what: &str| {
            let e = check_matrices(d, &p, &m_inv).unwrap_err();
            assert!(e.contains(what), "{what}: {e}");
        };
        // The oblique projection I − 1e₁ᵀ: idempotent, kills 1, trace d − 1, not symmetric.
        expect(
            IntMatrix::from_fn(d, |i, j| d as i64 * (i64::from(i == j) - i64::from(j == 0))),
            "symmetric",
        );
        // 2P is not idempotent; I does not kill 1; 0 has trace 0.
        expect(scaled_projection(d).scaled(2).unwrap(), "P² ≠ P");
        expect(
            IntMatrix::from_fn(d, |i, j| d as i64 * i64::from(i == j)),
            "P1",
        );
        expect(IntMatrix::from_fn(d, |_, _| 0), "trace");
    }

    #[test]
    fn rank_mod_p_counts_independent_rows() {
        let m = |n: usize, rows: &[&[i64]]| IntMatrix::from_fn(n, |i, j| rows[i][j]);
        assert_eq!(
            IntMatrix::from_fn(3, |i, j| i64::from(i == j)).rank_mod_p(),
            3
        );
        assert_eq!(IntMatrix::from_fn(3, |_, _| 5).rank_mod_p(), 1);
        assert_eq!(IntMatrix::from_fn(3, |i, j| (i * j) as i64).rank_mod_p(), 1);
        assert_eq!(m(2, &[&[1, 2], &[3, 4]]).rank_mod_p(), 2);
        assert_eq!(IntMatrix::from_fn(3, |i, j| (i + j) as i64).rank_mod_p(), 2);
        assert_eq!(IntMatrix::from_fn(2, |_, _| -1).rank_mod_p(), 1);
        assert_eq!(m(3, &[&[0, 1, 0], &[0, 0, 1], &[1, 0, 0]]).rank_mod_p(), 3);
        assert_eq!(m(3, &[&[0, 0, 0], &[0, 2, 4], &[0, 1, 3]]).rank_mod_p(), 2);
        assert_eq!(m(3, &[&[2, 1, 1], &[4, 2, 3], &[6, 3, 1]]).rank_mod_p(), 2);
        assert_eq!(m(3, &[&[1, 1, 0], &[0, 1, 1], &[1, 0, -1]]).rank_mod_p(), 2);
        assert_eq!(m(3, &[&[1, 1, 0], &[0, 1, 1], &[1, 0, 1]]).rank_mod_p(), 3);
        assert_eq!(scaled_projection(7).rank_mod_p(), 6);
        for d in 1..=6 {
            assert_eq!(scaled_projection(d).trace(), (d * (d - 1)) as i64);
        }
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        let big = IntMatrix::from_fn(2, |_, _| i64::MAX / 2);
        assert!(big.mul(&big).is_none());
        assert!(big.scaled(4).is_none());
        let e = check_matrices(2, &big, &brody_m_inverse_scaled(2)).unwrap_err();
        assert!(e.contains("overflow"), "{e}");
        assert_eq!(
            IntMatrix::from_fn(2, |i, j| (i + 2 * j) as i64)
                .scaled(3)
                .unwrap()
                .data,
            vec![0, 6, 3, 9]
        );
        let a = IntMatrix::from_fn(2, |i, j| [[1, 2], [3, 4]][i][j]);
        assert_eq!(a.mul(&a).unwrap().data, vec![7, 10, 15, 22]);
        let b = IntMatrix::from_fn(2, |i, j| [[0, 1], [5, 0]][i][j]);
        assert_eq!(a.mul(&b).unwrap().data, vec![10, 1, 20, 3]);
        assert_eq!(b.mul(&a).unwrap().data, vec![3, 4, 5, 10]);
        assert_eq!(a.first_difference(&a.transpose()), Some((0, 1)));
        assert_eq!(a.first_difference(&a), None);
        assert_eq!(a.trace(), 5);
    }

    #[test]
    fn rows_project() {
        let x = ints(&[1, 2, 3, 10]);
        check_row(centered, scaled_projection, &x).unwrap();
        assert_eq!(apply_dense(&scaled_projection(4), &x), centered(&x));
        let half = |v: i64| Rational::from((v, 2));
        assert_eq!(
            apply_dense(&scaled_projection(2), &ints(&[0, 3])),
            vec![half(-3), half(3)]
        );
        check_row(centered, scaled_projection, &ints(&[5])).unwrap();
        check_row(centered, scaled_projection, &[]).unwrap();
    }

    #[test]
    fn wrong_centrings_are_caught() {
        let x = ints(&[1, 2, 3, 10]);
        for bad in [centre_on_first, centre_off_by_one] {
            assert!(check_row(bad, scaled_projection, &x).is_err());
        }
        // Wider than the dense product: the remaining claims still catch them.
        let wide: Vec<Rational> = (0..DENSE_MAX_D as i64 + 3)
            .map(|i| Rational::from(i * i))
            .collect();
        check_row(centered, scaled_projection, &wide).unwrap();
        for bad in [centre_on_first, centre_off_by_one] {
            assert!(check_row(bad, scaled_projection, &wide).is_err());
        }
        // Right except for idempotence: an already centred input gets shifted by 1.
        fn recentre_shift(x: &[Rational]) -> Vec<Rational> {
            if sum(x).cmp0() == std::cmp::Ordering::Equal {
                x.iter().map(|v| Rational::from(v + 1u32)).collect()
            } else {
                centered(x)
            }
        }
        let e = check_row(recentre_shift, scaled_projection, &ints(&[0, 3, 9])).unwrap_err();
        assert!(e.contains("P(x − μ1)"), "{e}");
    }

    #[test]
    fn a_wrong_matrix_is_caught_on_rows() {
        // 2·P (twice the projection) and I − 1e₁ᵀ (oblique) against the right centring.
        fn doubled(d: usize) -> IntMatrix {
            scaled_projection(d).scaled(2).expect("small")
        }
        fn oblique(d: usize) -> IntMatrix {
            IntMatrix::from_fn(d, |i, j| d as i64 * (i64::from(i == j) - i64::from(j == 0)))
        }
        let x = ints(&[1, 2, 3, 10]);
        for bad in [doubled, oblique] {
            let e = check_row(centered, bad, &x).unwrap_err();
            assert!(e.contains("Px"), "{e}");
        }
    }

    #[test]
    fn catalogue_entry_verifies() {
        let r = check(Budget { cases: 8, seed: 1 });
        assert_eq!(r.counterexample, None);
        assert_eq!(r.cases, 64 + 8);
    }
}
