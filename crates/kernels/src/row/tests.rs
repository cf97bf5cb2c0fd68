use super::output::*;
use super::params::*;
use super::statistics::*;
use super::*;
use crate::problem::Op;

/// The report layout of the output loop, for a format storing one vector at a time
/// (f32) and one storing pairs (f16), over rows of 0 to 40 vectors: every vector is
/// reported on by exactly one byte of the loop's `Reports::bytes`, the byte its
/// store's report is OR-ed into (group j / 8, the vector's place in its store), and
/// `record` writes each report's bytes there, the first place's low, a last group of
/// one vector's in one byte.
#[test]
fn reports_cover_every_vector_once_where_recorded() {
    fn check<T: Element>() {
        let (per_store, group) = (Reports::<T>::PER_STORE, Reports::<T>::GROUP);
        assert_eq!(group, 8, "{:?}", T::DTYPE);
        for len in 0..=40usize {
            let bytes = Reports::<T>::bytes(len);
            let mut covering = vec![Vec::new(); len];
            for i in 0..bytes {
                let vectors: Vec<usize> = Reports::<T>::vectors(i, len).collect();
                assert!(!vectors.is_empty(), "{:?} len {len}: byte {i}", T::DTYPE);
                for j in vectors {
                    covering[j].push(i);
                }
            }
            for (j, bytes_of_j) in covering.iter().enumerate() {
                let recorded = j / group * per_store + j % group % per_store;
                assert_eq!(
                    bytes_of_j,
                    &[recorded],
                    "{:?} len {len}: vector {j}",
                    T::DTYPE
                );
            }
            let mut flags = vec![0u8; bytes];
            for q in 0..len.div_ceil(group) {
                Reports::<T>::record(&mut flags, q, 0xa5c3);
            }
            let want: Vec<u8> = (0..bytes)
                .map(|i| if i % per_store == 0 { 0xc3 } else { 0xa5 })
                .collect();
            assert_eq!(flags, want, "{:?} len {len}", T::DTYPE);
        }
    }
    check::<f32>();
    check::<half::f16>();
}

/// The statistics pass requests the next row for rows on the 16-bit formats' f32 path
/// only (where the caller says so: `f32_path::path_format`, whose widths
/// `the_path_starts_at_its_width_per_instruction_set_format_and_cpu` checks), and takes
/// the request from the row.
#[test]
fn the_statistics_pass_requests_the_next_row_of_the_f32_path_only() {
    use half::f16;
    // Taken from the row, so that its output loop requests nothing more; a last row
    // (no next one) requests nothing, nor does a row off the path.
    let (x, next) = (vec![f16::ONE; 16385], vec![f16::ZERO; 16385]);
    let mut y = vec![f16::ZERO; 16385];
    let mut row = Row {
        x: &x,
        next: &next,
        after_next: &[],
        y: &mut y,
    };
    let request = requested_by_statistics(&mut row, true);
    assert_eq!(request, Some(next.as_ptr() as *const u8));
    assert!(row.next.is_empty());
    assert_eq!(requested_by_statistics(&mut row, true), None);
    let (x32, next32) = (vec![1.0f32; 16385], vec![0.0f32; 16385]);
    let mut y32 = vec![0.0f32; 16385];
    let mut row = Row {
        x: &x32,
        next: &next32,
        after_next: &[],
        y: &mut y32,
    };
    assert_eq!(requested_by_statistics(&mut row, false), None);
    assert_eq!(row.next.len(), 16385);
}

/// Every nonzero flag is found, in order, whatever its place in its word (several in
/// one word included) and in the bytes after the last whole word; `out` is cleared.
#[test]
fn flagged_vectors_finds_every_set_flag_in_order() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..40 {
        for density in [1, 3, 8] {
            let flags: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if state % 8 < density {
                        (state >> 32) as u8 | 1
                    } else {
                        0
                    }
                })
                .collect();
            let want: Vec<u32> = (0..len as u32)
                .filter(|&j| flags[j as usize] != 0)
                .collect();
            let mut got = vec![7, 7];
            flagged_vectors(&flags, &mut got);
            assert_eq!(got, want, "flags {flags:?}");
        }
    }
}
use crate::simd::Scalar;
use rug::Rational;

