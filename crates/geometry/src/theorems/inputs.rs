//! The inputs the theorems are tried on, defined once as deterministic maps from raw 64-bit
//! words to exact rationals. Three generators feed the same maps: the catalogue's portable
//! ChaCha stream ([`Inputs`]), and the proptest strategies and quickcheck `Arbitrary` wrappers of
//! the `proofs/` crate (which shrink the words). A failing case is therefore described by
//! (family, param, words) whichever generator found it.
//!
//! Families: random rationals, and values of each float format (exact as rationals) drawn as
//! raw finite bit patterns (every exponent), Gaussian-like values, adversarial clusters (a huge
//! or tiny offset 2^k with a spread of a few ulps: huge mean offsets and tiny spreads), constant
//! rows (σ = 0) and subnormals.

use crate::dtype::{pow2, Dtype};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rug::Rational;

/// How a row's values are made from raw words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// p/q with |p| < 2^23 and q = odd·2^k (odd ∈ {1,3,5,7,9,15}, k < 16): the denominators'
    /// lcm stays bounded, so wide rows stay cheap.
    Rational,
    /// Raw finite bit patterns of the format: every exponent, signs, zeros, subnormals.
    Bits(Dtype),
    /// Box–Muller normal values (portable `libm`), scale 2^k and mean m·2^k from the param,
    /// rounded to the format.
    Gaussian(Dtype),
    /// ±(2^k + j·ulp(2^k)) with j < 2^s: one binade, a spread of s bits at offset 2^k (k over the
    /// whole normal range): huge mean offsets and tiny spreads.
    Cluster(Dtype),
    /// One value repeated: σ = 0.
    Constant(Dtype),
    /// Subnormals (and signed zeros) only.
    Subnormal(Dtype),
}

impl Family {
    /// Every family, in a fixed order (the index is what generators draw).
    pub fn all() -> Vec<Family> {
        let mut all = vec![Family::Rational];
        for dt in Dtype::ALL {
            all.extend(Family::of_dtype(dt));
        }
        all
    }

    /// The families whose values are numbers of `dtype`.
    pub fn of_dtype(dt: Dtype) -> [Family; 5] {
        [
            Family::Bits(dt),
            Family::Gaussian(dt),
            Family::Cluster(dt),
            Family::Constant(dt),
            Family::Subnormal(dt),
        ]
    }

    /// The family with this index into [`Family::all`] (modulo the count).
    pub fn from_index(i: usize) -> Family {
        let all = Family::all();
        all[i % all.len()]
    }

    pub fn name(self) -> String {
        match self {
            Family::Rational => "rational".to_string(),
            Family::Bits(dt) => format!("{dt}-bits"),
            Family::Gaussian(dt) => format!("{dt}-gaussian"),
            Family::Cluster(dt) => format!("{dt}-cluster"),
            Family::Constant(dt) => format!("{dt}-constant"),
            Family::Subnormal(dt) => format!("{dt}-subnormal"),
        }
    }

    /// The format the values belong to, if any.
    pub fn dtype(self) -> Option<Dtype> {
        match self {
            Family::Rational => None,
            Family::Bits(dt)
            | Family::Gaussian(dt)
            | Family::Cluster(dt)
            | Family::Constant(dt)
            | Family::Subnormal(dt) => Some(dt),
        }
    }

    /// The row made from one word per entry and a family parameter.
    pub fn row(self, param: u64, words: &[u64]) -> Vec<Rational> {
        match self {
            Family::Rational => words.iter().map(|&w| rational_from_word(w)).collect(),
            Family::Bits(dt) => words
                .iter()
                .map(|&w| exact(dt, finite_bits(dt, w)))
                .collect(),
            Family::Gaussian(dt) => {
                // |gaussian + m| < 16, so k ≤ emax − 4 keeps every value finite (f16!).
                let k = ((param % 41) as i32 - 20).min(dt.emax() - 4);
                let m = ((param >> 8) % 9) as f64 - 4.0;
                words
                    .iter()
                    .map(|&w| exact(dt, dt.round_f64((gaussian(w) + m) * pow2(k))))
                    .collect()
            }
            Family::Cluster(dt) => {
                let p = dt.precision();
                let k = dt.emin() + ((param & 0xffff) % (dt.emax() - dt.emin()) as u64) as i32;
                let spread_bits = 1 + (((param >> 16) & 0xffff) % (p - 1) as u64) as u32;
                let sign = if (param >> 40) & 1 == 1 { -1 } else { 1 };
                let base = exact_pow2(k);
                let ulp = exact_pow2(k - p + 1);
                words
                    .iter()
                    .map(|&w| {
                        // j < 2^spread_bits ≤ 2^(p−1): 2^k + j·ulp stays in the binade, exact.
                        let j = w & ((1u64 << spread_bits) - 1);
                        (Rational::from(&ulp * j) + &base) * sign
                    })
                    .collect()
            }
            Family::Constant(dt) => {
                let v = exact(dt, finite_bits(dt, param));
                vec![v; words.len()]
            }
            Family::Subnormal(dt) => {
                let fraction = (1u64 << (dt.precision() - 1)) - 1;
                let sign = 1u64 << (dt.bits() - 1);
                words
                    .iter()
                    .map(|&w| exact(dt, (w & fraction) | ((w >> 63) * sign)))
                    .collect()
            }
        }
    }
}

