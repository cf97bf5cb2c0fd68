//! Worked examples with exact values: every number in these tables is computed in exact
//! rational arithmetic (square roots written as `c·√s`), and every claim in them is checked
//! exactly, including that the f64 pipeline's certified enclosures contain the exact lengths.

use super::decompose::{symmetric_eigen, Threads};
use super::exact::{self, rational_roots_near, sqrt_text, Secular};
use super::{analyze, EllipsoidInput, Options};
use crate::error::{Error, Result};
use crate::output::format::Table;
use rug::{Integer, Rational};
use std::cmp::Ordering;

/// One exactly known axis.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactAxis {
    /// Eigenvalue of `ΠG²Π`; `λ = 1/ζ`; semi-axis² `= Nζ`.
    pub zeta: Rational,
    /// An input `a` (primitive integer vector in `1⊥`) whose output is the axis endpoint:
    /// `LN_{ε=0}(a) − b = √(Nζ)·Ga/‖Ga‖`.
    pub input: Vec<Integer>,
    /// The axis direction `Ga`, as a primitive integer vector.
    pub direction: Vec<Integer>,
}

/// An exactly solved example.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkedExample {
    pub gain: Vec<Rational>,
    pub bias: Vec<Rational>,
    pub axes: Vec<ExactAxis>,
    pub table: Table,
    /// Every exact identity in the table held, and the f64 enclosures contain the exact lengths.
    pub all_checks_pass: bool,
}