/// The exact mean and variance of a row, as rationals.
fn exact_moments(x: &[f32]) -> (Rational, Rational) {
    let d = Rational::from(x.len() as u64);
    let xs: Vec<Rational> = x
        .iter()
        .map(|&v| Rational::from_f64(v as f64).unwrap())
        .collect();
    let mean: Rational = xs.iter().sum::<Rational>() / &d;
    let sq: Rational = xs.iter().map(|v| Rational::from(v - &mean).square()).sum();
    (mean, sq / d)
}

/// The exact variance of a row, as a rational.
fn exact_var(x: &[f32]) -> Rational {
    exact_moments(x).1
}

/// d values offset + spread·t, t spread over (−0.5, 0.5) by a fixed stride (never 0).
fn spread_row(d: usize, offset: f32, spread: f32) -> Vec<f32> {
    (0..d)
        .map(|i| offset + spread * ((i * 7919 % 1013) as f32 / 1013.0 - 0.5))
        .collect()
}

/// A row of d values whose first sixteen (those the first shift is taken from) are
/// `high`, the rest `spread_row(d, 0, spread)`'s.
fn lopsided_row(d: usize, high: f32, spread: f32) -> Vec<f32> {
    let mut x = spread_row(d, 0.0, spread);
    x[..16].fill(high);
    x
}

/// 4096 values ±1.7 around `offset` (σ ≈ 0.98), the first eight ±2 (mean 0, range 4).
fn straddling_head_row(offset: f32) -> Vec<f32> {
    let mut x = spread_row(4096, offset, 3.4);
    for (i, v) in x[..8].iter_mut().enumerate() {
        *v = [2.0, -2.0][i % 2];
    }
    x
}

/// Rows whose first sixteen values (those the first shift is taken from) are far from
/// the rest: the shift must move once, and the variance stays accurate to the bound of
/// the accepted pass.
#[test]
fn lopsided_rows_move_the_shift_once() {
    for (d, high, spread) in [
        (256usize, 1e3f32, 1.0f32),
        (4096, 4096.0, 0.5),
        (40000, 1e6, 3.0),
    ] {
        let x = lopsided_row(d, high, spread);
        let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
        assert_eq!(stats.passes, 2, "d={d}");
        // The same when the first pass was made beside the previous row's output loop:
        // that pass is judged as the pass alone is, and rejected.
        let next = NextShifted {
            x: &x,
            shift: first_shift(Scalar, &x),
        };
        let (sum, sum_sq) = next.finish(Scalar, next.start(Scalar), 0);
        let first = Some((next.shift, sum, sum_sq));
        let after = layer_norm_stats_after(Scalar, &x, &mut [], None, first).unwrap();
        assert_eq!(format!("{after:?}"), format!("{stats:?}"), "d={d}");
        let m2 = stats.mean_shifted * stats.mean_shifted;
        assert!(m2 <= 8.0 * stats.var, "d={d}: {stats:?}");
        let exact = exact_var(&x);
        let err = (Rational::from_f64(stats.var).unwrap() - &exact).abs();
        // 27·γ_n with n = d/16 + 4 terms per partial sum, u = 2^-53.
        let bound =
            exact * Rational::from_f64(27.0 * (d as f64 / 16.0 + 8.0) * 2f64.powi(-53)).unwrap();
        assert!(
            err <= bound,
            "d={d}: variance error {} > bound {}",
            err.to_f64(),
            bound.to_f64()
        );
    }
}

