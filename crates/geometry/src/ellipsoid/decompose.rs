//! One entry point for the dense symmetric eigendecomposition: nalgebra's tridiagonal QR for
//! small orders (scalar code), faer's divide-and-conquer for large ones (SIMD, optionally
//! multi-threaded, so its last bits may depend on the machine). The results are f64
//! approximations; what is claimed about them is proved afterwards by [`super::verify`]. The
//! structured solver with portable bits is [`super::secular`].

use crate::error::{Error, Result};

/// Orders up to this use nalgebra; larger ones use faer.
pub const SMALL_ORDER_MAX: usize = 64;

/// Threads for the large-order solver (`faer::Par`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Sequential.
    One,
    /// The rayon pool with this many threads (0: all of them).
    Pool(usize),
}

/// An eigendecomposition `A = V diag(values) Vᵀ`, eigenvalues ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct SymEigen {
    pub n: usize,
    pub values: Vec<f64>,
    /// Column-major `n × n`: column `i` is the eigenvector of `values[i]`.
    pub vectors: Vec<f64>,
}

impl SymEigen {
    pub fn vector(&self, i: usize) -> &[f64] {
        &self.vectors[i * self.n..(i + 1) * self.n]
    }
}

/// The eigendecomposition of the symmetric `n × n` matrix `a` (column-major).
pub fn symmetric_eigen(n: usize, a: &[f64], threads: Threads) -> Result<SymEigen> {
    if a.len() != n * n {
        return Err(Error::input(format!(
            "matrix has {} entries, expected {n}×{n}",
            a.len()
        )));
    }
    if let Some(bad) = a.iter().find(|x| !x.is_finite()) {
        return Err(Error::input(format!(
            "matrix entry {bad} is not finite (gains too extreme)"
        )));
    }
    if n == 0 {
        return Ok(SymEigen {
            n,
            values: Vec::new(),
            vectors: Vec::new(),
        });
    }
    let (values, vectors) = if n <= SMALL_ORDER_MAX {
        small(n, a)
    } else {
        large(n, a, threads)?
    };
    Ok(sorted(n, values, vectors))
}

fn small(n: usize, a: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let m = nalgebra::DMatrix::from_column_slice(n, n, a);
    let e = nalgebra::linalg::SymmetricEigen::new(m);
    (
        e.eigenvalues.as_slice().to_vec(),
        e.eigenvectors.as_slice().to_vec(),
    )
}

fn large(n: usize, a: &[f64], threads: Threads) -> Result<(Vec<f64>, Vec<f64>)> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd;
    let par = match threads {
        Threads::One => faer::Par::Seq,
        Threads::Pool(t) => faer::Par::rayon(t),
    };
    let m = faer::MatRef::from_column_major_slice(a, n, n);
    let mut s = faer::diag::Diag::<f64>::zeros(n);
    let mut u = faer::Mat::<f64>::zeros(n, n);
    let mut buf = MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(
        n,
        evd::ComputeEigenvectors::Yes,
        par,
        Default::default(),
    ));
    evd::self_adjoint_evd(
        m,
        s.as_mut(),
        Some(u.as_mut()),
        par,
        MemStack::new(&mut buf),
        Default::default(),
    )
    .map_err(|e| Error::input(format!("eigensolver did not converge: {e:?}")))?;
    let values = (0..n).map(|i| s[i]).collect();
    let mut vectors = Vec::with_capacity(n * n);
    for j in 0..n {
        vectors.extend((0..n).map(|i| u[(i, j)]));
    }
    Ok((values, vectors))
}

/// Sorts ascending (stable on ties, by the solver's order).
fn sorted(n: usize, values: Vec<f64>, vectors: Vec<f64>) -> SymEigen {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut v = Vec::with_capacity(n * n);
    for &i in &order {
        v.extend_from_slice(&vectors[i * n..(i + 1) * n]);
    }
    SymEigen {
        n,
        values: order.iter().map(|&i| values[i]).collect(),
        vectors: v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn residual(n: usize, a: &[f64], e: &SymEigen) -> f64 {
        let mut worst: f64 = 0.0;
        for k in 0..n {
            let v = e.vector(k);
            for i in 0..n {
                let av: f64 = (0..n).map(|j| a[i + j * n] * v[j]).sum();
                worst = worst.max((av - e.values[k] * v[i]).abs());
            }
        }
        worst
    }

    fn test_matrix(n: usize) -> Vec<f64> {
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i + j * n] =
                    1.0 / (1.0 + i as f64 + j as f64) + if i == j { i as f64 } else { 0.0 };
            }
        }
        a
    }

    #[test]
    fn both_backends_decompose_and_sort() {
        for n in [3, SMALL_ORDER_MAX + 6] {
            let a = test_matrix(n);
            let e = symmetric_eigen(n, &a, Threads::One).unwrap();
            assert!(e.values.windows(2).all(|w| w[0] <= w[1]));
            assert!(residual(n, &a, &e) < 1e-12 * n as f64, "n = {n}");
        }
    }

    #[test]
    fn the_backends_agree_on_a_matrix_either_could_take() {
        let n = 20;
        let a = test_matrix(n);
        let (mut v_small, _) = small(n, &a);
        let (v_large, _) = large(n, &a, Threads::One).unwrap();
        v_small.sort_by(f64::total_cmp);
        for (x, y) in v_small.iter().zip(&v_large) {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn non_finite_matrices_are_input_errors() {
        assert!(symmetric_eigen(1, &[f64::NAN], Threads::One).is_err());
        assert!(symmetric_eigen(2, &[1.0], Threads::One).is_err());
    }
}
