//! The native kernels give the same bits whatever the instruction set, thread count, split
//! of rows among tasks, streaming stores or row strides.

use crate::common::Gen;
use half::{bf16, f16};
use normoracle::kernels::{normalize, Element, Isa, Layout, Options, Params};
use normoracle::problem::Op;

/// Rows × d values of a mix of families, as `T`.
fn data<T: Element>(rows: usize, d: usize, seed: u64) -> Vec<T> {
    let mut g = Gen::new(T::DTYPE, seed);
    let families = ["standard", "offset", "wide", "ulps", "integers"];
    (0..rows)
        .flat_map(|r| g.values(families[r % families.len()], d))
        .map(T::from_bits)
        .collect()
}

fn run<T: Element>(
    op: Op,
    x: &[T],
    layout: Layout,
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    options: Options,
    threads: usize,
) -> Vec<u64> {
    // y pre-filled with a sentinel so that writes outside the rows show.
    let sentinel = T::from_bits(0x1234);
    let mut y = vec![sentinel; (layout.rows - 1) * layout.y_stride + layout.d + 3];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let params = Params {
        gamma,
        beta,
        eps: 1e-5,
    };
    pool.install(|| normalize(op, x, &mut y, layout, params, options))
        .unwrap();
    for r in 0..layout.rows {
        let gap_end = if r + 1 < layout.rows {
            (r + 1) * layout.y_stride
        } else {
            y.len()
        };
        for v in &y[r * layout.y_stride + layout.d..gap_end] {
            assert_eq!(v.to_bits(), 0x1234, "a write outside row {r}");
        }
    }
    (0..layout.rows)
        .flat_map(|r| y[r * layout.y_stride..r * layout.y_stride + layout.d].to_vec())
        .map(Element::to_bits)
        .collect()
}

fn check_dtype<T: Element>() {
    for (rows, d) in [
        (37, 1),
        (29, 7),
        (23, 8),
        (19, 9),
        (13, 100),
        // On Zen 4 with AVX-512, bf16's f32 path (from 1024) and f16's (from 2048); the
        // f64 path elsewhere.
        (11, 1027),
        (5, 2053),
        // The 16-bit formats' f32 path on AVX-512, their f64 path elsewhere: the same bits.
        (3, 4099),
        // Wider than 16384: the 16-bit formats' f32 path.
        (2, 16411),
    ] {
        let x = data::<T>(rows, d, 100 + d as u64);
        let p = |seed| {
            let mut g = Gen::new(T::DTYPE, seed);
            g.values("standard", d)
                .into_iter()
                .map(T::from_bits)
                .collect::<Vec<T>>()
        };
        let (gamma, beta) = (p(1), p(2));
        for op in Op::ALL {
            for (g, b) in [
                (None, None),
                (Some(&gamma[..]), Some(&beta[..])),
                (Some(&gamma[..]), None),
            ] {
                let contiguous = Layout::contiguous(rows, d);
                let base = run(op, &x, contiguous, g, b, Options::default(), 1);
                for isa in Isa::available() {
                    for rows_per_task in [Some(1), Some(4), None] {
                        for stream in [Some(false), Some(true)] {
                            let options = Options {
                                isa: Some(isa),
                                rows_per_task,
                                stream,
                            };
                            for threads in [1, 3] {
                                let got = run(op, &x, contiguous, g, b, options, threads);
                                assert_eq!(
                                    got,
                                    base,
                                    "{op} {} {rows}x{d} {options:?} threads={threads}",
                                    T::DTYPE
                                );
                            }
                        }
                    }
                    // The same rows at strides with gaps, some rows misaligned.
                    let layout = Layout {
                        rows,
                        d,
                        x_stride: d + 5,
                        y_stride: d + 3,
                    };
                    let mut xs = vec![T::from_bits(0x3c00); (rows - 1) * layout.x_stride + d];
                    for r in 0..rows {
                        xs[r * layout.x_stride..r * layout.x_stride + d]
                            .copy_from_slice(&x[r * d..(r + 1) * d]);
                    }
                    let options = Options {
                        isa: Some(isa),
                        rows_per_task: Some(2),
                        stream: Some(true),
                    };
                    assert_eq!(
                        run(op, &xs, layout, g, b, options, 2),
                        base,
                        "strided {isa}"
                    );
                }
            }
        }
    }
}