/// Rows whose first eight values straddle zero start from shift 0, and keep it where
/// the mean is within σ of zero; where it is not, the pass with shift 0 is rejected
/// (it would lose up to a factor 9 to cancellation) and repeated at the mean.
#[test]
fn the_shift_is_zero_only_for_rows_near_zero() {
    let d = 4096;
    let row = straddling_head_row;
    for offset in [0.0f32, 0.5, -0.9] {
        let stats = layer_norm_stats(Scalar, &row(offset), &mut [], None).unwrap();
        assert_eq!((stats.shift, stats.passes), (0.0, 1), "offset {offset}");
    }
    for offset in [1.5f32, -2.5, 100.0] {
        let x = row(offset);
        let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
        assert_eq!(stats.passes, 2, "offset {offset}: {stats:?}");
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        assert!((stats.shift - mean).abs() < 1e-3, "{stats:?}");
        let exact = exact_var(&x);
        let err = (Rational::from_f64(stats.var).unwrap() - &exact).abs();
        assert!(
            err < exact * Rational::from_f64(1e-14).unwrap(),
            "{stats:?}"
        );
    }
    // A head far from zero beside its range keeps its mean as the first shift.
    let x: Vec<f32> = (0..d).map(|i| 10.0 + (i % 5) as f32).collect();
    assert_eq!(first_shift(Scalar, &[10.0f32, 11.0, 12.0, 13.0]), 11.5);
    assert_eq!(first_shift(Scalar, &[10.0f32; 16]), 10.0);
    // Mean 0.45, within the spread (mean square deviation 2.63).
    assert_eq!(first_shift(Scalar, &[0.3f32, -2.0, 2.5, 1.0]).to_bits(), 0);
    let wide: Vec<f32> = (0..20).map(|i| [0.3, -2.0, 2.5, 1.0][i % 4]).collect();
    assert_eq!(first_shift(Scalar, &wide).to_bits(), 0);
    let far: Vec<f32> = wide.iter().map(|v| v + 2.0).collect();
    assert_eq!(first_shift(Scalar, &far), 2.45f32 as f64);
    assert_eq!(
        layer_norm_stats(Scalar, &x, &mut [], None).unwrap().passes,
        1
    );
}

/// The statistics pass's decisions compare m² with a multiple of the variance, so they
/// do not depend on the row's scale: a row scaled by a power of two (exact in f32)
/// takes the same passes, and its statistics are the unscaled ones scaled exactly
/// (shift and mean by k, variance by k²). Rows of tiny spread are where a test that
/// compared m² with the variance plus a constant, or divided by it, would accept a
/// pass it must reject (both were cargo-mutants survivors of the two tests above).
#[test]
fn the_statistics_pass_does_not_depend_on_the_row_scale() {
    // Near zero and off it, with shift 0 accepted or rejected (the rows of
    // `the_shift_is_zero_only_for_rows_near_zero`); lopsided heads, whose shifted
    // first pass is rejected (as in `lopsided_rows_move_the_shift_once`); and an
    // ordinary row far from zero.
    let mut rows: Vec<Vec<f32>> = [0.0f32, 0.5, -0.9, 1.5, -2.5, 100.0]
        .into_iter()
        .map(straddling_head_row)
        .collect();
    rows.push(lopsided_row(256, 1e3, 1.0));
    rows.push(lopsided_row(4096, 1.0, 0.5));
    rows.push(spread_row(1000, 10.0, 1.0));
    for x in &rows {
        let at_one = layer_norm_stats(Scalar, x, &mut [], None).unwrap();
        for k in [2f32.powi(-12), 2f32.powi(12)] {
            let scaled: Vec<f32> = x.iter().map(|v| v * k).collect();
            let stats = layer_norm_stats(Scalar, &scaled, &mut [], None).unwrap();
            let k = k as f64;
            assert_eq!(
                (stats.passes, stats.shift, stats.mean_shifted, stats.var),
                (
                    at_one.passes,
                    at_one.shift * k,
                    at_one.mean_shifted * k,
                    at_one.var * k * k
                ),
                "d={} k={k}: at scale 1 {at_one:?}",
                x.len()
            );
        }
    }
}

