//! Eight f64 lanes: the one vector shape every instruction set computes in.
//!
//! Every path (AVX-512, AVX2, NEON, portable scalar) holds a vector of exactly eight f64
//! lanes and performs the same IEEE operations on them in the same order: lane `k` of an
//! accumulator always sees elements `k, k+8, k+16, …` of a row, and lanes are combined in
//! one fixed order by shared scalar code. Add, sub, mul, fused multiply-add and the format
//! conversions are correctly rounded on every path, so the results are bit-identical
//! whichever path runs (the tests compare them bit for bit).
//!
//! Narrowing to f16/bf16 goes through *round-to-odd* to f32 and then round-to-nearest-even
//! to the 16-bit format: f32 keeps at least two more bits than either 16-bit format, which
//! makes the two-step rounding equal to one correct rounding of the f64 value.
//!
//! The 16-bit formats' f32 output path (`crate::row::f32_path`) computes in a second
//! shape, sixteen f32 lanes (`Simd::F32x16`), under the same contract: the same IEEE
//! binary32 operations on every path, and a certainty test ([`uncertain_lane`]) whose
//! vector forms are compared with it bit for bit.

#[cfg(target_arch = "aarch64")]
pub mod neon;
#[cfg(target_arch = "x86_64")]
pub mod x86;

/// The instruction sets the kernels can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust (`f64::mul_add` for the fused multiply-add).
    Scalar,
    /// x86-64 AVX2 + FMA + F16C: two 4-lane registers per vector.
    Avx2,
    /// x86-64 AVX-512F + VL + DQ + BW (+ AVX2, FMA, F16C): one 8-lane register per vector.
    Avx512,
    /// `Avx512` plus AVX512-BF16, whose f32 → bf16 conversion replaces the integer recipe.
    Avx512Bf16,
    /// AArch64 Advanced SIMD: four 2-lane registers per vector.
    Neon,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx512Bf16 => "avx512bf16",
            Isa::Neon => "neon",
        }
    }

    /// Whether this CPU can run this path.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => x86::Avx2::new().is_some(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => x86::Avx512::<false>::new().is_some(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bf16 => x86::Avx512::<true>::new().is_some(),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every path this CPU can run, fastest last.
    pub fn available() -> Vec<Isa> {
        [
            Isa::Scalar,
            Isa::Neon,
            Isa::Avx2,
            Isa::Avx512,
            Isa::Avx512Bf16,
        ]
        .into_iter()
        .filter(|i| i.is_available())
        .collect()
    }

    /// The fastest path this CPU can run, found once per process: every call of
    /// `normalize` asks, and the list `available` builds cost 1.5 % of a single row of
    /// 4096 (an allocation, a free and the feature checks).
    pub fn detect() -> Isa {
        static FASTEST: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *FASTEST.get_or_init(|| *Isa::available().last().expect("scalar is always available"))
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Isa {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "scalar" => Ok(Isa::Scalar),
            "avx2" => Ok(Isa::Avx2),
            "avx512" => Ok(Isa::Avx512),
            "avx512bf16" => Ok(Isa::Avx512Bf16),
            "neon" => Ok(Isa::Neon),
            other => Err(crate::Error::usage(format!(
                "unknown instruction set '{other}' (scalar, avx2, avx512, avx512bf16, neon)"
            ))),
        }
    }
}