fn vec_text<T: std::fmt::Display>(v: &[T]) -> String {
    format!(
        "({})",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The primitive integer vector with the direction of `v`, sign flipped so that the largest
/// |component| is positive when `canonical_sign`, else a positive multiple of `v`.
fn primitive(v: &[Rational], canonical_sign: bool) -> Vec<Integer> {
    let mut den = Integer::from(1);
    for x in v {
        den.lcm_mut(x.denom());
    }
    // `x·den` is an integer for every x: take the numerators.
    let mut ints: Vec<Integer> = v
        .iter()
        .map(|x| Rational::from(x * &den).into_numer_denom().0)
        .collect();
    let mut g = Integer::new();
    for x in &ints {
        g.gcd_mut(x);
    }
    if g != 0 {
        for x in ints.iter_mut() {
            *x /= &g;
        }
    }
    if !canonical_sign {
        return ints;
    }
    let lead = ints.iter().fold(Integer::new(), |best, x| {
        if x.clone().abs() > best.clone().abs() {
            x.clone()
        } else {
            best
        }
    });
    if lead < 0 {
        for x in ints.iter_mut() {
            *x = -x.clone();
        }
    }
    ints
}

fn to_rationals(v: &[Integer]) -> Vec<Rational> {
    v.iter().map(|x| Rational::from(x.clone())).collect()
}

fn dot(a: &[Rational], b: &[Rational]) -> Rational {
    a.iter().zip(b).map(|(x, y)| Rational::from(x * y)).sum()
}

/// The exact axes of `ΠG²Π`: the secular roots (which must be rational here) and the
/// repeated-gain eigenvectors `e_first − e_other`; descending ζ.
fn exact_axes(g: &[Rational]) -> Result<Vec<ExactAxis>> {
    let n = g.len();
    let sec: Secular = exact::secular(g);
    let d: Vec<Rational> = g.iter().map(|x| Rational::from(x.square_ref())).collect();
    // Numerical approximations of the secular roots, to recognise them.
    let gf: Vec<f64> = g.iter().map(|x| x.to_f64()).collect();
    let k = super::matrices::gram_dense(&gf);
    let approx = symmetric_eigen(n, &k, Threads::One)?.values;
    let roots = rational_roots_near(&sec.poly, &approx);
    if roots.len() + 1 != sec.values.len() {
        return Err(Error::input(
            "the worked example needs gains whose secular roots are rational",
        ));
    }
    let mut axes = Vec::new();
    for zeta in roots {
        let v: Vec<Rational> = d
            .iter()
            .map(|dn| Rational::from(dn - &zeta).recip())
            .collect();
        let input = primitive(&v, true);
        let gv: Vec<Rational> = to_rationals(&input)
            .iter()
            .zip(g)
            .map(|(x, y)| Rational::from(x * y))
            .collect();
        axes.push(ExactAxis {
            zeta,
            input,
            direction: primitive(&gv, false),
        });
    }
    for (value, m) in &sec.values {
        if *m < 2 || value.cmp0() == Ordering::Equal {
            continue;
        }
        let members: Vec<usize> = (0..n).filter(|&i| d[i] == *value).collect();
        for &other in &members[1..] {
            let mut v = vec![Rational::new(); n];
            v[members[0]] = Rational::from(1);
            v[other] = Rational::from(-1);
            let input = primitive(&v, true);
            let gv: Vec<Rational> = to_rationals(&input)
                .iter()
                .zip(g)
                .map(|(x, y)| Rational::from(x * y))
                .collect();
            axes.push(ExactAxis {
                zeta: value.clone(),
                input,
                direction: primitive(&gv, false),
            });
        }
    }
    axes.sort_by(|a, b| b.zeta.cmp(&a.zeta));
    Ok(axes)
}

/// Solves the example exactly and tabulates it.
pub fn worked_example(title: &str, gain: &[Rational], bias: &[Rational]) -> Result<WorkedExample> {
    let n = gain.len();
    if bias.len() != n || n < 2 {
        return Err(Error::input(
            "worked example: need N >= 2 gains and as many biases",
        ));
    }
    let nn = Rational::from(n as u64);
    let axes = exact_axes(gain)?;
    let q = exact::tight_form(gain);
    let k = exact::gram(gain);
    let p_k = exact::char_poly(&k);
    let p_q = exact::char_poly(&q);
    let zero_gains: Vec<usize> = (0..n)
        .filter(|&i| gain[i].cmp0() == Ordering::Equal)
        .collect();
    let mut ok = true;

    let mut t = Table::new(["quantity", "exact value"]);
    t.comment(format!(
        "{title}: LN(a) = sqrt(N) G Pi a / sqrt(|Pi a|^2 + N eps) + b, eps = 0 (every value exact)"
    ));
    t.push(["N".to_string(), n.to_string()]);
    t.push(["gain g".to_string(), vec_text(gain)]);
    t.push(["bias b".to_string(), vec_text(bias)]);
    if zero_gains.is_empty() {
        let alpha: Vec<Rational> = gain.iter().map(|x| Rational::from(x.recip_ref())).collect();
        t.push(["normal alpha = 1/g".to_string(), vec_text(&alpha)]);
        t.push(["|alpha|^2".to_string(), dot(&alpha, &alpha).to_string()]);
    } else {
        t.push([
            "normal space (zero gains)".to_string(),
            format!(
                "span of e_n, n in {}",
                vec_text(&zero_gains.iter().map(|i| i + 1).collect::<Vec<_>>())
            ),
        ]);
    }
    t.push(["det(xI - Pi G^2 Pi)".to_string(), p_k.display("x")]);
    t.push(["det(xI - Q), Q = (G Pi G)^+".to_string(), p_q.display("x")]);
    // λ = 1/ζ, checked on the polynomials.
    let (zk, rest_k) = p_k.split_zero_roots();
    let (zq, rest_q) = p_q.split_zero_roots();
    let reciprocal = zk == zq && rest_k.reversed().monic() == rest_q.monic();
    ok &= reciprocal;
    t.push([
        "nonzero roots of the two are reciprocal".to_string(),
        yes_no(reciprocal),
    ]);

    for (idx, ax) in axes.iter().enumerate() {
        let a = to_rationals(&ax.input);
        let gv: Vec<Rational> = a
            .iter()
            .zip(gain)
            .map(|(x, y)| Rational::from(x * y))
            .collect();
        let len2 = Rational::from(&nn * &ax.zeta);
        let lambda = Rational::from(ax.zeta.recip_ref());
        // The identities that make LN(a) the endpoint: 1ᵀa = 0 (so Πa = a), ‖Ga‖² = ζ‖a‖²
        // (so ‖LN(a) − b‖² = N‖Ga‖²/‖a‖² = Nζ), and Q·Ga = λ·Ga (Ga is the Q-eigenvector).
        let sum_zero = a.iter().cloned().sum::<Rational>().cmp0() == Ordering::Equal;
        let length_ok = dot(&gv, &gv) == Rational::from(&ax.zeta * &dot(&a, &a));
        let qgv = exact::mat_vec(&q, &gv);
        let eigen_ok = qgv
            .iter()
            .zip(&gv)
            .all(|(x, y)| *x == Rational::from(&lambda * y));
        // The printed direction is a positive multiple of Ga (so LN(a) − b points along it).
        let dir = to_rationals(&ax.direction);
        let aligned = dot(&dir, &gv).cmp0() == Ordering::Greater
            && Rational::from(dot(&dir, &gv).square_ref())
                == Rational::from(&dot(&dir, &dir) * &dot(&gv, &gv));
        let pass = sum_zero && length_ok && eigen_ok && aligned;
        ok &= pass;
        let i = idx + 1;
        t.push([
            format!("axis {i}: zeta (eigenvalue of Pi G^2 Pi)"),
            ax.zeta.to_string(),
        ]);
        t.push([
            format!("axis {i}: lambda = 1/zeta (eigenvalue of Q)"),
            lambda.to_string(),
        ]);
        t.push([
            format!("axis {i}: semi-axis sqrt(N zeta) = sqrt(N/lambda)"),
            format!("{} = sqrt({len2})", sqrt_text(&len2)),
        ]);
        t.push([
            format!("axis {i}: direction (unnormalised)"),
            format!(
                "{}, |.|^2 = {}",
                vec_text(&ax.direction),
                dot(&to_rationals(&ax.direction), &to_rationals(&ax.direction))
            ),
        ]);
        t.push([
            format!("axis {i}: input a with LN(a) = b + semi-axis * direction/|direction|"),
            vec_text(&ax.input),
        ]);
        t.push([
            format!(
                "axis {i}: 1^T a = 0, |Ga|^2 = zeta |a|^2, Q Ga = lambda Ga, Ga along direction"
            ),
            yes_no(pass),
        ]);
    }

    // Riechers' Drazin lengths, when some gain is 0, against the tight ones.
    if !zero_gains.is_empty() {
        let drazin: Vec<String> = gain
            .iter()
            .filter(|x| x.cmp0() != Ordering::Equal)
            .map(|x| sqrt_text(&Rational::from(&nn * &Rational::from(x.square_ref()))))
            .collect();
        t.push([
            "Riechers' Drazin-inverse lengths sqrt(N) |g_n| (a containing ellipsoid, not the image's semi-axes)".to_string(),
            format!("({})", drazin.join(", ")),
        ]);
        if let Some(i) = (0..n).find(|&i| gain[i].cmp0() != Ordering::Equal) {
            // The Drazin endpoint b + √N g_i e_i needs u ∈ 1⊥ with u_i = √N and u = 0 on the
            // other nonzero-gain coordinates: ‖u‖² ≥ N + N/k > N.
            let k = Rational::from(zero_gains.len() as u64);
            let need = Rational::from(&nn + &Rational::from(&nn / &k));
            t.push([
                format!(
                    "Drazin endpoint b + sqrt(N) g_{} e_{} needs |u|^2 >= N + N/k",
                    i + 1,
                    i + 1
                ),
                format!("{need} > N = {n}: not an output"),
            ]);
        }
        let nonzero: Vec<usize> = (0..n)
            .filter(|&i| gain[i].cmp0() != Ordering::Equal)
            .collect();
        if let [i, j, ..] = nonzero[..] {
            // Where the Drazin ellipsoid touches the image: a = e_i − e_j is centred and zero
            // on every zero gain, so (y − b)ᵀ diag(1/g²) (y − b) = N·(a_i² + a_j²)/‖a‖² = N.
            let mut a = vec![Rational::new(); n];
            a[i] = Rational::from(1);
            a[j] = Rational::from(-1);
            let norm2 = dot(&a, &a);
            let form = Rational::from(
                &nn * &(Rational::from(a[i].square_ref()) + Rational::from(a[j].square_ref())),
            ) / &norm2;
            t.push([
                format!(
                    "Drazin contact: a = {}, (y-b)^T diag(1/g^2) (y-b) = N (|y-b|^2 shown at eps = 0)",
                    vec_text(&a)
                ),
                format!(
                    "{form} = N: LN(a) = b + sqrt(N/|a|^2) G a is on the Drazin surface (|y-b|^2 = {})",
                    Rational::from(&nn * &(Rational::from(gain[i].square_ref()) + Rational::from(gain[j].square_ref())))
                        / &norm2
                ),
            ]);
        }
    }

    // The f64 pipeline's certified enclosures contain the exact lengths (checked exactly).
    let gf: Vec<f64> = gain.iter().map(|x| x.to_f64()).collect();
    let bf: Vec<f64> = bias.iter().map(|x| x.to_f64()).collect();
    let exact_inputs = gf
        .iter()
        .zip(gain)
        .all(|(f, r)| Rational::from_f64(*f).as_ref() == Some(r));
    if exact_inputs {
        let e = analyze(&EllipsoidInput::new(gf, Some(bf), 0.0)?, Options::default())?;
        let contained = e.axes.len() == axes.len()
            && e.axes.iter().zip(&axes).all(|(fa, xa)| {
                let len2 = Rational::from(&nn * &xa.zeta);
                let lo = Rational::from_f64(fa.semi_axis_lo).expect("finite");
                let hi =
                    Rational::from_f64(fa.semi_axis_hi).map(|h| Rational::from(h.square_ref()));
                Rational::from(lo.square_ref()) <= len2 && hi.is_none_or(|h| len2 <= h)
            });
        ok &= contained && e.verified();
        t.push([
            "f64 pipeline: certified semi-axis enclosures contain the exact values".to_string(),
            yes_no(contained && e.verified()),
        ]);
    }
    Ok(WorkedExample {
        gain: gain.to_vec(),
        bias: bias.to_vec(),
        axes,
        table: t,
        all_checks_pass: ok,
    })
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "NO" }.to_string()
}

fn rats(v: &[(i64, i64)]) -> Vec<Rational> {
    v.iter().map(|&(a, b)| Rational::from((a, b))).collect()
}

/// N = 4, `g = (2, 9, 12, 13)`: the smallest integer gains (up to 24) whose hyperellipsoid
/// has a fully rational spectrum, `ζ ∈ {158, 109, 63/2}`.
pub fn riechers_example() -> Result<WorkedExample> {
    worked_example(
        "Worked example (N = 4, rational spectrum)",
        &rats(&[(2, 1), (9, 1), (12, 1), (13, 1)]),
        &rats(&[(1, 1), (-1, 1), (1, 2), (0, 1)]),
    )
}

/// N = 3, `g = (1, 1, 0)`: one zero gain, where Riechers' Drazin prescription overshoots.
pub fn zero_gain_example() -> Result<WorkedExample> {
    worked_example(
        "Zero-gain example (N = 3, g_3 = 0)",
        &rats(&[(1, 1), (1, 1), (0, 1)]),
        &rats(&[(0, 1), (0, 1), (0, 1)]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worked_example_is_exact_and_checked() {
        let ex = riechers_example().unwrap();
        assert!(ex.all_checks_pass, "{}", ex.table.markdown());
        let zetas: Vec<Rational> = ex.axes.iter().map(|a| a.zeta.clone()).collect();
        assert_eq!(zetas, rats(&[(158, 1), (109, 1), (63, 2)]));
        // ζ = 158: v_n ∝ 1/(g_n² − 158) = (−1/154, −1/77, −1/14, 1/11) ∝ (−1, −2, −11, 14).
        assert_eq!(
            ex.axes[0].input,
            [-1, -2, -11, 14].map(Integer::from).to_vec()
        );
    }

    #[test]
    fn the_zero_gain_example_shows_the_drazin_overshoot() {
        let ex = zero_gain_example().unwrap();
        assert!(ex.all_checks_pass, "{}", ex.table.markdown());
        let zetas: Vec<Rational> = ex.axes.iter().map(|a| a.zeta.clone()).collect();
        assert_eq!(zetas, rats(&[(1, 1), (1, 3)]));
        assert_eq!(ex.axes[0].direction, [1, -1, 0].map(Integer::from).to_vec());
        assert_eq!(ex.axes[1].input, [-1, -1, 2].map(Integer::from).to_vec());
        assert_eq!(
            ex.axes[1].direction,
            [-1, -1, 0].map(Integer::from).to_vec()
        );
        let md = ex.table.markdown();
        assert!(md.contains("(√3, √3)"), "{md}");
        // The Drazin circle of radius √3 touches the image at ±√3(1, −1, 0)/√2.
        assert!(md.contains("a = (1, -1, 0)"), "{md}");
        assert!(md.contains("3 = N: LN(a)"), "{md}");
        assert!(md.contains("y-b\\|^2 = 3)"), "{md}");
    }

    #[test]
    fn irrational_spectra_are_refused() {
        // g = (1, 2, 4): s(ζ) = 3ζ² − 42ζ + 84, discriminant 756 (not a square).
        assert!(
            worked_example("x", &rats(&[(1, 1), (2, 1), (4, 1)]), &rats(&[(0, 1); 3])).is_err()
        );
        // g = (1, 2, 3) is rational: s(ζ) = 3ζ² − 28ζ + 49 = (3ζ − 7)(ζ − 7).
        let ex =
            worked_example("y", &rats(&[(1, 1), (2, 1), (3, 1)]), &rats(&[(0, 1); 3])).unwrap();
        assert!(ex.all_checks_pass);
        assert_eq!(
            ex.axes.iter().map(|a| a.zeta.clone()).collect::<Vec<_>>(),
            rats(&[(7, 1), (7, 3)])
        );
    }
}
