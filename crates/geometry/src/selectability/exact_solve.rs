//! Exact solution of the small linear systems behind hull certificates: the support (basis)
//! of a float LP answer is re-solved in exact arithmetic. Rows are scaled to integers and
//! eliminated fraction-free (Bareiss: every intermediate entry is a minor, every division
//! exact); the triangular system is then solved in rationals and the solution is checked
//! against every original row, so a returned solution is exact by verification, not only by
//! construction.

use rug::{Integer, Rational};

/// x with A x = b exactly, for A given as `rows` (m rows of r entries, usually m ≥ r), if the
/// r columns are linearly independent and the system is consistent; `None` otherwise.
pub fn solve(rows: &[Vec<Rational>], rhs: &[Rational]) -> Option<Vec<Rational>> {
    let m = rows.len();
    assert_eq!(rhs.len(), m, "one right-hand side per row");
    let r = rows.first().map_or(0, Vec::len);
    if r == 0 {
        return rhs.iter().all(|x| *x == 0).then(Vec::new);
    }
    if r > m {
        return None;
    }
    let original = integer_rows(rows, rhs);
    let mut a = original.clone();
    let mut prev = Integer::from(1);
    for col in 0..r {
        let pivot = (col..m).find(|&i| a[i][col] != 0)?;
        a.swap(col, pivot);
        let (top, bottom) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for row in bottom.iter_mut() {
            for j in col + 1..=r {
                let mut v = Integer::from(&pivot_row[col] * &row[j]);
                v -= Integer::from(&row[col] * &pivot_row[j]);
                v.div_exact_mut(&prev);
                row[j] = v;
            }
            row[col] = Integer::new();
        }
        prev = a[col][col].clone();
    }
    // Rows past the rank must be 0 = 0.
    if a[r..].iter().any(|row| row[r] != 0) {
        return None;
    }
    let mut x = vec![Rational::new(); r];
    for i in (0..r).rev() {
        let mut acc = Rational::from(&a[i][r]);
        for j in i + 1..r {
            acc -= Rational::from(&x[j] * &a[i][j]);
        }
        x[i] = acc / &a[i][i];
    }
    verify(&original, &x).then_some(x)
}

/// Each row (with its right-hand side last) times the lcm of its denominators.
fn integer_rows(rows: &[Vec<Rational>], rhs: &[Rational]) -> Vec<Vec<Integer>> {
    rows.iter()
        .zip(rhs)
        .map(|(row, b)| {
            let mut l = Integer::from(1);
            for x in row.iter().chain(std::iter::once(b)) {
                l.lcm_mut(x.denom());
            }
            row.iter()
                .chain(std::iter::once(b))
                .map(|x| x.numer() * Integer::from(&l / x.denom()))
                .collect()
        })
        .collect()
}

/// Σ_j A_kj x_j = b_k for every row, with x brought to a common denominator.
fn verify(rows: &[Vec<Integer>], x: &[Rational]) -> bool {
    let r = x.len();
    let mut den = Integer::from(1);
    for v in x {
        den.lcm_mut(v.denom());
    }
    let nums: Vec<Integer> = x
        .iter()
        .map(|v| v.numer() * Integer::from(&den / v.denom()))
        .collect();
    rows.iter().all(|row| {
        let mut s = Integer::new();
        for (a, n) in row[..r].iter().zip(&nums) {
            s += a * n;
        }
        s == Integer::from(&row[r] * &den)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(v: &[i64]) -> Vec<Rational> {
        v.iter().map(|&x| Rational::from(x)).collect()
    }

    #[test]
    fn solves_square_and_overdetermined_systems() {
        // 2x + y = 5, x − y = 1 → (2, 1).
        let x = solve(&[q(&[2, 1]), q(&[1, -1])], &q(&[5, 1])).unwrap();
        assert_eq!(x, q(&[2, 1]));
        // A consistent third row is accepted, an inconsistent one rejected.
        assert_eq!(
            solve(&[q(&[2, 1]), q(&[1, -1]), q(&[3, 0])], &q(&[5, 1, 6])).unwrap(),
            q(&[2, 1])
        );
        assert!(solve(&[q(&[2, 1]), q(&[1, -1]), q(&[3, 0])], &q(&[5, 1, 7])).is_none());
        // Rational entries and a zero leading pivot.
        let half = Rational::from((1, 2));
        let rows = vec![
            vec![Rational::new(), half.clone()],
            vec![Rational::from(3), Rational::from(1)],
        ];
        let x = solve(&rows, &[Rational::from(1), Rational::from(5)]).unwrap();
        assert_eq!(x, vec![Rational::from(1), Rational::from(2)]);
    }

    #[test]
    fn dependent_columns_are_refused() {
        assert!(solve(&[q(&[1, 2]), q(&[2, 4])], &q(&[3, 6])).is_none());
        assert!(solve(&[q(&[1, 2])], &q(&[3])).is_none());
    }

    #[test]
    fn empty_system() {
        assert_eq!(solve(&[vec![], vec![]], &q(&[0, 0])), Some(vec![]));
        assert_eq!(solve(&[vec![]], &q(&[1])), None);
    }
}
