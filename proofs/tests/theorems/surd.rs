//! The exact arithmetic under every theorem: field laws of `Surd` and its order against an
//! independent 512-bit MPFR evaluation wherever the two values are far enough apart to tell.

use normoracle::exact::surd::Surd;
use normoracle_proofs::{config, qc_holds, quickcheck, rational, QcRational};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::{Float, Rational};
use std::cmp::Ordering;

fn surd(a: Rational, b: Rational, r: Rational) -> Surd {
    Surd::new(a, b, r.abs()).expect("non-negative radicand")
}

/// The exact order of x and y agrees with MPFR's whenever the 512-bit values differ by more
/// than their rounding error; their difference is exactly zero iff they compare equal.
fn order_agrees(x: &Surd, y: &Surd) -> Result<(), String> {
    let (fx, fy) = (x.to_float(512), y.to_float(512));
    let gap = Float::with_val(512, &fx - &fy);
    let scale = Float::with_val(512, fx.abs_ref()) + Float::with_val(512, fy.abs_ref()) + 1u32;
    let exact = x.cmp(y);
    if Float::with_val(512, gap.abs_ref()) > scale >> 400u32 {
        let float = gap.cmp0().expect("finite");
        if float != exact {
            return Err(format!("{x} vs {y}: exact {exact:?}, MPFR {float:?}"));
        }
    }
    match x.sub(y) {
        Ok(diff) if diff.is_zero() != (exact == Ordering::Equal) => {
            Err(format!("{x} − {y} = {diff} but order {exact:?}"))
        }
        _ => Ok(()),
    }
}

/// Field laws that hold whenever the operands share a field.
fn field_laws(x: &Surd, y: &Surd) -> Result<(), String> {
    if let (Ok(sum), Ok(product)) = (x.add(y), x.mul(y)) {
        if sum.sub(y).map_err(String::from)? != *x {
            return Err(format!("({x} + {y}) − {y} ≠ {x}"));
        }
        if let Some(inv) = y.recip() {
            if product.mul(&inv).map_err(String::from)? != *x {
                return Err(format!("({x}·{y})/{y} ≠ {x}"));
            }
        }
        if x.square() != x.mul(x).map_err(String::from)? {
            return Err(format!("{x}² ≠ {x}·{x}"));
        }
    }
    if x.neg().signum() != x.signum().reverse() || x.abs().signum() == Ordering::Less {
        return Err(format!("signs of {x}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn order_matches_mpfr_across_fields(a in rational(), b in rational(), r in rational(), c in rational(), d in rational(), t in rational()) {
        let (x, y) = (surd(a, b, r), surd(c, d, t));
        prop_assert!(order_agrees(&x, &y).is_ok(), "{}", order_agrees(&x, &y).unwrap_err());
    }

    #[test]
    fn near_ties_in_one_field(a in rational(), b in rational(), r in rational(), tiny in 1u32..200) {
        // x and x + 2^-tiny·(something) are close; the exact order still decides.
        let x = surd(a, b, r);
        let y = x.add_rational(&(Rational::from(1) >> tiny));
        prop_assert_eq!(x.cmp(&y), Ordering::Less);
        prop_assert!(field_laws(&x, &y).is_ok(), "{}", field_laws(&x, &y).unwrap_err());
    }

    #[test]
    fn field_laws_with_a_shared_radicand(a in rational(), b in rational(), c in rational(), d in rational(), r in rational(), k in 1i64..50) {
        // √(k²r) shares Q(√r).
        let x = surd(a, b, r.clone());
        let y = surd(c, d, r * Rational::from(k * k));
        prop_assert!(field_laws(&x, &y).is_ok(), "{}", field_laws(&x, &y).unwrap_err());
        prop_assert!(order_agrees(&x, &y).is_ok(), "{}", order_agrees(&x, &y).unwrap_err());
    }
}

#[test]
fn quickcheck_order_matches_mpfr() {
    fn property(
        a: QcRational,
        b: QcRational,
        r: QcRational,
        c: QcRational,
        d: QcRational,
        t: QcRational,
    ) -> TestResult {
        let x = surd(a.value(), b.value(), r.value());
        let y = surd(c.value(), d.value(), t.value());
        qc_holds(order_agrees(&x, &y).and(field_laws(&x, &y)))
    }
    quickcheck(
        64,
        property
            as fn(
                QcRational,
                QcRational,
                QcRational,
                QcRational,
                QcRational,
                QcRational,
            ) -> TestResult,
    );
}
