//! The storage formats the kernels read and write: f32, f16 and bf16, each widened exactly
//! to f64 lanes on load and rounded once (correctly) on store.

use super::simd::{halves, halves_mut, NearFilter, Simd};
use crate::dtype::Dtype;
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// What the f32 path needs of a 16-bit format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct F32PathFormat {
    /// The rounding midpoints' bit in the low bits of an f32: 23 − p for a significand of
    /// p bits.
    pub half_bit: u32,
    /// The smallest magnitude the path keeps (see the module comment).
    pub lowest: f64,
}

/// A storage format of the kernels: f32, `half::f16` or `half::bf16`.
pub trait Element: Copy + Default + Send + Sync + 'static + sealed::Sealed {
    const DTYPE: Dtype;
    /// 52 − p for a significand of p bits: in the low 53 − p bits of an f64 (in this
    /// format's normal range), a rounding midpoint of this format is the pattern
    /// `1 << HALF_ULP_BIT`.
    const HALF_ULP_BIT: u32 = 52 - Self::PRECISION;
    /// Significand bits, the implicit one included.
    const PRECISION: u32;
    /// The 16-bit formats' f32 output path (`crate::row::f32_path`); `None` for f32,
    /// whose rows always take the f64 path.
    const F32_PATH: Option<F32PathFormat>;
    /// Whether the output loop of the f64 path stores two vectors at a time
    /// ([`Element::store_pair`]): the 16-bit formats, whose AVX-512 stores then convert and
    /// test sixteen lanes with the instructions that take eight. Not f32: its window test
    /// is on the f64 lanes, so a pair saves little there, and rows of f32 LayerNorm in
    /// cache took 1.09–1.17 of the time in pairs (one thread, 16–48 rows of 2048–4096).
    const STORES_PAIRS: bool = true;
    /// How many stores of the f64 path's output loop share one report in `flags`: their
    /// reports OR-ed, eight vectors to a report (see `Reports` in
    /// `kernels/row.rs`). A report a vector or a pair put a one- or two-byte store
    /// beside every store of y, and on an Intel core those bounded the loop (one thread,
    /// rows in cache, against a report a store, with the reports' masked tests of
    /// `large_f32` in `simd/x86.rs`: f32 RMSNorm 16 × 4096 0.73 of the time, LayerNorm
    /// 0.76; f16 LayerNorm 0.95, bf16 RMSNorm 0.94).
    const STORES_PER_REPORT: usize = 4;
    /// Whether this format's conversions use AVX512-BF16 instructions where the CPU has
    /// them (bf16 only): work on the other formats runs on the plain AVX-512 path, so it
    /// is not compiled twice (see [`crate::Vectorized::AVX512_BF16`]).
    const AVX512_BF16: bool = false;
    /// Eight values widened (exactly) to f64 lanes.
    fn load<S: Simd>(s: S, src: &[Self; 8]) -> S::V;
    /// Sixteen values widened (exactly) to f32 lanes.
    fn load16<S: Simd>(s: S, src: &[Self; 16]) -> S::F32x16;
    /// A lane set over vectors from `load16` (bit k: lane k) as the set of the elements
    /// they hold (bit e: element e): their orders differ for bf16 on AVX2 (see
    /// [`Simd::f32x16_load_bf16`]).
    #[inline(always)]
    fn elements16<S: Simd>(_s: S, lanes: u16) -> u16 {
        lanes
    }
    /// Sixteen f32 lanes (in `load16`'s lane order) rounded to nearest-even in this
    /// format (see [`Simd::f32x16_store_f16`] for the lanes where that may not hold).
    fn store16<S: Simd>(s: S, v: S::F32x16, dst: &mut [Self; 16], stream: bool);
    /// Two blocks of sixteen values widened (exactly) to two vectors of f32 lanes, in the
    /// lanes that `elements16_pair` says: by default each block as `load16` loads it
    /// (bf16 on AVX-512 interleaves them: see [`Simd::f32x16_load_bf16_pair`]).
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, src: &[Self; 32]) -> [S::F32x16; 2] {
        let [a, b] = halves(src);
        [Self::load16(s, a), Self::load16(s, b)]
    }
    /// Lane sets over the vectors of `load16_pair` (bit k of set i: lane k of vector i)
    /// as the sets of the elements they hold in each block.
    #[inline(always)]
    fn elements16_pair<S: Simd>(s: S, lanes: [u16; 2]) -> [u16; 2] {
        lanes.map(|l| Self::elements16(s, l))
    }
    /// The vectors of `load16_pair`'s lane order rounded as `store16` rounds, in element
    /// order.
    #[inline(always)]
    fn store16_pair<S: Simd>(s: S, v: [S::F32x16; 2], dst: &mut [Self; 32], stream: bool) {
        let [a, b] = halves_mut(dst);
        Self::store16(s, v[0], a, stream);
        Self::store16(s, v[1], b, stream);
    }
    /// The largest magnitude among the values (NaN if one is NaN).
    fn abs_max(v: &[Self]) -> f64;
    /// Eight f64 lanes, each rounded to nearest-even in this format, except perhaps in
    /// the lanes reported, which also hold those that the filter `f` does not pass (see
    /// [`Simd`]'s contract). Returns a report, zero exactly where no lane is reported:
    /// [`Element::reported_lanes`] gives the lanes.
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [Self; 8], f: &NearFilter) -> u8;
    /// The lane set of a report of `store` or `stream` (bit l: lane l).
    #[inline(always)]
    fn reported_lanes<S: Simd>(_s: S, report: u8) -> u8 {
        report
    }
    /// `store` with a non-temporal hint; `dst` must be 16-byte aligned.
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [Self; 8], f: &NearFilter) -> u8;
    /// Two vectors stored as `store` (`stream` where `stream`) stores each, the first to
    /// `dst[..8]`; their reports in one, the first's in the low byte. The 16-bit formats
    /// share the work of the two where the path can ([`Simd::store_16bit_pair`]).
    #[inline(always)]
    fn store_pair<S: Simd>(
        s: S,
        v: [S::V; 2],
        dst: &mut [Self; 16],
        f: &NearFilter,
        stream: bool,
    ) -> u16 {
        stored_singly(s, v, dst, f, stream)
    }
    /// The value with these raw bits (the low `DTYPE.bits()` bits).
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
}

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    const STORES_PAIRS: bool = false;
    const STORES_PER_REPORT: usize = 8;
    const PRECISION: u32 = 24;
    const F32_PATH: Option<F32PathFormat> = None;
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[f32; 8]) -> S::V {
        s.load_f32(src)
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, src: &[f32; 16]) -> S::F32x16 {
        s.f32x16_load_f32(src)
    }
    #[inline(always)]
    fn store16<S: Simd>(s: S, v: S::F32x16, dst: &mut [f32; 16], stream: bool) {
        s.f32x16_store_f32(v, dst, stream)
    }
    #[inline(always)]
    fn abs_max(v: &[f32]) -> f64 {
        // Magnitudes order as their bit patterns, NaN above ∞.
        let bits = v.iter().fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff));
        f32::from_bits(bits) as f64
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        s.store_f32(v, dst, f)
    }
    #[inline(always)]
    fn reported_lanes<S: Simd>(s: S, report: u8) -> u8 {
        s.f32_lanes(report)
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        s.stream_f32(v, dst, f)
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
}

