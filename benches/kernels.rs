//! divan benchmarks of the native kernels next to a memcpy of the same bytes (x read,
//! y written) and the floor (`kernels::floor`: what every kernel must do, with y through
//! the caches and streamed past them). Run with `cargo bench --bench kernels`;
//! `RAYON_NUM_THREADS` sets the pool. `normoracle bench` prints the same comparison as
//! ratios measured in one run.

use divan::counter::BytesCount;
use divan::Bencher;
use half::{bf16, f16};
use normoracle::kernels::{floor::floor, normalize, Element, Layout, Options, Params};
use normoracle::problem::Op;

fn main() {
    divan::main();
}

const SIZES: [(usize, usize); 4] = [(4096, 4096), (16384, 1024), (64, 65536), (1, 4096)];

fn inputs<T: Element>(rows: usize, d: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    let value = |i: usize, scale: f64, center: f64| {
        T::from_bits(T::DTYPE.round_f64(center + scale * ((i * 7919 % 4093) as f64 / 4093.0 - 0.5)))
    };
    (
        (0..rows * d).map(|i| value(i, 4.0, 0.5)).collect(),
        (0..d).map(|i| value(i, 0.2, 1.0)).collect(),
        (0..d).map(|i| value(i, 0.2, 0.0)).collect(),
    )
}

fn kernel<T: Element>(bencher: Bencher, op: Op, (rows, d): (usize, usize)) {
    let (x, gamma, beta) = inputs::<T>(rows, d);
    let mut y = vec![T::default(); rows * d];
    let params = Params {
        gamma: Some(&gamma),
        beta: (op == Op::LayerNorm).then_some(&beta[..]),
        eps: 1e-5,
    };
    bencher
        .counter(BytesCount::of_many::<T>(2 * rows * d))
        .bench_local(|| {
            normalize(
                op,
                &x,
                &mut y,
                Layout::contiguous(rows, d),
                params,
                Options::default(),
            )
            .unwrap()
        });
}

fn memcpy<T: Element>(bencher: Bencher, (rows, d): (usize, usize)) {
    let (x, _, _) = inputs::<T>(rows, d);
    let mut y = vec![T::default(); rows * d];
    bencher
        .counter(BytesCount::of_many::<T>(2 * rows * d))
        .bench_local(|| y.copy_from_slice(divan::black_box(&x)));
}

#[divan::bench(args = SIZES)]
fn layer_norm_f32(b: Bencher, size: (usize, usize)) {
    kernel::<f32>(b, Op::LayerNorm, size);
}

#[divan::bench(args = SIZES)]
fn rms_norm_f32(b: Bencher, size: (usize, usize)) {
    kernel::<f32>(b, Op::RmsNorm, size);
}

#[divan::bench(args = SIZES)]
fn layer_norm_f16(b: Bencher, size: (usize, usize)) {
    kernel::<f16>(b, Op::LayerNorm, size);
}

#[divan::bench(args = SIZES)]
fn rms_norm_f16(b: Bencher, size: (usize, usize)) {
    kernel::<f16>(b, Op::RmsNorm, size);
}

#[divan::bench(args = SIZES)]
fn layer_norm_bf16(b: Bencher, size: (usize, usize)) {
    kernel::<bf16>(b, Op::LayerNorm, size);
}

#[divan::bench(args = SIZES)]
fn rms_norm_bf16(b: Bencher, size: (usize, usize)) {
    kernel::<bf16>(b, Op::RmsNorm, size);
}

fn floor_of<T: Element>(bencher: Bencher, (rows, d): (usize, usize), stream: bool) {
    let (x, _, _) = inputs::<T>(rows, d);
    let mut y = vec![T::default(); rows * d];
    bencher
        .counter(BytesCount::of_many::<T>(2 * rows * d))
        .bench_local(|| {
            floor(&x, &mut y, Layout::contiguous(rows, d), None, Some(stream)).unwrap()
        });
}

#[divan::bench(args = SIZES)]
fn floor_cached_f32(b: Bencher, size: (usize, usize)) {
    floor_of::<f32>(b, size, false);
}

#[divan::bench(args = SIZES)]
fn floor_streamed_f32(b: Bencher, size: (usize, usize)) {
    floor_of::<f32>(b, size, true);
}

#[divan::bench(args = SIZES)]
fn floor_cached_f16(b: Bencher, size: (usize, usize)) {
    floor_of::<f16>(b, size, false);
}

#[divan::bench(args = SIZES)]
fn floor_streamed_f16(b: Bencher, size: (usize, usize)) {
    floor_of::<f16>(b, size, true);
}

#[divan::bench(args = SIZES)]
fn memcpy_f32(b: Bencher, size: (usize, usize)) {
    memcpy::<f32>(b, size);
}

#[divan::bench(args = SIZES)]
fn memcpy_f16(b: Bencher, size: (usize, usize)) {
    memcpy::<f16>(b, size);
}