/// A vector of eight f64 lanes on one instruction set. The implementing type is a
/// zero-sized token that exists only once the CPU is known to support the instructions,
/// so its (inlined) methods may use them.
///
/// Contract, shared by every implementation: each arithmetic method is the lane-wise IEEE
/// binary64 operation with round-to-nearest-even (`fma` with a single rounding); loads
/// widen exactly. A store writes each lane rounded to nearest-even in its format and
/// returns a set of lanes that holds every lane where the written value may be other than
/// the correctly rounded one (callers rewrite those with
/// [`crate::dtype::Dtype::round_f64`]) and every lane that the certainty filter `f` does
/// not pass ([`near_lane`]: callers look at those again); it may hold more. Checking in
/// the store lets a path reuse what its conversion computed (the AVX-512 and AVX2 f16 and
/// bf16 stores' double-rounding test covers the filter's window; the f32 they convert
/// through tests its threshold). The f32 stores return that set as a report in an order of
/// the path's own, zero exactly where the set is empty: [`Simd::f32_lanes`] gives the set.
pub trait Simd: Copy + Send + Sync {
    type V: Copy;
    /// Whether [`Simd::F32x16`] is one register (AVX-512), where the 16-bit formats' f32
    /// path runs narrower rows than elsewhere (see `f32_path::applies`).
    const F32X16_ONE_REGISTER: bool = false;
    /// Runs `k` in a function of its own, compiled for this instruction set and not inlined
    /// into the caller (so that a hot loop gets the registers to itself).
    fn isolated<K: crate::Vectorized>(self, k: K) -> K::Output;
    fn splat(self, v: f64) -> Self::V;
    fn load_lanes(self, a: [f64; 8]) -> Self::V;
    fn to_array(self, v: Self::V) -> [f64; 8];
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// a·b + c with one rounding.
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    fn load_f32(self, src: &[f32; 8]) -> Self::V;
    fn load_f16(self, src: &[u16; 8]) -> Self::V;
    fn load_bf16(self, src: &[u16; 8]) -> Self::V;
    /// Returns a report: see [`Simd::f32_lanes`].
    fn store_f32(self, v: Self::V, dst: &mut [f32; 8], f: &NearFilter) -> u8;
    /// The lane set of a report of `store_f32` or `stream_f32` (bit l: lane l). The
    /// identity but on AVX2, whose f32 store leaves its bits in the order its shuffles give
    /// them: the output loops only record whether a vector has a reported lane, and
    /// putting the bits in order there cost a table load per vector on the stored flag's
    /// dependency chain.
    #[inline(always)]
    fn f32_lanes(self, report: u8) -> u8 {
        report
    }
    fn store_f16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8;
    fn store_bf16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8;
    /// `store_f32` with a non-temporal hint (the data bypasses the caches); `dst` must be
    /// 16-byte aligned. Call `fence` before other threads read what was streamed.
    fn stream_f32(self, v: Self::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        self.store_f32(v, dst, f)
    }
    /// `store_f16` with a non-temporal hint; `dst` must be 16-byte aligned.
    fn stream_f16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        self.store_f16(v, dst, f)
    }
    /// `store_bf16` with a non-temporal hint; `dst` must be 16-byte aligned.
    fn stream_bf16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        self.store_bf16(v, dst, f)
    }
    /// Two vectors stored as `store_f16` (`store_bf16` where `BF16`; `stream_*` where
    /// `stream`) stores each, the first to `dst[..8]`, with the two reports in one (the
    /// first's in the low byte), where this path shares the work of the two: the AVX-512
    /// paths, whose conversions and tests take sixteen f32 lanes with the instructions
    /// that take eight. Elsewhere `None`, and nothing is written: the caller stores the
    /// vectors one at a time ([`crate::element::Element::store_pair`]).
    #[inline(always)]
    fn store_16bit_pair<const BF16: bool>(
        self,
        _v: [Self::V; 2],
        _dst: &mut [u16; 16],
        _f: &NearFilter,
        _stream: bool,
    ) -> Option<u16> {
        None
    }
    /// Orders the streamed stores before later stores.
    fn fence(self) {}
    /// Asks for the cache line holding `p` (a hint; it never faults, whatever the address).
    fn prefetch(self, _p: *const u8) {}
    /// Bit l set where lane l fails [`near_lane`] (the f64 path's cheap certainty filter):
    /// the specification of what the stores report, also how the paths whose stores have
    /// nothing to share with it report it.
    fn near(self, y: Self::V, f: &NearFilter) -> u8;

    /// Sixteen f32 lanes: the vector of the 16-bit formats' f32 output path
    /// (`crate::row::f32_path`). Same contract: lane-wise IEEE binary32 operations,
    /// round-to-nearest-even, exact loads.
    type F32x16: Copy;
    fn f32x16_splat(self, v: f32) -> Self::F32x16;
    fn f32x16_load_f32(self, src: &[f32; 16]) -> Self::F32x16;
    fn f32x16_load_f16(self, src: &[u16; 16]) -> Self::F32x16;
    /// Sixteen bf16 values widened exactly, in the lanes that [`Simd::f32x16_bf16_lanes`]
    /// says: element order on every path but AVX2, whose lanes hold elements 0–3 and 8–11,
    /// then 4–7 and 12–15 (interleaving with zeros within 128-bit halves widens them with
    /// no lane-crossing instruction). Vectors so loaded combine only with each other and
    /// with splats, and [`Simd::f32x16_store_bf16`] puts them back in element order.
    fn f32x16_load_bf16(self, src: &[u16; 16]) -> Self::F32x16;
    /// A lane set over vectors from [`Simd::f32x16_load_bf16`] (bit k: lane k) as the set
    /// of the elements they hold (bit e: element e).
    #[inline(always)]
    fn f32x16_bf16_lanes(self, lanes: u16) -> u16 {
        lanes
    }
    fn f32x16_add(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16;
    fn f32x16_sub(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16;
    fn f32x16_mul(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16;
    /// a·b + c with one rounding.
    fn f32x16_fma(self, a: Self::F32x16, b: Self::F32x16, c: Self::F32x16) -> Self::F32x16;
    /// Bit l set where lane l is [`uncertain_lane`] (y lane l of `y`).
    fn f32x16_uncertain(self, y: Self::F32x16, t: &CertainTest) -> u16;
    /// Stores as they are (`stream`: a non-temporal hint, taken on x86 as the f64 path's
    /// stores take it; `dst` then 16-byte aligned). The kernels' f32 rows never take the
    /// f32 path; the bench's floor (`kernels::floor`) stores its f32 rows with this.
    fn f32x16_store_f32(self, v: Self::F32x16, dst: &mut [f32; 16], stream: bool);
    /// Each lane rounded to nearest-even f16, except perhaps where the lane is NaN, ±∞,
    /// below 2^-100 in magnitude or exactly a midpoint (lanes the callers never keep).
    fn f32x16_store_f16(self, v: Self::F32x16, dst: &mut [u16; 16], stream: bool);
    /// As `f32x16_store_f16`, to bf16, from a vector in the lane order of
    /// [`Simd::f32x16_load_bf16`].
    fn f32x16_store_bf16(self, v: Self::F32x16, dst: &mut [u16; 16], stream: bool);
    /// Two blocks of sixteen bf16 values widened exactly, as two vectors in the lanes that
    /// [`Simd::f32x16_bf16_pair_elements`] says: by default each block as
    /// [`Simd::f32x16_load_bf16`] loads it. Vectors so loaded combine only with the same
    /// vector of other pairs and with splats, and [`Simd::f32x16_store_bf16_pair`] puts
    /// them back in element order.
    #[inline(always)]
    fn f32x16_load_bf16_pair(self, src: &[u16; 32]) -> [Self::F32x16; 2] {
        let [a, b] = halves(src);
        [self.f32x16_load_bf16(a), self.f32x16_load_bf16(b)]
    }
    /// Lane sets over the two vectors of [`Simd::f32x16_load_bf16_pair`] (bit k of set
    /// i: lane k of vector i) as the sets of the elements they hold in each block (bit e
    /// of set i: element e of block i).
    #[inline(always)]
    fn f32x16_bf16_pair_elements(self, lanes: [u16; 2]) -> [u16; 2] {
        lanes.map(|l| self.f32x16_bf16_lanes(l))
    }
    /// As `f32x16_store_bf16` of both vectors of a pair, in the lane order of
    /// [`Simd::f32x16_load_bf16_pair`].
    #[inline(always)]
    fn f32x16_store_bf16_pair(self, v: [Self::F32x16; 2], dst: &mut [u16; 32], stream: bool) {
        let [a, b] = halves_mut(dst);
        self.f32x16_store_bf16(v[0], a, stream);
        self.f32x16_store_bf16(v[1], b, stream);
    }
}

/// The two blocks of sixteen of a pair.
#[inline(always)]
pub(crate) fn halves<T>(pair: &[T; 32]) -> [&[T; 16]; 2] {
    let (blocks, _) = pair.as_chunks::<16>();
    [&blocks[0], &blocks[1]]
}

/// The two halves of an array, to write: the blocks of sixteen of a pair, or the two
/// groups of eight of sixteen f32 (N = 2·H, checked when compiled).
#[inline(always)]
pub(crate) fn halves_mut<T, const N: usize, const H: usize>(pair: &mut [T; N]) -> [&mut [T; H]; 2] {
    const { assert!(N == 2 * H, "an array is two halves") };
    let (blocks, _) = pair.as_chunks_mut::<H>();
    let [a, b] = blocks else {
        unreachable!("N = 2·H values are two halves of H")
    };
    [a, b]
}

/// The certainty test of the f32 output path for one lane (see `crate::row::f32_path`,
/// which derives the constants): y computed in f32 rounds (to the 16-bit format) as the
/// exact value does when the error bound fma(|y|, slope, floor) is below the
/// distance from y to the nearest rounding midpoint of the format. That distance is
/// bounded below by the distance to the midpoint of the format's interval that holds y
/// (y's bits below the format's last bit replaced by the midpoint pattern `half`: the same
/// binade, so the subtraction is exact) and by |midpoint|·cap (the lower binade's
/// midpoints, half as far apart; any magnitude of y's binade serves, and the midpoint's is
/// NaN where y is ±∞ or NaN). Such lanes never pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CertainTest {
    pub slope: f32,
    pub floor: f32,
    pub cap: f32,
    /// The f32 bits below the format's last significand bit, and the midpoint pattern
    /// among them (the highest of them).
    pub low_mask: u32,
    pub half: u32,
}

/// The scalar definition of [`Simd::f32x16_uncertain`] for one lane.
#[inline(always)]
pub fn uncertain_lane(y: f32, t: &CertainTest) -> bool {
    let bound = y.abs().mul_add(t.slope, t.floor);
    let midpoint = f32::from_bits((y.to_bits() & !t.low_mask) | t.half);
    // Both terms are NaN where y is ±∞ or NaN (a NaN midpoint), whatever `min` makes of
    // one NaN (the bound is then ∞ or NaN too).
    let distance = (y - midpoint).abs().min((midpoint * t.cap).abs());
    let kept = bound < distance;
    !kept
}

/// Sixteen f16 (bit patterns) widened to f32, exactly: the portable definition.
#[inline(always)]
pub fn f16x16_to_f32(src: &[u16; 16]) -> [f32; 16] {
    src.map(|b| half::f16::from_bits(b).to_f32())
}

/// Sixteen f32 rounded to nearest-even f16 (bit patterns): the portable definition.
#[inline(always)]
pub fn f32x16_to_f16(v: [f32; 16]) -> [u16; 16] {
    v.map(|x| half::f16::from_f32(x).to_bits())
}

/// The sixteen-lane f32 methods of [`Simd`] on plain arrays: the portable definition
/// (`Scalar`) and NEON's, which passes its own f16 conversions (the widening and the
/// rounding of sixteen lanes, as [`f16x16_to_f32`] and [`f32x16_to_f16`]).
macro_rules! portable_f32x16 {
    () => {
        $crate::simd::portable_f32x16!($crate::simd::f16x16_to_f32, $crate::simd::f32x16_to_f16);
    };
    ($widen_f16:path, $round_f16:path) => {
        type F32x16 = [f32; 16];
        #[inline(always)]
        fn f32x16_splat(self, v: f32) -> [f32; 16] {
            [v; 16]
        }
        #[inline(always)]
        fn f32x16_load_f32(self, src: &[f32; 16]) -> [f32; 16] {
            *src
        }
        #[inline(always)]
        fn f32x16_load_f16(self, src: &[u16; 16]) -> [f32; 16] {
            $widen_f16(src)
        }
        #[inline(always)]
        fn f32x16_load_bf16(self, src: &[u16; 16]) -> [f32; 16] {
            src.map(|b| f32::from_bits((b as u32) << 16))
        }
        #[inline(always)]
        fn f32x16_add(self, a: [f32; 16], b: [f32; 16]) -> [f32; 16] {
            std::array::from_fn(|k| a[k] + b[k])
        }
        #[inline(always)]
        fn f32x16_sub(self, a: [f32; 16], b: [f32; 16]) -> [f32; 16] {
            std::array::from_fn(|k| a[k] - b[k])
        }
        #[inline(always)]
        fn f32x16_mul(self, a: [f32; 16], b: [f32; 16]) -> [f32; 16] {
            std::array::from_fn(|k| a[k] * b[k])
        }
        #[inline(always)]
        fn f32x16_fma(self, a: [f32; 16], b: [f32; 16], c: [f32; 16]) -> [f32; 16] {
            std::array::from_fn(|k| a[k].mul_add(b[k], c[k]))
        }
        #[inline(always)]
        fn f32x16_uncertain(self, y: [f32; 16], t: &$crate::simd::CertainTest) -> u16 {
            (0..16).fold(0u16, |m, l| {
                m | (($crate::simd::uncertain_lane(y[l], t) as u16) << l)
            })
        }
        #[inline(always)]
        fn f32x16_store_f32(self, v: [f32; 16], dst: &mut [f32; 16], _stream: bool) {
            *dst = v;
        }
        #[inline(always)]
        fn f32x16_store_f16(self, v: [f32; 16], dst: &mut [u16; 16], _stream: bool) {
            *dst = $round_f16(v);
        }
        #[inline(always)]
        fn f32x16_store_bf16(self, v: [f32; 16], dst: &mut [u16; 16], _stream: bool) {
            *dst = v.map(|x| $crate::simd::bf16_bits_from_odd_f32(x.to_bits()));
        }
    };
}
#[cfg_attr(not(target_arch = "aarch64"), allow(unused_imports))]
pub(crate) use portable_f32x16;

/// The f64 path's per-vector certainty filter (see `kernels/row.rs`, which derives
/// `small`): a lane passes when its bits, in their low `half_bit + 1` bits, lie outside
/// [h − w, h + w) (h = 2^half_bit: at least w f64-ulps from the midpoint of the format's
/// interval that holds it), and |y| ≥ `small`. NaN never passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearFilter {
    /// w − h, added to the whole pattern (what carries into the higher bits is masked
    /// off), and the bits [log2(2w), half_bit] that must not all be zero: low + w − h
    /// (mod 2h) is below 2w exactly when low ∈ [h − w, h + w).
    pub offset: u64,
    pub mask: u64,
    pub small: f64,
    /// `small` rounded up to f32 (NaN where it is NaN): the threshold as stores that test
    /// the f32 they convert through take it. |y| < small gives f32(|y|) ≤ small_f32
    /// (rounding is monotonic), so a lane is reported where f32(|y|) > small_f32 fails
    /// (NaN included).
    pub small_f32: f32,
    /// The high 32 bits of `small`'s pattern read as an f32 pattern: the threshold of
    /// stores that test the high halves of the f64 lanes (sign cleared) as f32 patterns.
    /// For patterns of non-negative numbers the order of the floats is the order of the
    /// integers, so a lane that passes, high(|y|) > high(small), has |y| > small; NaN
    /// lanes fail (their high half is an f32 NaN), and so do lanes whose high half reads
    /// as an f32 NaN or ∞ (|y| ≥ 2^1017) or equals small's (|y| < small·(1 + 2^-20)).
    pub small_high: f32,
}