#[test]
fn f32_bits_do_not_depend_on_how_it_runs() {
    check_dtype::<f32>();
}

#[test]
fn f16_bits_do_not_depend_on_how_it_runs() {
    check_dtype::<f16>();
}

#[test]
fn bf16_bits_do_not_depend_on_how_it_runs() {
    check_dtype::<bf16>();
}

/// More than one instruction set is compared on x86-64 machines with AVX2 (the test above
/// is only as strong as the set of paths it sees).
#[test]
#[cfg(target_arch = "x86_64")]
fn several_paths_are_compared_here() {
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        assert!(Isa::available().len() >= 2, "{:?}", Isa::available());
    }
}

/// f32 rows in calls of several rows that write y through the caches have each row's first
/// statistics pass made beside the previous row's output loop; rows one per task make
/// every pass alone. The same bits
/// either way, on every path: rows whose first pass is rejected (a head far from the rest,
/// the shift moved once; a head around zero beside a mean that is not), rows holding ±∞
/// or NaN (written as NaN, the next row's pass made alone again) between finite ones, and
/// widths with and without whole blocks, odd vectors and tails.
#[test]
fn statistics_made_beside_the_previous_row_give_the_same_bits() {
    let row = |kind: usize, d: usize| -> Vec<f32> {
        (0..d)
            .map(|i| {
                let wobble = ((i * 7919 + kind * 13) % 1013) as f32 / 1013.0 - 0.5;
                match kind % 6 {
                    // The first sixteen far from the rest: the first pass is rejected.
                    0 if i < 16 => 1e3,
                    0 => wobble,
                    // A head straddling zero, the rest around 100: shift 0 rejected.
                    1 if i < 8 => [2.0, -2.0][i % 2],
                    1 => 100.0 + 3.4 * wobble,
                    2 if i == d / 2 => f32::NAN,
                    3 if i == d - 1 => f32::INFINITY,
                    4 => 1e6 + 8.0 * wobble,
                    _ => 3.0 * wobble,
                }
            })
            .collect()
    };
    let gamma: Vec<f32> = (0..4109).map(|i| 0.5 + (i % 7) as f32 / 8.0).collect();
    let beta: Vec<f32> = (0..4109).map(|i| (i % 5) as f32 / 4.0 - 0.5).collect();
    for d in [1, 8, 16, 17, 100, 512, 1027, 4096, 4109] {
        let rows = 14;
        let x: Vec<f32> = (0..rows).flat_map(|r| row(r * 5 % 7, d)).collect();
        assert!(x.iter().any(|v| v.is_nan()) && x.iter().any(|v| v.is_infinite()));
        let layout = Layout::contiguous(rows, d);
        for op in Op::ALL {
            for (g, b) in [(None, None), (Some(&gamma[..d]), Some(&beta[..d]))] {
                for isa in Isa::available() {
                    // y cached: streamed calls make every pass alone.
                    let options = |rows_per_task| Options {
                        isa: Some(isa),
                        rows_per_task,
                        stream: Some(false),
                    };
                    let alone = run(op, &x, layout, g, b, options(Some(1)), 1);
                    let beside = run(op, &x, layout, g, b, options(None), 1);
                    assert_eq!(beside, alone, "{op} {isa} {rows}x{d}");
                    // The rows holding NaN or ∞ (kinds 2 and 3) come out as NaN.
                    for r in (0..rows).filter(|r| [2, 3].contains(&(r * 5 % 7))) {
                        let y = &beside[r * d..(r + 1) * d];
                        assert!(y.iter().all(|&v| f32::from_bits(v as u32).is_nan()));
                    }
                }
            }
        }
    }
}
