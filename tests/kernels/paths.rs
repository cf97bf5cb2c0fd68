//! The native kernels' internal paths give the same bits: γ and β read as given (a single
//! row, f32 rows of 8192 or more, 16-bit rows on the f32 path) or widened to f64
//! (everything else), 16-bit rows widened once or on the f32 path (from 4096 on AVX-512,
//! on Zen 4 bf16 from 1024 and f16 from 2048, wider than 16384 elsewhere),
//! the output loop's cache-line groups and partial tail, and the second look at reported
//! lanes wherever they fall in a row.

use crate::common::{reference_of, row_problem, Gen};
use half::{bf16, f16};
use normoracle::dtype::Dtype;
use normoracle::kernels::{normalize, Element, Isa, Layout, Options, Params};
use normoracle::problem::Op;

/// Widths around every boundary of the output loop (vectors of 8, cache lines of 2 or 4
/// vectors, flags read 8 vectors at a time) and of the widening decisions (f32 γ/β as given
/// from 8192, f32 single rows widened once up to 16384, 16-bit rows on the f32 path from
/// 4096 on AVX-512 (on Zen 4 bf16 from 1024, f16 from 2048) and beyond 16384 elsewhere).
const WIDTHS: [usize; 25] = [
    1, 7, 8, 9, 15, 17, 31, 33, 63, 64, 65, 71, 100, 1023, 1024, 2047, 2048, 4095, 4096, 4097,
    8191, 8192, 16384, 16385, 16393,
];

fn run<T: Element>(op: Op, x: &[T], d: usize, params: Params<'_, T>, isa: Isa) -> Vec<u64> {
    let mut y = vec![T::default(); x.len()];
    let options = Options {
        isa: Some(isa),
        ..Options::default()
    };
    let layout = Layout::contiguous(x.len() / d, d);
    normalize(op, x, &mut y, layout, params, options).unwrap();
    y.into_iter().map(Element::to_bits).collect()
}

/// A row on its own (γ and β read as given) and the same row repeated in a batch (γ and β
/// widened to f64, except in f32 rows from 8192 and 16-bit rows on the f32 path, which
/// read them as given): the same bits, within one ulp of the reference, on every path.
fn alone_and_in_a_batch<T: Element>() {
    let dt = T::DTYPE;
    for d in WIDTHS {
        let mut g = Gen::new(dt, 900 + d as u64);
        let x = g.values("standard", d);
        let gamma = g.values("standard", d);
        let beta = g.values("standard", d);
        let typed = |v: &[u64]| v.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
        let (xt, gt, bt) = (typed(&x), typed(&gamma), typed(&beta));
        let batch: Vec<T> = (0..3).flat_map(|_| xt.iter().copied()).collect();
        for op in Op::ALL {
            let b = (op == Op::LayerNorm).then_some(&bt[..]);
            let want = reference_of(&row_problem(
                op,
                dt,
                &x,
                Some(&gamma),
                b.map(|_| &beta[..]),
                1e-5,
            ));
            let params = Params {
                gamma: Some(&gt[..]),
                beta: b,
                eps: 1e-5,
            };
            for isa in Isa::available() {
                let alone = run(op, &xt, d, params, isa);
                let many = run(op, &batch, d, params, isa);
                for r in 0..3 {
                    assert_eq!(many[r * d..(r + 1) * d], alone[..], "{op} {dt} d={d} {isa}");
                }
                for i in 0..d {
                    assert!(
                        dt.ulp_distance(alone[i], want[i]) <= 1,
                        "{op} {dt} d={d} {isa} i={i}"
                    );
                }
            }
        }
    }
}

#[test]
fn f32_rows_alone_and_in_batches_agree() {
    alone_and_in_a_batch::<f32>();
}

#[test]
fn f16_rows_alone_and_in_batches_agree() {
    alone_and_in_a_batch::<f16>();
}

#[test]
fn bf16_rows_alone_and_in_batches_agree() {
    alone_and_in_a_batch::<bf16>();
}

/// RMSNorm of x = 1.5 with ε = 1.75 scales by exactly 1/2, so y = 0.75·γ; with
/// γ = 1 + k·ulp(1), k odd, y is exactly a rounding midpoint of the format. Such lanes are
/// reported by the stores and decided exactly (ties to even), wherever they are in the row:
/// first or last lane of a vector, inside a group of eight flags, in the flags after the
/// last full group, or in the partial last vector. With ε one f32 step below 1.75 the
/// scale is 1/2·(1 + 2^-26): y lies just above those midpoints, its f32 rounding on them, so
/// f64 → f32 → f16/bf16 rounded to nearest-even twice would round some of them down; the
/// lanes reported by the stores must be rounded again, correctly.
fn midpoints_anywhere<T: Element>() {
    let dt = T::DTYPE;
    let ulp = 2f64.powi(1 - dt.precision());
    for d in WIDTHS {
        let mut gamma = vec![dt.round_f64(1.0); d];
        let whole = d / 8 * 8;
        let mut at: Vec<usize> = vec![0, 7, 8, d / 2, d - 1];
        at.extend([whole.saturating_sub(1), whole, (whole / 64) * 64 + 3]);
        at.retain(|&i| i < d);
        for (n, &i) in at.iter().enumerate() {
            gamma[i] = dt.round_f64(1.0 + (2 * (n % 3) + 1) as f64 * ulp);
        }
        let x = vec![dt.round_f64(1.5); d];
        for eps in [1.75f32, 1.75f32.next_down()] {
            let want = reference_of(&row_problem(Op::RmsNorm, dt, &x, Some(&gamma), None, eps));
            if eps == 1.75 {
                for &i in &at {
                    // A real tie: the f64 value 0.75·γ is exactly representable.
                    let v = 0.75 * dt.to_f64(gamma[i]);
                    let (below, above) = (dt.round_f64(v.next_down()), dt.round_f64(v.next_up()));
                    assert_ne!(below, above, "{dt} d={d} i={i}");
                }
            } else if dt != Dtype::F32 {
                // Rounding twice to nearest-even would be wrong somewhere.
                let twice = |i: usize| {
                    let v = 0.75 * dt.to_f64(gamma[i]) * (1.0 + 2f64.powi(-26));
                    dt.round_f64(v as f32 as f64)
                };
                assert!(at.iter().any(|&i| twice(i) != want[i]), "{dt} d={d}");
            }
            let typed = |v: &[u64]| v.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
            let (xt, gt) = (typed(&x), typed(&gamma));
            let batch: Vec<T> = (0..2).flat_map(|_| xt.iter().copied()).collect();
            let params = Params {
                gamma: Some(&gt[..]),
                beta: None,
                eps,
            };
            for isa in Isa::available() {
                let alone = run(Op::RmsNorm, &xt, d, params, isa);
                assert_eq!(alone, want, "{dt} d={d} eps={eps} {isa}");
                let many = run(Op::RmsNorm, &batch, d, params, isa);
                assert_eq!(many[..d], want[..], "{dt} d={d} eps={eps} {isa}");
                assert_eq!(many[d..], want[..], "{dt} d={d} eps={eps} {isa}");
            }
        }
    }
}

#[test]
fn f32_midpoints_anywhere_in_a_row_are_decided_exactly() {
    midpoints_anywhere::<f32>();
}

#[test]
fn f16_midpoints_anywhere_in_a_row_are_decided_exactly() {
    midpoints_anywhere::<f16>();
}

#[test]
fn bf16_midpoints_anywhere_in_a_row_are_decided_exactly() {
    midpoints_anywhere::<bf16>();
}