impl NearFilter {
    /// The filter of output format `format` with window w (a power of two ≤ 2^half_bit,
    /// half_bit = 52 − the format's significand bits) f64-ulps and threshold `small`,
    /// raised to the format's least normal magnitude: below it the format's grid is fixed
    /// and the window (a pattern of y's own bits) says nothing. NaN stays NaN (no lane
    /// passes).
    #[inline(always)]
    pub fn new(format: crate::dtype::Dtype, w: u64, small: f64) -> NearFilter {
        let half_bit = (52 - format.precision()) as u32;
        assert!(w.is_power_of_two() && w <= 1 << half_bit);
        let small = if small.is_nan() {
            f64::NAN
        } else {
            small.max(crate::dtype::pow2(format.emin()))
        };
        let nearest = small as f32;
        let small_f32 = if (nearest as f64) < small {
            nearest.next_up()
        } else {
            nearest
        };
        NearFilter {
            offset: w.wrapping_sub(1 << half_bit),
            mask: ((2u64 << half_bit) - 1) & !(2 * w - 1),
            small,
            small_f32,
            small_high: f32::from_bits((small.to_bits() >> 32) as u32),
        }
    }
}

/// The scalar definition of [`Simd::near`] for one lane.
#[inline(always)]
pub fn near_lane(y: f64, f: &NearFilter) -> bool {
    let in_window = y.to_bits().wrapping_add(f.offset) & f.mask == 0;
    let large = y.abs() >= f.small;
    in_window || !large
}