/// 2^e as an exact rational, for any e.
pub fn exact_pow2(e: i32) -> Rational {
    let magnitude = rug::Integer::from(1) << e.unsigned_abs();
    if e >= 0 {
        Rational::from(magnitude)
    } else {
        Rational::from((rug::Integer::from(1), magnitude))
    }
}

/// The exact value of finite bits.
fn exact(dt: Dtype, bits: u64) -> Rational {
    dt.to_rational(bits).expect("finite bits")
}

/// The low `dt.bits()` bits of w, made finite by clearing the exponent's top bit if needed.
pub fn finite_bits(dt: Dtype, w: u64) -> u64 {
    let bits = if dt.bits() == 64 {
        w
    } else {
        w & ((1u64 << dt.bits()) - 1)
    };
    if dt.is_finite(bits) {
        bits
    } else {
        bits & !(1u64 << (dt.bits() - 2))
    }
}

/// A standard-normal-like value from one word (Box–Muller with the portable `libm`).
fn gaussian(w: u64) -> f64 {
    let u1 = ((w >> 32) as f64 + 1.0) * pow2(-32); // (0, 1]
    let u2 = (w & 0xffff_ffff) as f64 * pow2(-32); // [0, 1)
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2)
}

/// A rational p/q from one word (see [`Family::Rational`]).
pub fn rational_from_word(w: u64) -> Rational {
    const ODDS: [u32; 6] = [1, 3, 5, 7, 9, 15];
    let p = (w as i64) >> 40;
    let odd = ODDS[(w & 7) as usize % ODDS.len()];
    let shift = ((w >> 3) & 15) as u32;
    Rational::from((p, odd << shift))
}

/// A nonzero rational from one word (1 where the word maps to 0).
pub fn nonzero_rational_from_word(w: u64) -> Rational {
    let q = rational_from_word(w);
    if q.cmp0() == std::cmp::Ordering::Equal {
        Rational::from(1)
    } else {
        q
    }
}

/// An ε ≥ 0 from one word: 0, the common f32 values 1e-5, 1e-6, 1e-12, a random positive f32
/// (2^-40..2^0), the smallest f32 subnormal, a random positive rational, or 1.
pub fn eps_from_word(w: u64) -> Rational {
    let f32_exact = |v: f32| Rational::from_f64(v as f64).expect("finite");
    match w % 8 {
        0 => Rational::new(),
        1 => f32_exact(1e-5),
        2 => f32_exact(1e-6),
        3 => f32_exact(1e-12),
        4 => {
            let e = -(((w >> 8) % 41) as i32);
            let mantissa = 1.0 + ((w >> 16) & 0x7f_ffff) as f64 * pow2(-23);
            f32_exact((mantissa * pow2(e)) as f32)
        }
        5 => f32_exact(f32::from_bits(1)),
        6 => nonzero_rational_from_word(w >> 3).abs(),
        _ => Rational::from(1),
    }
}

/// A row width from one word: 1..=64 seven times in eight, else 65..=max_d (when max_d > 64).
pub fn width_from_word(w: u64, max_d: usize) -> usize {
    if !w.is_multiple_of(8) || max_d <= 64 {
        1 + (w >> 8) as usize % max_d.clamp(1, 64)
    } else {
        65 + (w >> 8) as usize % (max_d - 64)
    }
}

/// The widest row the catalogue draws.
pub const MAX_WIDTH: usize = 4096;

/// A drawn row with what is needed to name it in a counterexample.
#[derive(Debug, Clone)]
pub struct Row {
    pub family: Family,
    pub param: u64,
    pub values: Vec<Rational>,
}

impl Row {
    pub fn d(&self) -> usize {
        self.values.len()
    }
    pub fn describe(&self) -> String {
        format!(
            "family {} param {:#x} d={}",
            self.family.name(),
            self.param,
            self.d()
        )
    }
}

/// The catalogue's portable generator: ChaCha8 seeded per theorem.
pub struct Inputs {
    rng: ChaCha8Rng,
    max_d: usize,
}

impl Inputs {
    /// A stream for one theorem: the seed mixed with the theorem's id, so theorems do not share
    /// draws and adding one does not shift another's.
    pub fn new(seed: u64, id: &str) -> Inputs {
        Inputs::with_max_width(seed, id, MAX_WIDTH)
    }

    pub fn with_max_width(seed: u64, id: &str, max_d: usize) -> Inputs {
        // FNV-1a of the id: stable across platforms and Rust versions.
        let salt = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        Inputs {
            rng: ChaCha8Rng::seed_from_u64(seed ^ salt),
            max_d: max_d.max(1),
        }
    }

    pub fn word(&mut self) -> u64 {
        self.rng.next_u64()
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.word() % n.max(1)
    }

    pub fn width(&mut self) -> usize {
        let w = self.word();
        width_from_word(w, self.max_d)
    }