/// Two vectors stored one at a time by `T::store` (`T::stream`), their reports in one.
#[inline(always)]
fn stored_singly<S: Simd, T: Element>(
    s: S,
    v: [S::V; 2],
    dst: &mut [T; 16],
    f: &NearFilter,
    stream: bool,
) -> u16 {
    let (first, second) = dst.split_at_mut(8);
    let (first, second) = (first.try_into().expect("8"), second.try_into().expect("8"));
    let reports = if stream {
        [T::stream(s, v[0], first, f), T::stream(s, v[1], second, f)]
    } else {
        [T::store(s, v[0], first, f), T::store(s, v[1], second, f)]
    };
    u16::from_le_bytes(reports)
}

/// The bit patterns of N half-precision values.
#[inline(always)]
fn bits_of<H, const N: usize>(src: &[H; N]) -> &[u16; N] {
    const { assert!(std::mem::size_of::<H>() == 2) };
    // SAFETY: only used with half::f16 and half::bf16, both #[repr(transparent)] over u16.
    unsafe { &*(src as *const [H; N] as *const [u16; N]) }
}

#[inline(always)]
fn bits_of_mut<H, const N: usize>(dst: &mut [H; N]) -> &mut [u16; N] {
    const { assert!(std::mem::size_of::<H>() == 2) };
    // SAFETY: as in `bits_of`; every u16 pattern is a valid f16/bf16.
    unsafe { &mut *(dst as *mut [H; N] as *mut [u16; N]) }
}

