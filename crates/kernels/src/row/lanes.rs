//! Rows as vectors of eight f64 lanes: widened rows on cache lines of their own, and the
//! slicing helpers of the loops.

use crate::element::Element;
use crate::simd::Simd;

#[inline(always)]
pub(super) fn load_padded<S: Simd, T: Element>(s: S, src: &[T]) -> S::V {
    let mut buf = [T::default(); 8];
    buf[..src.len()].copy_from_slice(src);
    T::load(s, &buf)
}

/// Eight f64 lanes on a cache line of their own (64-byte aligned): vector loads and
/// stores of widened values never straddle two lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct Line(pub [f64; 8]);

/// The lanes of consecutive lines.
pub(crate) fn lanes(lines: &[Line]) -> &[[f64; 8]] {
    // SAFETY: `Line` is `repr(C)` around one `[f64; 8]`, whose size (64) is a multiple of
    // its alignment: a slice of lines is a slice of `[f64; 8]` with a stricter alignment.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), lines.len()) }
}

/// The lanes of consecutive lines, mutably.
pub(crate) fn lanes_mut(lines: &mut [Line]) -> &mut [[f64; 8]] {
    // SAFETY: as in `lanes`, and the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), lines.len()) }
}

/// The first n values of consecutive lines (n ≤ 8 × lines).
pub(crate) fn values(lines: &[Line], n: usize) -> &[f64] {
    assert!(n <= 8 * lines.len());
    // SAFETY: the lines hold 8 × lines.len() ≥ n contiguous, initialized f64 values.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), n) }
}