/// The portable path: plain arrays, `f64::mul_add` (a true fused multiply-add on every
/// target). Also the specification the vector paths are tested against.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scalar;

impl Simd for Scalar {
    type V = [f64; 8];
    #[inline(always)]
    fn isolated<K: crate::Vectorized>(self, k: K) -> K::Output {
        #[inline(never)]
        fn inner<K: crate::Vectorized>(k: K) -> K::Output {
            k.run(Scalar)
        }
        inner(k)
    }
    #[inline(always)]
    fn splat(self, v: f64) -> [f64; 8] {
        [v; 8]
    }
    #[inline(always)]
    fn load_lanes(self, a: [f64; 8]) -> [f64; 8] {
        a
    }
    #[inline(always)]
    fn to_array(self, v: [f64; 8]) -> [f64; 8] {
        v
    }
    #[inline(always)]
    fn add(self, a: [f64; 8], b: [f64; 8]) -> [f64; 8] {
        std::array::from_fn(|k| a[k] + b[k])
    }
    #[inline(always)]
    fn sub(self, a: [f64; 8], b: [f64; 8]) -> [f64; 8] {
        std::array::from_fn(|k| a[k] - b[k])
    }
    #[inline(always)]
    fn mul(self, a: [f64; 8], b: [f64; 8]) -> [f64; 8] {
        std::array::from_fn(|k| a[k] * b[k])
    }
    #[inline(always)]
    fn fma(self, a: [f64; 8], b: [f64; 8], c: [f64; 8]) -> [f64; 8] {
        std::array::from_fn(|k| a[k].mul_add(b[k], c[k]))
    }
    #[inline(always)]
    fn load_f32(self, src: &[f32; 8]) -> [f64; 8] {
        src.map(f64::from)
    }
    #[inline(always)]
    fn load_f16(self, src: &[u16; 8]) -> [f64; 8] {
        src.map(|b| half::f16::from_bits(b).to_f64())
    }
    #[inline(always)]
    fn load_bf16(self, src: &[u16; 8]) -> [f64; 8] {
        src.map(|b| f32::from_bits((b as u32) << 16) as f64)
    }
    #[inline(always)]
    fn store_f32(self, v: [f64; 8], dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        *dst = v.map(|x| x as f32);
        self.near(v, f)
    }
    #[inline(always)]
    fn store_f16(self, v: [f64; 8], dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        *dst = v.map(|x| f16_bits_from_odd_f32(f32_round_to_odd(x)));
        self.near(v, f)
    }
    #[inline(always)]
    fn store_bf16(self, v: [f64; 8], dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        *dst = v.map(|x| bf16_bits_from_odd_f32(f32_round_to_odd(x).to_bits()));
        self.near(v, f)
    }
    #[inline(always)]
    fn near(self, y: [f64; 8], f: &NearFilter) -> u8 {
        (0..8).fold(0u8, |m, l| m | ((near_lane(y[l], f) as u8) << l))
    }
    portable_f32x16!();
}

