//! The ellipsoid's costs: the decomposition per order (nalgebra up to 64, faer above), one
//! MPFR residual bound, and a whole certificate.
//! `cargo bench --bench ellipsoid` (the N = 4096 comparison with numpy is
//! `normoracle ellipsoid bench`).

use normoracle_geometry::ellipsoid::bench::bench_gains;
use normoracle_geometry::ellipsoid::decompose::{symmetric_eigen, Threads};
use normoracle_geometry::ellipsoid::matrices::{tight_form_dense, IntervalOperator};
use normoracle_geometry::ellipsoid::residual::{residual_bounds, Workspace};
use normoracle_geometry::ellipsoid::verify::certify;

fn main() {
    divan::main();
}

#[divan::bench(args = [32, 64, 128, 512, 1024])]
fn decompose(bencher: divan::Bencher, n: usize) {
    let q = tight_form_dense(&bench_gains(n, 1));
    bencher.bench(|| symmetric_eigen(n, divan::black_box(&q), Threads::One).unwrap());
}

#[divan::bench(args = [256, 4096])]
fn one_residual_bound(bencher: divan::Bencher, n: usize) {
    let g = bench_gains(n, 1);
    let op = IntervalOperator::tight_form(&g);
    let v: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).sin()).collect();
    let mut ws = Workspace::new(n);
    bencher.bench_local(|| residual_bounds(&op, 0.5, divan::black_box(&v), &mut ws));
}

#[divan::bench(args = [128, 512], sample_count = 5)]
fn certificate(bencher: divan::Bencher, n: usize) {
    let g = bench_gains(n, 1);
    let e = symmetric_eigen(n, &tight_form_dense(&g), Threads::One).unwrap();
    let op = IntervalOperator::tight_form(&g);
    bencher.bench(|| certify(&op, &e, Threads::One, &|| {}));
}