/// The largest magnitude's bit pattern among half-precision values: magnitudes order as
/// their patterns with the sign cleared, NaN above ∞ (a plain loop over u16, vectorized).
#[inline(always)]
fn abs_max_bits<H>(v: &[H]) -> u16 {
    const { assert!(std::mem::size_of::<H>() == 2) };
    // SAFETY: as in `bits_of`, for the whole slice.
    let bits = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u16, v.len()) };
    bits.iter().fold(0u16, |m, &b| m.max(b & 0x7fff))
}

impl Element for f16 {
    const DTYPE: Dtype = Dtype::F16;
    const PRECISION: u32 = 11;
    // 2^-14: the smallest normal f16.
    const F32_PATH: Option<F32PathFormat> = Some(F32PathFormat {
        half_bit: 12,
        lowest: 1.0 / 16384.0,
    });
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[f16; 8]) -> S::V {
        s.load_f16(bits_of(src))
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, src: &[f16; 16]) -> S::F32x16 {
        s.f32x16_load_f16(bits_of(src))
    }
    #[inline(always)]
    fn store16<S: Simd>(s: S, v: S::F32x16, dst: &mut [f16; 16], stream: bool) {
        s.f32x16_store_f16(v, bits_of_mut(dst), stream)
    }
    #[inline(always)]
    fn abs_max(v: &[f16]) -> f64 {
        f16::from_bits(abs_max_bits(v)).to_f64()
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [f16; 8], f: &NearFilter) -> u8 {
        s.store_f16(v, bits_of_mut(dst), f)
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [f16; 8], f: &NearFilter) -> u8 {
        s.stream_f16(v, bits_of_mut(dst), f)
    }
    #[inline(always)]
    fn store_pair<S: Simd>(
        s: S,
        v: [S::V; 2],
        dst: &mut [f16; 16],
        f: &NearFilter,
        stream: bool,
    ) -> u16 {
        match s.store_16bit_pair::<false>(v, bits_of_mut(dst), f, stream) {
            Some(reports) => reports,
            None => stored_singly(s, v, dst, f, stream),
        }
    }
    fn from_bits(bits: u64) -> Self {
        f16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        f16::to_bits(self) as u64
    }
}