/// x rounded to f32 toward zero, with the last significand bit set when that was inexact
/// ("round to odd"). Overflow gives ±f32::MAX (odd), NaN stays NaN.
#[inline(always)]
pub fn f32_round_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    let back = nearest as f64;
    if back == x {
        return nearest;
    }
    let mut bits = nearest.to_bits();
    if back.abs() > x.abs() {
        // Rounded away from zero: step one value back toward zero (same sign, so the bit
        // pattern decreases by one; ±∞ steps to ±MAX).
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// f16 bits nearest (ties to even) to an f32; exact for the f64 it came from when the f32
/// was rounded to odd.
#[inline(always)]
pub fn f16_bits_from_odd_f32(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// bf16 bits nearest (ties to even) to the f32 with these bits (rounded to odd or not); a
/// NaN stays a quiet NaN.
#[inline(always)]
pub fn bf16_bits_from_odd_f32(bits: u32) -> u16 {
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return ((bits >> 16) | 0x0040) as u16;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// f64 values that stress the narrowing: random bit patterns, values next to the
    /// midpoints of the narrow formats, subnormals, overflow thresholds, signed zeros.
    fn stress_values() -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut v = vec![0.0, -0.0, 65504.0, 65520.0, 65519.99, f64::MAX, -f64::MAX];
        for dt in [Dtype::F16, Dtype::BF16, Dtype::F32] {
            for _ in 0..20_000 {
                let b = rng.next_u64() & ((1u64 << dt.bits()) - 1);
                if !dt.is_finite(b) {
                    continue;
                }
                let a = dt.to_f64(b);
                let m = dt.midpoint(b, dt.next_up(b));
                for w in [a, m, m.next_up(), m.next_down(), (a + m) / 2.0] {
                    if w.is_finite() {
                        v.push(w);
                    }
                }
            }
        }
        for _ in 0..20_000 {
            let x = f64::from_bits(rng.next_u64());
            if x.is_finite() {
                v.push(x);
            }
            let e = (rng.next_u32() % 320) as i32 - 160;
            v.push((1.0 + (rng.next_u64() >> 12) as f64 * 2f64.powi(-52)) * 2f64.powi(e));
        }
        v
    }

    #[test]
    fn scalar_narrowing_is_correct_rounding() {
        for x in stress_values() {
            for dt in [Dtype::F16, Dtype::BF16, Dtype::F32] {
                let want = dt.round_f64(x);
                let mut dst = [0u16; 8];
                let f = &NearFilter::new(Dtype::F32, 32, 0.0);
                let got = match dt {
                    Dtype::F16 => {
                        let _ = Scalar.store_f16([x; 8], &mut dst, f);
                        dst[0] as u64
                    }
                    Dtype::BF16 => {
                        let _ = Scalar.store_bf16([x; 8], &mut dst, f);
                        dst[0] as u64
                    }
                    _ => {
                        let mut d32 = [0f32; 8];
                        let _ = Scalar.store_f32([x; 8], &mut d32, f);
                        d32[0].to_bits() as u64
                    }
                };
                assert_eq!(got, want, "{dt} {x:e}");
            }
        }
    }

    #[test]
    fn nan_stays_nan_when_narrowed() {
        for nan in [f64::NAN, -f64::NAN, f64::from_bits(0x7fff_ffff_ffff_ffff)] {
            let mut h = [0u16; 8];
            let f = &NearFilter::new(Dtype::F32, 32, 0.0);
            let _ = Scalar.store_bf16([nan; 8], &mut h, f);
            assert!(Dtype::BF16.is_nan(h[0] as u64), "{:x}", h[0]);
            let _ = Scalar.store_f16([nan; 8], &mut h, f);
            assert!(Dtype::F16.is_nan(h[0] as u64), "{:x}", h[0]);
        }
    }

    /// Something to run on one instruction set's token.
    trait OnIsa {
        fn run<S: Simd>(&self, s: S) -> Vec<u64>;
    }

    fn run_on(isa: Isa, k: &impl OnIsa) -> Vec<u64> {
        match isa {
            Isa::Scalar => k.run(Scalar),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => x86::Avx2::new().unwrap().with(|s| k.run(s)),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => x86::Avx512::<false>::new().unwrap().with(|s| k.run(s)),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bf16 => x86::Avx512::<true>::new().unwrap().with(|s| k.run(s)),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => neon::Neon::new().with(|s| k.run(s)),
            #[allow(unreachable_patterns)]
            _ => unreachable!(),
        }
    }

    /// Every vector path against the scalar specification, bit for bit.
    #[test]
    fn vector_paths_match_scalar_bit_for_bit() {
        struct Ops([f64; 8], [f64; 8], [f64; 8]);
        impl OnIsa for Ops {
            fn run<S: Simd>(&self, s: S) -> Vec<u64> {
                run_ops(s, self.0, self.1, self.2)
            }
        }
        let vals = stress_values();
        for isa in Isa::available() {
            for chunk in vals.chunks_exact(8) {
                let a: [f64; 8] = chunk.try_into().unwrap();
                let b: [f64; 8] = std::array::from_fn(|k| chunk[(k + 3) % 8] * 0.75);
                let c: [f64; 8] = std::array::from_fn(|k| -chunk[(k + 5) % 8]);
                let want = run_ops(Scalar, a, b, c);
                let got = run_on(isa, &Ops(a, b, c));
                if got != want {
                    let first = (0..got.len()).find(|&i| got[i] != want[i]).unwrap();
                    panic!(
                        "{isa} on {a:?}: entry {first} got {:x} want {:x}",
                        got[first], want[first]
                    );
                }
            }
        }
    }

    /// A pair store (`Element::store_pair`, streamed or not: for f16 and bf16 on AVX-512
    /// one sixteen-lane store, elsewhere and for f32 two stores) writes the bits of the
    /// two single stores, first vector first, and returns exactly their reports, the
    /// first's in the low byte: the output loop ORs them by place into a report of eight
    /// vectors, and the second look finds each vector's own lanes by storing it again
    /// alone.
    #[test]
    fn pair_stores_are_two_single_stores() {
        use crate::Element;
        use half::{bf16, f16};
        #[repr(align(32))]
        struct Aligned<T>([T; 16]);
        struct Pairs(Vec<f64>);
        fn compare<S: Simd, T: Element>(s: S, v: [S::V; 2], f: &NearFilter) -> bool {
            let (mut a, mut b) = ([T::default(); 8], [T::default(); 8]);
            let single = [T::store(s, v[0], &mut a, f), T::store(s, v[1], &mut b, f)];
            let want: Vec<u64> = a.iter().chain(&b).map(|x| x.to_bits()).collect();
            [false, true].into_iter().all(|stream| {
                let mut dst = Aligned([T::from_bits(0x7e01); 16]);
                let reports = T::store_pair(s, v, &mut dst.0, f, stream);
                let got: Vec<u64> = dst.0.iter().map(|x| x.to_bits()).collect();
                got == want && reports.to_le_bytes() == single
            })
        }
        impl OnIsa for Pairs {
            fn run<S: Simd>(&self, s: S) -> Vec<u64> {
                let mut mismatches = Vec::new();
                for (k, chunk) in self.0.chunks_exact(16).enumerate() {
                    let v = [
                        s.load_lanes(chunk[..8].try_into().unwrap()),
                        s.load_lanes(chunk[8..].try_into().unwrap()),
                    ];
                    for small in [0.0, 1e-3, 2.5, f64::NAN] {
                        let f16_ok =
                            compare::<S, f16>(s, v, &NearFilter::new(Dtype::F16, 1 << 23, small));
                        let bf16_ok =
                            compare::<S, bf16>(s, v, &NearFilter::new(Dtype::BF16, 1 << 24, small));
                        let f32_ok =
                            compare::<S, f32>(s, v, &NearFilter::new(Dtype::F32, 1 << 16, small));
                        for (format, ok) in [f16_ok, bf16_ok, f32_ok].into_iter().enumerate() {
                            if !ok {
                                mismatches.extend([k as u64, format as u64]);
                            }
                        }
                    }
                }
                mismatches
            }
        }
        let vals = stress_values();
        for isa in Isa::available() {
            let bad = run_on(isa, &Pairs(vals.clone()));
            assert!(
                bad.is_empty(),
                "{isa}: pair {} ({}) differs from two stores",
                bad[0],
                ["f16", "bf16", "f32"][bad[1] as usize]
            );
        }
    }

    /// What the stores report beyond the filter's lanes (which `run_ops` checks they
    /// report) stays near it: lanes within 2^29 f64-ulps of a midpoint (the AVX-512 and
    /// AVX2 f16 and bf16 stores report those whose f32 is a midpoint) or barely above the
    /// threshold (the f32 stores compare the rounded magnitude, or the high half of the
    /// f64, which also fails lanes of 2^1017 and above: see `NearFilter::small_high`). A
    /// store that reported every lane would be correct, and slow.
    #[test]
    fn stores_report_little_beyond_the_filter() {
        struct Beyond(Vec<f64>);
        impl OnIsa for Beyond {
            fn run<S: Simd>(&self, s: S) -> Vec<u64> {
                let mut beyond = Vec::new();
                for chunk in self.0.chunks_exact(8) {
                    let lanes: [f64; 8] = chunk.try_into().unwrap();
                    let v = s.load_lanes(lanes);
                    let huge = (0..8).fold(0u8, |m, l| {
                        m | (((lanes[l].abs() >= 2f64.powi(1017)) as u8) << l)
                    });
                    for small in [1e-3, 2.5] {
                        let slack = |format: Dtype, w: u64| {
                            Scalar.near(lanes, &NearFilter::new(format, w, small * 1.01))
                        };
                        let filter = |format: Dtype, w: u64| NearFilter::new(format, w, small);
                        let (mut h, mut f) = ([0u16; 8], [0f32; 8]);
                        let reported = [
                            s.store_f16(v, &mut h, &filter(Dtype::F16, 1 << 23))
                                & !slack(Dtype::F16, 1 << 29),
                            s.store_bf16(v, &mut h, &filter(Dtype::BF16, 1 << 24))
                                & !slack(Dtype::BF16, 1 << 29),
                            s.f32_lanes(s.store_f32(v, &mut f, &filter(Dtype::F32, 1 << 16)))
                                & !slack(Dtype::F32, 1 << 16)
                                & !huge,
                        ];
                        for (k, r) in reported.into_iter().enumerate() {
                            for l in (0..8).filter(|l| r & (1 << l) != 0) {
                                beyond.push(k as u64);
                                beyond.push(lanes[l].to_bits());
                            }
                        }
                    }
                }
                beyond
            }
        }
        let vals: Vec<f64> = stress_values()
            .into_iter()
            .filter(|x| x.is_finite())
            .collect();
        for isa in Isa::available() {
            let beyond = run_on(isa, &Beyond(vals.clone()));
            assert!(
                beyond.is_empty(),
                "{isa}: store {} reported {:e}",
                beyond[0],
                f64::from_bits(beyond[1])
            );
        }
    }

    /// Every method once, results as bits (NaN payloads included).
    fn run_ops<S: Simd>(s: S, a: [f64; 8], b: [f64; 8], c: [f64; 8]) -> Vec<u64> {
        let (va, vb, vc) = (s.load_lanes(a), s.load_lanes(b), s.load_lanes(c));
        let mut out: Vec<u64> = Vec::new();
        for v in [
            s.add(va, vb),
            s.sub(va, vb),
            s.mul(va, vb),
            s.fma(va, vb, vc),
            s.splat(a[3]),
        ] {
            out.extend(s.to_array(v).map(f64::to_bits));
        }
        let (mut h, mut f) = ([0u16; 8], [0f32; 8]);
        let lanes = s.to_array(va);
        // The stores with each format's filter (the kernels' windows, and thresholds that
        // cut through the lanes): whether the lanes reported hold those the filter does not
        // pass (`near`, itself compared below), and the values with the reported lanes
        // rewritten with the correct rounding, as a caller keeps them (which other lanes a
        // path reports is its own affair). Returns the kept bits.
        let keep = |out: &mut Vec<u64>, dt: Dtype, f: &NearFilter, flagged: u8, bits: [u64; 8]| {
            out.push((s.near(va, f) & !flagged) as u64);
            let kept: [u64; 8] = std::array::from_fn(|l| {
                if flagged & (1 << l) != 0 {
                    dt.round_f64(lanes[l])
                } else {
                    bits[l]
                }
            });
            out.extend(kept);
            kept
        };
        for small in [0.0, 1e-3, f64::MAX, f64::NAN] {
            for (dt, w) in [(Dtype::F16, 1 << 23), (Dtype::BF16, 1 << 24)] {
                let f16 = dt == Dtype::F16;
                let fl = NearFilter::new(dt, w, small);
                let flagged = if f16 {
                    s.store_f16(va, &mut h, &fl)
                } else {
                    s.store_bf16(va, &mut h, &fl)
                };
                let kept = keep(&mut out, dt, &fl, flagged, h.map(u64::from)).map(|b| b as u16);
                let back = if f16 {
                    s.load_f16(&kept)
                } else {
                    s.load_bf16(&kept)
                };
                out.extend(s.to_array(back).map(f64::to_bits));
            }
            let ff = NearFilter::new(Dtype::F32, 1 << 16, small);
            let flagged = s.f32_lanes(s.store_f32(va, &mut f, &ff));
            let kept = keep(
                &mut out,
                Dtype::F32,
                &ff,
                flagged,
                f.map(|x| x.to_bits() as u64),
            );
            let kept = kept.map(|b| f32::from_bits(b as u32));
            out.extend(s.to_array(s.load_f32(&kept)).map(f64::to_bits));
        }
        // The certainty filter of each format, two windows, and thresholds that cut
        // through the lanes (NaN lanes included).
        for format in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            for w in [32u64, 1 << 16] {
                for small in [0.0, 1e-3, f64::MAX] {
                    let f = NearFilter::new(format, w, small);
                    out.push(s.near(va, &f) as u64);
                    out.push(s.near(vc, &f) as u64);
                }
            }
        }
        out.extend(run_f32x16(s, a, b, c));
        out
    }

    /// The sixteen-lane f32 methods once (lanes from a and b, narrowed to f32), as bits.
    /// Stored 16-bit lanes are compared where the contract fixes them (finite, at least
    /// 2^-100, not exactly a midpoint); NaN results by their being NaN.
    fn run_f32x16<S: Simd>(s: S, a: [f64; 8], b: [f64; 8], c: [f64; 8]) -> Vec<u64> {
        let sixteen = |u: [f64; 8], v: [f64; 8]| -> [f32; 16] {
            std::array::from_fn(|k| if k < 8 { u[k] as f32 } else { v[k - 8] as f32 })
        };
        let (fa, fb) = (sixteen(a, b), sixteen(c, a));
        let (va, vb) = (s.f32x16_load_f32(&fa), s.f32x16_load_f32(&fb));
        let bits = |v: S::F32x16| {
            let mut o = [0f32; 16];
            s.f32x16_store_f32(v, &mut o, false);
            o.map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() } as u64)
        };
        let mut out = Vec::new();
        for v in [
            s.f32x16_add(va, vb),
            s.f32x16_sub(va, vb),
            s.f32x16_mul(va, vb),
            s.f32x16_splat(fa[3]),
        ] {
            out.extend(bits(v));
        }
        for (half_bit, lowest) in [(12, 2f32.powi(-14)), (15, 2f32.powi(-100))] {
            let half = 1u32 << half_bit;
            let tests =
                [(3.2 * 2f32.powi(-24), 1e-30), (1e-3, 0.0)].map(|(slope, floor)| CertainTest {
                    slope,
                    floor,
                    cap: 2f32.powi(half_bit - 25),
                    low_mask: 2 * half - 1,
                    half,
                });
            for t in tests {
                out.push(s.f32x16_uncertain(va, &t) as u64);
                out.push(s.f32x16_uncertain(vb, &t) as u64);
            }
            let fixed = |x: f32| {
                x.is_finite() && x.abs() >= lowest && (x.to_bits() & (2 * half - 1)) != half
            };
            let mut h = [0u16; 16];
            if half_bit == 12 {
                s.f32x16_store_f16(va, &mut h, false);
                let back = bits(s.f32x16_load_f16(&h));
                out.extend((0..16).map(|k| if fixed(fa[k]) { h[k] as u64 } else { 0 }));
                out.extend((0..16).map(|k| if fixed(fa[k]) { back[k] } else { 0 }));
                continue;
            }
            // bf16 vectors keep their own lane order (`f32x16_load_bf16`): built from bf16
            // loads, as the kernels build them. Each lane the sum of a's value rounded to
            // bf16 and of its remainder rounded again (an f32 between bf16 values), and
            // the lane sets of the test over them in element order.
            let to_bf16 = |v: [f32; 16]| v.map(|x| half::bf16::from_f32(x).to_bits());
            let high = to_bf16(fa);
            let rest = to_bf16(std::array::from_fn(|k| {
                fa[k] - half::bf16::from_bits(high[k]).to_f32()
            }));
            let sums: [f32; 16] = std::array::from_fn(|k| {
                half::bf16::from_bits(high[k]).to_f32() + half::bf16::from_bits(rest[k]).to_f32()
            });
            let (vh, vr) = (s.f32x16_load_bf16(&high), s.f32x16_load_bf16(&rest));
            let v = s.f32x16_add(vh, vr);
            for t in tests {
                out.push(s.f32x16_bf16_lanes(s.f32x16_uncertain(v, &t)) as u64);
                out.push(s.f32x16_bf16_lanes(s.f32x16_uncertain(vr, &t)) as u64);
            }
            s.f32x16_store_bf16(v, &mut h, false);
            let mut back = [0u16; 16];
            s.f32x16_store_bf16(s.f32x16_load_bf16(&h), &mut back, false);
            out.extend((0..16).map(|k| if fixed(sums[k]) { h[k] as u64 } else { 0 }));
            out.extend((0..16).map(|k| if fixed(sums[k]) { back[k] as u64 } else { 0 }));
            // The same as a pair of blocks (`f32x16_load_bf16_pair`, interleaved on
            // AVX-512): the second block holds the first's two parts swapped,
            // so its lanes' sums are the same, and the lane sets in element order.
            let join = |a: &[u16; 16], b: &[u16; 16]| -> [u16; 32] {
                std::array::from_fn(|k| if k < 16 { a[k] } else { b[k - 16] })
            };
            let [h0, h1] = s.f32x16_load_bf16_pair(&join(&high, &rest));
            let [r0, r1] = s.f32x16_load_bf16_pair(&join(&rest, &high));
            let pair = [s.f32x16_add(h0, r0), s.f32x16_add(h1, r1)];
            for t in tests {
                for v in [pair, [r0, r1]] {
                    let lanes = [s.f32x16_uncertain(v[0], &t), s.f32x16_uncertain(v[1], &t)];
                    out.extend(s.f32x16_bf16_pair_elements(lanes).map(u64::from));
                }
            }
            let mut h = [0u16; 32];
            s.f32x16_store_bf16_pair(pair, &mut h, false);
            let mut back = [0u16; 32];
            s.f32x16_store_bf16_pair(s.f32x16_load_bf16_pair(&h), &mut back, false);
            out.extend((0..32).map(|k| if fixed(sums[k % 16]) { h[k] as u64 } else { 0 }));
            out.extend((0..32).map(|k| {
                if fixed(sums[k % 16]) {
                    back[k] as u64
                } else {
                    0
                }
            }));
        }
        out
    }

    /// Every path whose instructions the CPU has is offered, and is what `detect` picks:
    /// the required features restated from the CPU's own report, so that a path the
    /// kernels could run but the dispatch leaves out (and every test skips) fails here.
    #[test]
    fn available_offers_every_path_the_cpu_supports() {
        let available = Isa::available();
        assert_eq!(available.first(), Some(&Isa::Scalar));
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c");
            let avx512 = avx2
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512bw");
            let bf16 = avx512 && is_x86_feature_detected!("avx512bf16");
            let expected: Vec<Isa> = [
                (Isa::Scalar, true),
                (Isa::Avx2, avx2),
                (Isa::Avx512, avx512),
                (Isa::Avx512Bf16, bf16),
            ]
            .into_iter()
            .filter_map(|(isa, has)| has.then_some(isa))
            .collect();
            assert_eq!(available, expected);
        }
        #[cfg(target_arch = "aarch64")]
        assert_eq!(available, [Isa::Scalar, Isa::Neon]);
        assert_eq!(Some(&Isa::detect()), available.last());
    }
}
