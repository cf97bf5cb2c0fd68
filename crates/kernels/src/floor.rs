//! The bench's floor: a kernel that does only what every LayerNorm and RMSNorm kernel must
//! do, timed beside ours so that each speed target can be set against the most that any
//! kernel could reach on the machine that measures it.
//!
//! Every output of a normalization depends on every input of its row (through the mean or
//! the mean square), so no y of a row can be written before the whole row has been read.
//! A kernel therefore reads each row to its end, then reads it again (from cache) as it
//! writes y: a row of 4096 f32 is 16 KiB, AVX-512's 32 vector registers hold 2 KiB. The
//! floor does that and nothing else:
//! * one pass that reduces the row to one number (the sum of x, in sixteen f32 lanes and
//!   four independent sums, so that it runs at the speed of the loads);
//! * one pass that writes y = x − sum, one operation per sixteen values, in the row's own
//!   format (the 16-bit formats widened and rounded by the same instructions as the f32
//!   path's);
//! * the kernels' task split (rows never split, `VALUES_PER_TASK` values a task)
//!   and instruction set; y through the caches or streamed past them, as asked (by
//!   default as the kernels store it). The bench times both and keeps the faster in each
//!   round, so that the floor bounds a kernel of either store policy.
//!
//! It reads no γ or β, computes no variance, takes no care of accuracy: its y is not a
//! normalization. What it measures is the time of its memory traffic and loop overhead,
//! which a real kernel adds its arithmetic to. So its ratio to a memcpy of the same bytes
//! bounds every kernel's ratio on that machine, in that run; where the floor itself is
//! below a target, no kernel can meet it there. (Its loops are as plain as a loop can be;
//! a kernel that overlapped one row's reads with another's writes better than the
//! hardware does on its own could in principle beat it, which `bench` would show as a
//! `vs_floor` above 1. A row split between threads is slower, not faster, at the widths
//! where the floor is below the targets: `examples/row_split.rs`.)
//!
//! Why the single row is the case that shows it: in L1, a memcpy of a row is bound by its
//! stores, while the floor must load the whole row before its first store. On a core that
//! loads twice as many bytes a cycle as it stores (Zen 4: two 32-byte loads and one
//! 32-byte store a cycle; Intel's Skylake server cores, Cascade Lake among them: two
//! 64-byte loads and one 64-byte store), the first pass adds half of the stores' time, so
//! the floor takes at least 1.5 times the memcpy's: at most 2/3 of its speed (measured on
//! Zen 4: docs/speed.md, "Zen 4, a fifth campaign").

use super::{cpu, Vectorized};
use super::{in_tasks, rows_per_task, streams_by_default, Element, Isa, Layout, Token};
use crate::error::Result;
use crate::simd::Simd;

/// The floor's y for every row of x (see the module comment): y = x − (the row's sum),
/// on the instruction set `isa` (fastest where `None`), y streamed as the kernels stream
/// it where `stream` is `None`. Errors on a layout the buffers do not hold and on an
/// unavailable instruction set.
pub fn floor<T: Element>(
    x: &[T],
    y: &mut [T],
    layout: Layout,
    isa: Option<Isa>,
    stream: Option<bool>,
) -> Result<()> {
    layout.validate(x.len(), y.len())?;
    let token = Token::new(isa.unwrap_or_else(Isa::detect))?;
    if layout.rows == 0 {
        return Ok(());
    }
    let stream =
        stream.unwrap_or_else(|| streams_by_default(T::DTYPE, layout, cpu::Class::detect()));
    let x = &x[..layout.extent(layout.x_stride)];
    let y = &mut y[..layout.extent(layout.y_stride)];
    let task = |first_row: usize, y_rows: &mut [T]| {
        token.vectorize(FloorRows {
            x: &x[first_row * layout.x_stride..],
            y: y_rows,
            layout,
            stream,
        })
    };
    in_tasks(y, layout, rows_per_task(None, layout.d), task);
    Ok(())
}

/// A run of consecutive rows, `x` and `y` from the first one.
struct FloorRows<'a, T> {
    x: &'a [T],
    y: &'a mut [T],
    layout: Layout,
    stream: bool,
}

impl<T: Element> Vectorized for FloorRows<'_, T> {
    type Output = ();
    const AVX512_BF16: bool = T::AVX512_BF16;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let Layout {
            d,
            x_stride,
            y_stride,
            ..
        } = self.layout;
        let rows = self.y.len().div_ceil(y_stride);
        for r in 0..rows {
            let y = &mut self.y[r * y_stride..r * y_stride + d];
            floor_row(s, &self.x[r * x_stride..r * x_stride + d], y, self.stream);
        }
        if self.stream {
            s.fence();
        }
    }
}

/// One row: its sum, then y = x − sum.
#[inline(always)]
fn floor_row<S: Simd, T: Element>(s: S, x: &[T], y: &mut [T], stream: bool) {
    let sum = row_sum(s, x);
    write_row(s, x, y, s.f32x16_splat(sum), stream);
}

/// How many values of a row at `p` come before its first block of sixteen that starts on a
/// multiple of the block's size (64 bytes for f32, 32 for the 16-bit formats), where no
/// access to the block crosses a cache line; at most `len`. Rows of a `Vec` are often 16
/// bytes past a line: there a row of 4096 f32 in L1 took up to 2.3 times as long, with
/// every other access split over two lines (`benches/loop_model/floor.c`).
#[inline(always)]
fn unaligned_head<T>(p: *const T, len: usize) -> usize {
    let size = std::mem::size_of::<T>();
    ((p as usize).wrapping_neg() % (16 * size) / size).min(len)
}