/// [`first_shift`] against its definition, decided exactly: h is the mean of the
/// row's first min(d, 16) values and s the mean of their squared deviations from h;
/// the shift is 0 where h² ≤ s, else h rounded to the row's format. Rows of 1 to 40
/// values (both of its branches: the scalar one below sixteen), h²/s from about 10^-3
/// to 10^3, scales from 2^-20 to 2^20. Rows within 10^-6 of h² = s, where the f64
/// sums may decide either way, are skipped. (Six mutations survived the hand-picked
/// rows before this test: the short rows' spread with `/ n` as `* n` or `% n`, a `-`
/// or the `*` as `/`, and the test's `mean * mean` as `mean + mean`. A `-` as `+` is
/// the same spread up to rounding: Σ(v + h)(v − h) = Σv² − n·h² = Σ(v − h)².)
#[test]
fn the_first_shift_follows_its_definition() {
    let mut rng = crate::rng::Rng::new(11, 0);
    let mut decided = [0usize; 2];
    for _ in 0..4000 {
        let d = 1 + rng.below(40);
        let scale = 2f64.powi(rng.below(41) as i32 - 20);
        let sign = if rng.coin() { 1.0 } else { -1.0 };
        let offset = sign * 10f64.powf(3.0 * rng.uniform() - 1.5);
        let x: Vec<f32> = (0..d)
            .map(|_| ((offset + rng.normal()) * scale) as f32)
            .collect();
        let (mean, spread) = exact_moments(&x[..d.min(16)]);
        let square = mean.clone().square();
        let margin = Rational::from(&square - &spread).abs();
        if margin <= Rational::from_f64(1e-6).unwrap() * Rational::from(&square + &spread) {
            continue;
        }
        let shift = first_shift(Scalar, &x);
        if square <= spread {
            assert_eq!(shift.to_bits(), 0, "{x:?}");
            decided[0] += 1;
        } else {
            // h rounded to f32: within half an f32 unit of h (the f64 sums add a
            // negligible error), so within one.
            let h = mean.to_f64();
            let unit = (h.abs() as f32).next_up() as f64 - (h.abs() as f32) as f64;
            assert!(
                (shift - h).abs() <= unit,
                "shift {shift} for h = {h}: {x:?}"
            );
            decided[1] += 1;
        }
    }
    assert!(decided.iter().all(|&k| k > 800), "{decided:?}");
}

/// The next row's statistics, folded beside an output loop a group of eight vectors
/// at a time ([`NextShifted`], [`NextSquares`]), are the bits of the pass alone
/// ([`ShiftedPass`], [`SquaresPass`]) for every width: blocks closed inside the loop
/// and after it, odd last vectors, partial tails, rows of no whole vector. The values
/// span 2^±24, so that a sum folded in another order rounds otherwise. Shift +0 is
/// subtracted beside the loop and left out alone (the same bits).
#[test]
fn statistics_beside_the_output_loop_are_those_of_the_pass_alone() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    // 1744, 1792 and 1807 end in a partial block (13 or 16 pairs) after 27 or 28 whole
    // groups, which pairs miscounted as 4 + groups + the rest would call whole and
    // leave unclosed.
    let widths = (0..=140).chain([
        255, 256, 257, 511, 512, 513, 527, 1031, 1744, 1792, 1807, 4096, 4109,
    ]);
    for d in widths {
        let x: Vec<f32> = (0..d)
            .map(|_| {
                let r = next();
                let m = (r & 0xffff) as f32 / 65536.0 + 0.5;
                let e = ((r >> 16) % 49) as i32 - 24;
                let sign = if r >> 31 == 1 { -1.0 } else { 1.0 };
                sign * m * 2f32.powi(e)
            })
            .collect();
        // The output loop's whole groups (eight vectors each) of a row of width d.
        let whole = d / 8 / 8;
        for shift in [0.0, on_grid::<f32>(0.37), first_shift(Scalar, &x)] {
            let alone = shifted_sums(Scalar, &x, shift);
            let beside = NextShifted { x: &x, shift };
            for from in [whole, 0] {
                let mut state = beside.start(Scalar);
                for q in 0..from {
                    beside.group(Scalar, &mut state, q);
                }
                let got = beside.finish(Scalar, state, from);
                assert_eq!(
                    (got.0.to_bits(), got.1.to_bits()),
                    (alone.0.to_bits(), alone.1.to_bits()),
                    "d={d} shift={shift} groups in the loop {from}: {got:?} {alone:?}"
                );
            }
        }
        let alone = sum_of_squares(Scalar, &x);
        let beside = NextSquares { x: &x };
        let mut state = beside.start(Scalar);
        for q in 0..whole {
            beside.group(Scalar, &mut state, q);
        }
        let got = beside.finish(Scalar, state, whole);
        assert_eq!(got.to_bits(), alone.to_bits(), "d={d}: {got} {alone}");
    }
}