impl Element for bf16 {
    const DTYPE: Dtype = Dtype::BF16;
    const PRECISION: u32 = 8;
    const AVX512_BF16: bool = true;
    // 2^-100: normal in f32 with room below for the bound's underflow terms.
    const F32_PATH: Option<F32PathFormat> = Some(F32PathFormat {
        half_bit: 15,
        lowest: f64::from_bits((1023 - 100) << 52),
    });
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[bf16; 8]) -> S::V {
        s.load_bf16(bits_of(src))
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, src: &[bf16; 16]) -> S::F32x16 {
        s.f32x16_load_bf16(bits_of(src))
    }
    #[inline(always)]
    fn elements16<S: Simd>(s: S, lanes: u16) -> u16 {
        s.f32x16_bf16_lanes(lanes)
    }
    #[inline(always)]
    fn store16<S: Simd>(s: S, v: S::F32x16, dst: &mut [bf16; 16], stream: bool) {
        s.f32x16_store_bf16(v, bits_of_mut(dst), stream)
    }
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, src: &[bf16; 32]) -> [S::F32x16; 2] {
        s.f32x16_load_bf16_pair(bits_of(src))
    }
    #[inline(always)]
    fn elements16_pair<S: Simd>(s: S, lanes: [u16; 2]) -> [u16; 2] {
        s.f32x16_bf16_pair_elements(lanes)
    }
    #[inline(always)]
    fn store16_pair<S: Simd>(s: S, v: [S::F32x16; 2], dst: &mut [bf16; 32], stream: bool) {
        s.f32x16_store_bf16_pair(v, bits_of_mut(dst), stream)
    }
    #[inline(always)]
    fn abs_max(v: &[bf16]) -> f64 {
        bf16::from_bits(abs_max_bits(v)).to_f64()
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [bf16; 8], f: &NearFilter) -> u8 {
        s.store_bf16(v, bits_of_mut(dst), f)
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [bf16; 8], f: &NearFilter) -> u8 {
        s.stream_bf16(v, bits_of_mut(dst), f)
    }
    #[inline(always)]
    fn store_pair<S: Simd>(
        s: S,
        v: [S::V; 2],
        dst: &mut [bf16; 16],
        f: &NearFilter,
        stream: bool,
    ) -> u16 {
        match s.store_16bit_pair::<true>(v, bits_of_mut(dst), f, stream) {
            Some(reports) => reports,
            None => stored_singly(s, v, dst, f, stream),
        }
    }
    fn from_bits(bits: u64) -> Self {
        bf16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        bf16::to_bits(self) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `abs_max` against the largest |value| taken value by value in f64, over random bit
    /// patterns of every class but NaN (subnormals, ±0, ±∞ included), with the largest
    /// magnitude placed first, last and in between, negative and positive; NaN wins over
    /// everything, an empty slice gives 0. (The f64 path's certainty filter is built from
    /// these maxima: one that returns less lets lanes through untested.)
    fn check<T: Element>() {
        let bits = T::DTYPE.bits();
        let mut rng = crate::rng::Rng::new(1, bits as u64);
        let mut next = move || rng.next_u64() >> (64 - bits);
        let value = |b: u64| T::DTYPE.to_f64(b);
        for trial in 0..200 {
            let mut v: Vec<T> = (0..1 + trial % 37)
                .map(|_| next())
                .filter(|&b| !value(b).is_nan())
                .map(T::from_bits)
                .collect();
            if v.is_empty() {
                continue;
            }
            let expected = v
                .iter()
                .fold(0.0f64, |m, x| m.max(value(x.to_bits()).abs()));
            let at = trial % v.len();
            let largest = v.iter().position(|x| value(x.to_bits()).abs() == expected);
            v.swap(at, largest.expect("the maximum is one of the values"));
            assert_eq!(T::abs_max(&v), expected, "{:?} trial {trial}", T::DTYPE);
            v.reverse();
            assert_eq!(T::abs_max(&v), expected, "{:?} trial {trial}", T::DTYPE);
        }
        let one = T::DTYPE.round_f64(1.0);
        let minus_two = T::DTYPE.round_f64(-2.0);
        let row = [one, minus_two, one].map(T::from_bits);
        assert_eq!(T::abs_max(&row), 2.0, "{:?}", T::DTYPE);
        let with_nan = [one, T::DTYPE.nan_bits(), minus_two].map(T::from_bits);
        assert!(T::abs_max(&with_nan).is_nan(), "{:?}", T::DTYPE);
        assert_eq!(T::abs_max(&[]), 0.0, "{:?}", T::DTYPE);
    }

    #[test]
    fn abs_max_is_the_largest_magnitude() {
        check::<f32>();
        check::<f16>();
        check::<bf16>();
    }
}