/// A block of sixteen holding `part` (at most sixteen values), then zeros. Element by
/// element: a copy of the slice called `memcpy`, four calls a row.
#[inline(always)]
fn padded<T: Element>(part: &[T]) -> [T; 16] {
    let mut block = [T::default(); 16];
    for (slot, v) in block.iter_mut().zip(part) {
        *slot = *v;
    }
    block
}

/// The sum of the row in f32 lanes, four sums of sixteen (the padding adds nothing), its
/// blocks aligned on x.
#[inline(always)]
fn row_sum<S: Simd, T: Element>(s: S, x: &[T]) -> f32 {
    let (head, body) = x.split_at(unaligned_head(x.as_ptr(), x.len()));
    let (blocks, tail) = body.as_chunks::<16>();
    let zero = s.f32x16_splat(0.0);
    let mut sums = [zero; 4];
    let (quads, rest) = blocks.as_chunks::<4>();
    for quad in quads {
        for (sum, block) in sums.iter_mut().zip(quad) {
            *sum = s.f32x16_add(*sum, T::load16(s, block));
        }
    }
    for (sum, block) in sums.iter_mut().zip(rest) {
        *sum = s.f32x16_add(*sum, T::load16(s, block));
    }
    sums[0] = s.f32x16_add(sums[0], T::load16(s, &padded(head)));
    sums[1] = s.f32x16_add(sums[1], T::load16(s, &padded(tail)));
    let total = s.f32x16_add(
        s.f32x16_add(sums[0], sums[1]),
        s.f32x16_add(sums[2], sums[3]),
    );
    let mut lanes = [0.0f32; 16];
    s.f32x16_store_f32(total, &mut lanes, false);
    lanes.iter().sum()
}

/// y = x − sum, its blocks aligned on y (stores that cross a line cost more than loads).
#[inline(always)]
fn write_row<S: Simd, T: Element>(s: S, x: &[T], y: &mut [T], sum: S::F32x16, stream: bool) {
    let head = unaligned_head(y.as_ptr(), y.len());
    let (x_head, x_body) = x.split_at(head);
    let (y_head, y_body) = y.split_at_mut(head);
    let (blocks, x_tail) = x_body.as_chunks::<16>();
    let (y_blocks, y_tail) = y_body.as_chunks_mut::<16>();
    for (out, block) in y_blocks.iter_mut().zip(blocks) {
        T::store16(s, s.f32x16_sub(T::load16(s, block), sum), out, stream);
    }
    for (part, values) in [(y_head, x_head), (y_tail, x_tail)] {
        if !part.is_empty() {
            let mut out = [T::default(); 16];
            T::store16(
                s,
                s.f32x16_sub(T::load16(s, &padded(values)), sum),
                &mut out,
                false,
            );
            for (slot, v) in part.iter_mut().zip(out) {
                *slot = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// The floor reads every value of each row and writes every value: with rows of ones
    /// but for one value 64 (sums of small integers, exact in any order, so every
    /// instruction set gives them), each y is x minus its own row's exact sum, wherever
    /// the 64 lies (blocks, the tail), over widths with and without a tail, batches that
    /// run in several tasks, strides, and both store policies.
    fn every_value_is_read_and_written<T: Element>() {
        let dtype = T::DTYPE;
        let value = |v: f64| T::from_bits(dtype.round_f64(v));
        let real = |t: T| dtype.to_f64(t.to_bits());
        for isa in Isa::available() {
            for d in [1, 15, 16, 17, 64, 65, 100] {
                for stride_pad in [0, 3] {
                    for stream in [false, true] {
                        // Enough rows for several tasks at d = 100 (VALUES_PER_TASK / d
                        // rows a task).
                        let rows = if d == 100 { 1400 } else { 2 * d + 1 };
                        let layout = Layout {
                            rows,
                            d,
                            x_stride: d + stride_pad,
                            y_stride: d + 2 * stride_pad,
                        };
                        let mut x = vec![value(1.0); layout.extent(layout.x_stride)];
                        // Row r holds its 64 at (r mod d).
                        for r in 0..rows {
                            x[r * layout.x_stride + r % d] = value(64.0);
                        }
                        let sentinel = value(-7.0);
                        let mut y = vec![sentinel; layout.extent(layout.y_stride)];
                        floor(&x, &mut y, layout, Some(isa), Some(stream)).unwrap();
                        let sum = (d - 1) as f64 + 64.0;
                        for r in 0..rows {
                            for k in 0..d {
                                let want = real(x[r * layout.x_stride + k]) - sum;
                                let got = real(y[r * layout.y_stride + k]);
                                assert_eq!(
                                    got, want,
                                    "{dtype} {isa} d {d} row {r} value {k} stream {stream}"
                                );
                            }
                            // What lies between rows of y is left alone.
                            let gap =
                                (r * layout.y_stride + d)..((r + 1) * layout.y_stride).min(y.len());
                            assert!(y[gap].iter().all(|v| v.to_bits() == sentinel.to_bits()));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_value_is_read_and_written_f32() {
        every_value_is_read_and_written::<f32>();
    }

    #[test]
    fn every_value_is_read_and_written_f16() {
        every_value_is_read_and_written::<f16>();
    }

    #[test]
    fn every_value_is_read_and_written_bf16() {
        every_value_is_read_and_written::<bf16>();
    }

    /// A layout that the buffers do not hold is an error, as for the kernels.
    #[test]
    fn a_short_buffer_is_an_error() {
        let x = [1.0f32; 10];
        let mut y = [0.0f32; 10];
        let layout = Layout::contiguous(3, 4);
        assert!(floor(&x, &mut y, layout, None, None).is_err());
    }
}
