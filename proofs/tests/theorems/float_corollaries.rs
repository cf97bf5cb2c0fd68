//! The float corollaries: correctly rounded outputs in every format satisfy the derived bounds
//! on |mean(y)| and |‖y‖² − ‖z‖²|; and the exact rounding agrees with the format's rounding.

use normoracle::dtype::Dtype;
use normoracle::exact::surd::Surd;
use normoracle::problem::{EpsConvention, Op};
use normoracle_geometry::theorems::float_corollaries::{check_rounded_case, round_exact};
use normoracle_geometry::theorems::inputs::Family;
use normoracle_proofs::{config, eps, holds, qc_holds, quickcheck, width, QcEps};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

fn case(
    dtype: usize,
    family: usize,
    param: u64,
    words: &[u64],
    e: &Rational,
    rms: bool,
    outside: bool,
) -> Result<(), String> {
    let dt = Dtype::ALL[dtype % 4];
    let x = Family::of_dtype(dt)[family % 5].row(param, words);
    let op = if rms { Op::RmsNorm } else { Op::LayerNorm };
    let convention = if outside {
        EpsConvention::Outside
    } else {
        EpsConvention::Inside
    };
    check_rounded_case(round_exact, dt, op, convention, &x, e)
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn correctly_rounded_outputs_meet_the_bounds(
        dtype in 0..4usize, family in 0..5usize, param in any::<u64>(),
        words in width().prop_flat_map(|d| proptest::collection::vec(any::<u64>(), d)),
        e in eps(), rms in any::<bool>(), outside in any::<bool>(),
    ) {
        holds(case(dtype, family, param, &words, &e, rms, outside))?;
    }

    #[test]
    fn exact_rounding_of_rationals_is_the_formats_rounding(bits in any::<u64>(), dtype in 0..3usize) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite() && v != 0.0);
        let dt = [Dtype::F16, Dtype::BF16, Dtype::F32][dtype];
        let z = Surd::rational(Rational::from_f64(v).expect("finite"));
        prop_assert_eq!(round_exact(dt, &z), dt.round_f64(v));
    }
}

#[test]
fn quickcheck_correctly_rounded_outputs_meet_the_bounds() {
    fn property(
        dtype: u8,
        family: u8,
        param: u64,
        words: Vec<u64>,
        e: QcEps,
        rms: bool,
        outside: bool,
    ) -> TestResult {
        if words.is_empty() {
            return TestResult::discard();
        }
        qc_holds(case(
            dtype as usize,
            family as usize,
            param,
            &words,
            &e.value(),
            rms,
            outside,
        ))
    }
    quickcheck(
        24,
        property as fn(u8, u8, u64, Vec<u64>, QcEps, bool, bool) -> TestResult,
    );
}
