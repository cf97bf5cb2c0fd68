//! The native kernels' public API: errors instead of panics, NaN rows, extreme rows.

use crate::common::{reference_of, row_problem};
use half::{bf16, f16};
use normoracle::kernels::{self, normalize, Element, Isa, Layout, Options, Params};
use normoracle::problem::Op;
use normoracle::Error;

fn params<T>(eps: f32) -> Params<'static, T> {
    Params {
        gamma: None,
        beta: None,
        eps,
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let x = [1.0f32; 12];
    let mut y = [0.0f32; 12];
    let g3 = [1.0f32; 3];
    let cases: Vec<(&str, Result<(), Error>)> = vec![
        (
            "d = 0",
            kernels::layer_norm_f32(&x, None, None, &mut y, 0, 1e-5),
        ),
        (
            "ragged",
            kernels::layer_norm_f32(&x, None, None, &mut y, 5, 1e-5),
        ),
        (
            "y short",
            kernels::rms_norm_f32(&x, None, None, &mut y[..6], 4, 1e-5),
        ),
        (
            "gamma",
            kernels::layer_norm_f32(&x, Some(&g3), None, &mut y, 4, 1e-5),
        ),
        (
            "beta",
            kernels::rms_norm_f32(&x, None, Some(&g3), &mut y, 4, 1e-5),
        ),
        (
            "eps < 0",
            kernels::layer_norm_f32(&x, None, None, &mut y, 4, -1e-5),
        ),
        (
            "eps NaN",
            kernels::layer_norm_f32(&x, None, None, &mut y, 4, f32::NAN),
        ),
        (
            "eps inf",
            kernels::layer_norm_f32(&x, None, None, &mut y, 4, f32::INFINITY),
        ),
        (
            "stride < d",
            normalize(
                Op::LayerNorm,
                &x,
                &mut y,
                Layout {
                    rows: 2,
                    d: 4,
                    x_stride: 3,
                    y_stride: 4,
                },
                params(1e-5),
                Options::default(),
            ),
        ),
        (
            "x short for strides",
            normalize(
                Op::LayerNorm,
                &x,
                &mut y,
                Layout {
                    rows: 3,
                    d: 4,
                    x_stride: 5,
                    y_stride: 4,
                },
                params(1e-5),
                Options::default(),
            ),
        ),
        (
            "layout overflow",
            normalize(
                Op::RmsNorm,
                &x,
                &mut y,
                Layout {
                    rows: usize::MAX,
                    d: 4,
                    x_stride: usize::MAX,
                    y_stride: 4,
                },
                params(1e-5),
                Options::default(),
            ),
        ),
    ];
    for (name, result) in cases {
        let err = result.expect_err(name);
        let text = err.to_string();
        assert!(!text.contains('\n') && text.len() > 10, "{name}: {text}");
    }
    // An instruction set this CPU lacks is a usage error.
    let missing = [Isa::Neon, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .find(|i| !i.is_available());
    if let Some(isa) = missing {
        let options = Options {
            isa: Some(isa),
            ..Options::default()
        };
        let r = normalize(
            Op::LayerNorm,
            &x,
            &mut y,
            Layout::contiguous(3, 4),
            params(1e-5),
            options,
        );
        assert!(matches!(r, Err(Error::Usage(_))), "{isa}: {r:?}");
    }
    // Nothing to do is fine, and leaves y alone.
    let mut y0 = [7.0f32; 2];
    kernels::layer_norm_f32(&[], None, None, &mut [], 4, 1e-5).unwrap();
    normalize(
        Op::LayerNorm,
        &x,
        &mut y0,
        Layout::contiguous(0, 4),
        params(1e-5),
        Options::default(),
    )
    .unwrap();
    assert_eq!(y0, [7.0; 2]);
}

/// A row holding ±∞ or NaN comes out NaN, for both ops and every dtype and path; the other
/// rows are untouched by it.
fn nonfinite_rows<T: Element>() {
    let dt = T::DTYPE;
    let d = 19;
    let poisons = [
        dt.inf_bits(),
        dt.inf_bits() | (1 << (dt.bits() - 1)),
        dt.nan_bits(),
    ];
    for isa in Isa::available() {
        for op in Op::ALL {
            for &poison in &poisons {
                let mut x: Vec<T> = (0..3 * d)
                    .map(|i| T::from_bits(dt.round_f64(i as f64 / 7.0 - 2.0)))
                    .collect();
                x[d + 11] = T::from_bits(poison);
                let mut y = vec![T::default(); 3 * d];
                let options = Options {
                    isa: Some(isa),
                    rows_per_task: Some(1),
                    stream: None,
                };
                normalize(
                    op,
                    &x,
                    &mut y,
                    Layout::contiguous(3, d),
                    params(1e-5),
                    options,
                )
                .unwrap();
                for (i, v) in y.iter().enumerate() {
                    let nan = dt.is_nan(v.to_bits());
                    assert_eq!(nan, (d..2 * d).contains(&i), "{op} {dt} {isa} at {i}");
                }
                let mut clean = y.clone();
                let x_clean: Vec<T> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if i == d + 11 { T::default() } else { *v })
                    .collect();
                normalize(
                    op,
                    &x_clean,
                    &mut clean,
                    Layout::contiguous(3, d),
                    params(1e-5),
                    options,
                )
                .unwrap();
                assert_eq!(
                    y[..d].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    clean[..d].iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }
}

#[test]
fn nonfinite_rows_are_nan_f32() {
    nonfinite_rows::<f32>();
}

#[test]
fn nonfinite_rows_are_nan_f16() {
    nonfinite_rows::<f16>();
}

#[test]
fn nonfinite_rows_are_nan_bf16() {
    nonfinite_rows::<bf16>();
}

/// Rows at the edges of the formats: huge offsets, tiny spreads, values near the largest
/// finite and the smallest subnormal, ε = 0 with a tiny variance. Every output is finite
/// where the reference is, and within one ulp of it.
fn extreme_rows<T: Element>() {
    let dt = T::DTYPE;
    let max = dt.max_finite();
    let tiny = dt.min_positive_subnormal();
    let rows: Vec<(Vec<f64>, f32)> = vec![
        (vec![max, -max, max, max / 2.0], 1e-5),
        (vec![max; 5].into_iter().chain([max / 2.0]).collect(), 0.0),
        (vec![tiny, 0.0, -tiny, 2.0 * tiny], 0.0),
        (vec![tiny, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.0),
        (
            (0..33).map(|i| 1e4 + i as f64 * dt.ulp_at(1e4)).collect(),
            0.0,
        ),
        (
            (0..33)
                .map(|i| -3e4 - (i % 2) as f64 * dt.ulp_at(3e4))
                .collect(),
            0.0,
        ),
        (
            (0..17)
                .map(|i| if i == 0 { max / 4.0 } else { tiny * i as f64 })
                .collect(),
            0.0,
        ),
        (vec![1.0, 1.0 + dt.ulp_at(1.0)], 0.0),
        (vec![1.0, 1.0 + dt.ulp_at(1.0)], 1e-5),
        (vec![65504.0, -65504.0, 0.5], 1e-5),
    ];
    for (values, eps) in rows {
        let bits: Vec<u64> = values.iter().map(|&v| dt.round_f64(v)).collect();
        let x: Vec<T> = bits.iter().map(|&b| T::from_bits(b)).collect();
        let d = x.len();
        for op in Op::ALL {
            let want = reference_of(&row_problem(op, dt, &bits, None, None, eps));
            for isa in Isa::available() {
                let mut y = vec![T::default(); d];
                let options = Options {
                    isa: Some(isa),
                    ..Options::default()
                };
                normalize(
                    op,
                    &x,
                    &mut y,
                    Layout::contiguous(1, d),
                    params(eps),
                    options,
                )
                .unwrap();
                for i in 0..d {
                    let got = y[i].to_bits();
                    if dt.is_finite(want[i]) {
                        assert!(
                            dt.is_finite(got),
                            "{op} {dt} {isa} {values:?}: {i} not finite"
                        );
                    }
                    assert!(
                        dt.ulp_distance(got, want[i]) <= 1,
                        "{op} {dt} {isa} eps={eps} {values:?}: element {i} got {} want {}",
                        dt.hex(got),
                        dt.hex(want[i])
                    );
                }
            }
        }
    }
}

#[test]
fn extreme_rows_f32() {
    extreme_rows::<f32>();
}

#[test]
fn extreme_rows_f16() {
    extreme_rows::<f16>();
}

#[test]
fn extreme_rows_bf16() {
    extreme_rows::<bf16>();
}

/// The typed entry points agree with the generic one.
#[test]
fn typed_entry_points() {
    let x: Vec<f32> = (0..24).map(|i| (i * i % 7) as f32 - 3.0).collect();
    let g: Vec<f32> = (0..8).map(|i| 1.0 + i as f32 / 8.0).collect();
    let mut a = vec![0.0f32; 24];
    let mut b = vec![0.0f32; 24];
    kernels::layer_norm_f32(&x, Some(&g), Some(&g), &mut a, 8, 1e-5).unwrap();
    kernels::layer_norm(&x, Some(&g), Some(&g), &mut b, 8, 1e-5).unwrap();
    assert_eq!(a, b);
    let xh: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let mut yh = vec![f16::ZERO; 24];
    kernels::rms_norm_f16(&xh, None, None, &mut yh, 8, 0.0).unwrap();
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let mut yb = vec![bf16::ZERO; 24];
    kernels::rms_norm_bf16(&xb, None, None, &mut yb, 8, 0.0).unwrap();
    // Small integers: RMSNorm of row 0 in f16 and bf16 round the same real numbers.
    for i in 0..8 {
        let exact = x[i] as f64 / (x[..8].iter().map(|v| (v * v) as f64).sum::<f64>() / 8.0).sqrt();
        assert!((yh[i].to_f64() - exact).abs() <= exact.abs() * 2f64.powi(-11));
        assert!((yb[i].to_f64() - exact).abs() <= exact.abs() * 2f64.powi(-8));
    }
}