/// A row hands the next row its first statistics pass exactly where
/// [`fuses_next_statistics`] allows it (a next row, y cached, not widened once), equal
/// bit for bit to the pass alone on that row; and a row given such sums starts from
/// them: its own sums give its output alone, another row's sums change it. (The output
/// bits of a batch cannot show whether the pass ran beside: that is what this checks.)
#[test]
fn rows_hand_the_next_row_its_first_pass_where_the_rule_allows() {
    let d = 1031;
    let row = |k: usize| -> Vec<f32> {
        (0..d)
            .map(|i| ((i * 7919 + k * 101) % 1013) as f32 / 1013.0 - 0.3 + k as f32)
            .collect()
    };
    let (x0, x1, x2) = (row(0), row(1), row(2));
    for op in Op::ALL {
        let params = |stream, widen_once| RowParams::<f64> {
            op,
            gamma: &[],
            beta: &[],
            eps: 1e-5,
            stream,
            widen_once,
            params_max: ParamsMax::NONE,
        };
        let run = |p: &RowParams<'_, f64>, x: &[f32], next: &[f32], ahead| {
            let mut y = vec![0.0f32; d];
            let row = Row {
                x,
                next,
                after_next: &x2,
                y: &mut y,
            };
            let mut scratch = Scratch::default();
            let handed = match op {
                Op::LayerNorm => {
                    layer_norm_row::<_, f32, f64, false, false>(Scalar, row, p, &mut scratch, ahead)
                }
                Op::RmsNorm => {
                    rms_norm_row::<_, f32, f64, false, false>(Scalar, row, p, &mut scratch, ahead)
                }
            };
            (handed.map(|a| format!("{a:?}")), y)
        };
        // The first pass alone on a row, as a row would hand it on.
        let first_pass = |x: &[f32]| match op {
            Op::LayerNorm => {
                let shift = first_shift(Scalar, x);
                let (sum, sum_sq) = shifted_sums(Scalar, x, shift);
                Ahead::Shifted { shift, sum, sum_sq }
            }
            Op::RmsNorm => Ahead::Squares(sum_of_squares(Scalar, x)),
        };
        let cached = params(false, false);
        let want = format!("{:?}", first_pass(&x1));
        assert_eq!(run(&cached, &x0, &x1, None).0, Some(want), "{op}");
        for (p, next, why) in [
            (params(true, false), &x1[..], "y streamed"),
            (params(false, true), &x1[..], "widened once"),
            (params(false, false), &[][..], "no next row"),
        ] {
            assert_eq!(run(&p, &x0, next, None).0, None, "{op}: {why}");
        }
        let (_, alone) = run(&cached, &x1, &[], None);
        let (_, own) = run(&cached, &x1, &[], Some(first_pass(&x1)));
        let (_, other) = run(&cached, &x1, &[], Some(first_pass(&x0)));
        let bits = |y: &[f32]| y.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&own), bits(&alone), "{op}");
        assert_ne!(bits(&other), bits(&alone), "{op}");
    }
}

/// Ordinary rows are done in one pass, including constant ones.
#[test]
fn ordinary_rows_take_one_pass() {
    let x: Vec<f32> = (0..1000).map(|i| 1e5 + ((i * 31) % 17) as f32).collect();
    assert_eq!(
        layer_norm_stats(Scalar, &x, &mut [], None).unwrap().passes,
        1
    );
    let c = [3.25f32; 9];
    let stats = layer_norm_stats(Scalar, &c, &mut [], None).unwrap();
    assert_eq!((stats.passes, stats.var, stats.mean_shifted), (1, 0.0, 0.0));
    assert!(layer_norm_stats(Scalar, &[1.0, f32::INFINITY], &mut [], None).is_none());
}