    /// A row of width d from a random family.
    pub fn row_of_width(&mut self, d: usize) -> Row {
        let n = Family::all().len() as u64;
        let family = Family::from_index(self.below(n) as usize);
        self.row_of(family, d)
    }

    /// A row of a random width and family.
    pub fn row(&mut self) -> Row {
        let d = self.width();
        self.row_of_width(d)
    }

    /// A row of the given family and width.
    pub fn row_of(&mut self, family: Family, d: usize) -> Row {
        let param = self.word();
        let words: Vec<u64> = (0..d).map(|_| self.word()).collect();
        Row {
            family,
            param,
            values: family.row(param, &words),
        }
    }

    pub fn eps(&mut self) -> Rational {
        let w = self.word();
        eps_from_word(w)
    }

    pub fn rational(&mut self) -> Rational {
        let w = self.word();
        rational_from_word(w)
    }

    pub fn nonzero_rational(&mut self) -> Rational {
        let w = self.word();
        nonzero_rational_from_word(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::is_constant;

    #[test]
    fn families_make_values_of_their_format() {
        let words: Vec<u64> = (0..64u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 57))
            .collect();
        for fam in Family::all() {
            for param in [0u64, 1, 0xdead_beef_1234_5678, u64::MAX] {
                let row = fam.row(param, &words);
                assert_eq!(row.len(), words.len());
                if let Some(dt) = fam.dtype() {
                    for v in &row {
                        // Exactly representable: rounding the f64 value to the format is the identity
                        // and the f64 value is exact.
                        let f = v.to_f64();
                        assert_eq!(Rational::from_f64(f).as_ref(), Some(v), "{}", fam.name());
                        assert_eq!(dt.to_f64(dt.round_f64(f)), f, "{} {f:e}", fam.name());
                        if let Family::Subnormal(_) = fam {
                            assert!(f.abs() < pow2(dt.emin()), "{f:e}");
                        }
                    }
                }
                if let Family::Constant(_) = fam {
                    assert!(is_constant(&row));
                }
            }
        }
    }

    #[test]
    fn cluster_rows_are_one_binade_around_the_offset() {
        let words: Vec<u64> = (0..16u64).collect();
        let row = Family::Cluster(Dtype::F32).row(200 + (3u64 << 16), &words);
        // k = −126 + 200 % 253 = 74, spread 4 bits: values 2^74 + j·2^51, j < 16.
        let base = Rational::from_f64(pow2(74)).unwrap();
        for (j, v) in row.iter().enumerate() {
            assert_eq!(
                *v,
                base.clone() + Rational::from_f64(pow2(51)).unwrap() * j as u32
            );
        }
    }

    #[test]
    fn words_map_to_expected_scalars() {
        assert_eq!(rational_from_word(0), Rational::new());
        assert_eq!(
            rational_from_word(3u64 << 40 | 2 | 1 << 3),
            Rational::from((3, 10))
        );
        assert_eq!(nonzero_rational_from_word(0), Rational::from(1));
        assert_eq!(eps_from_word(0), Rational::new());
        assert_eq!(
            eps_from_word(1),
            Rational::from_f64(1e-5f32 as f64).unwrap()
        );
        assert_eq!(eps_from_word(5), Rational::from_f64(pow2(-149)).unwrap());
        assert_eq!(eps_from_word(7), Rational::from(1));
        for w in 0..4096u64 {
            let e = eps_from_word(w.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            assert!(e.cmp0() != std::cmp::Ordering::Less);
            let d = width_from_word(w.wrapping_mul(0x9e37_79b9_7f4a_7c15), 4096);
            assert!((1..=4096).contains(&d));
        }
        assert_eq!(width_from_word(8 << 8, 4096), 65 + 8);
        assert_eq!(width_from_word(1 | 63 << 8, 4096), 64);
        assert_eq!(width_from_word(0, 10), 1);
        assert_eq!(finite_bits(Dtype::F16, 0x7c00), 0x3c00);
        assert_eq!(exact_pow2(3), Rational::from(8));
        assert_eq!(
            exact_pow2(-1075),
            Rational::from_f64(pow2(-1074)).unwrap() / 2u32
        );
        assert_eq!(finite_bits(Dtype::F32, 0x1_3f80_0000), 0x3f80_0000);
    }

    #[test]
    fn streams_are_seeded_per_theorem() {
        let a: Vec<u64> = (0..4).map(|_| Inputs::new(7, "a").word()).collect();
        let mut s1 = Inputs::new(7, "a");
        let mut s2 = Inputs::new(7, "a");
        let mut s3 = Inputs::new(7, "b");
        let (x1, x2, x3) = (s1.row(), s2.row(), s3.row());
        assert_eq!(x1.values, x2.values);
        assert_eq!(x1.family, x2.family);
        assert!(x1.values != x3.values || x1.param != x3.param);
        assert_eq!(a[0], a[1]);
        assert!(x1.describe().contains("d="));
        let mut wide = 0;
        for _ in 0..400 {
            let d = s1.width();
            if d > 64 {
                wide += 1;
            }
        }
        assert!(wide > 10 && wide < 120, "{wide}");
    }
}
