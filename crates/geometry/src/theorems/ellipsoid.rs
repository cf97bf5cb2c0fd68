//! The LayerNorm hyperellipsoid (Riechers 2024), checked exactly.
//!
//! For `y = LN(a) = √N·G·Πa/√(‖Πa‖² + Nε) + b` write `w = GΠa` and `D = ‖Πa‖² + Nε`, so
//! `y − b = √(N/D)·w`: every claim about `y` becomes a rational identity or inequality about
//! `w` and `D` (the square root only ever appears squared). The axes come from the secular
//! structure of `ΠG²Π` ([`crate::ellipsoid::exact`]): the eigenvector of the
//! eigenvalue `ζ` is the polynomial vector `v(ζ)`, so every identity about all axes at once is
//! checked as a polynomial identity modulo the secular polynomial `s(ζ)`.

use super::{Budget, CheckReport, TheoremEntry};
use crate::ellipsoid::exact::{self, Matrix};
use crate::ellipsoid::poly::Poly;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "layernorm-ellipsoid",
    statement: "LN(a) = sqrt(N) G Pi a / sqrt(|Pi a|^2 + N eps) + b, G = diag(g), Pi = I - 11^T/N. \
With every gain nonzero, each output satisfies alpha.(y - b) = 0 (alpha = 1/g) and (y - b)^T G^-2 (y - b) = \
N |Pi a|^2/(|Pi a|^2 + N eps) <= N, with equality iff eps = 0: the outputs lie in the (N-1)-dim hyperellipsoid \
whose principal axes are the eigenvectors of Pi2 G^-2 Pi2 (Pi2 = I - alpha alpha^T/alpha^T alpha) with \
semi-axes sqrt(N/lambda) = sqrt(N zeta), zeta the nonzero eigenvalues of Pi G^2 Pi (lambda zeta = 1); the \
endpoint of the axis of zeta is LN(v) for its eigenvector v at eps = 0, and no output reaches beyond it. With \
k zero gains the normal space is span{e_n : g_n = 0} and the tight form is Q = (G Pi G)^+ (G_c^-2 + \
alpha_c alpha_c^T/k on the nonzero coordinates); Riechers' Drazin-inverse form diag(1/g_n^2) contains the \
outputs and touches them exactly at the outputs of eps = 0 whose centred input Pi a vanishes on every zero \
gain (equivalently sum over g_n != 0 of (y_n - b_n)/g_n = 0; such outputs exist iff two gains are nonzero, \
e.g. g = (1, 1, 0): y = +-sqrt(3)(1, -1, 0)/sqrt(2)), but its lengths sqrt(N)|g_n| are not the image's \
semi-axes: the support along e_n is sqrt(N-1)|g_n|, so the endpoints b +- sqrt(N) g_n e_n are never outputs.",
    source: "Riechers 2024, Geometry and Dynamics of LayerNorm (arXiv:2405.04134), Sec. 2, eqs. (5)-(6) and the hyperellipsoid construction",
    check,
};

/// A LayerNorm with rational parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub gain: Vec<Rational>,
    pub bias: Vec<Rational>,
    pub eps: Rational,
}

impl Instance {
    pub fn n(&self) -> usize {
        self.gain.len()
    }

    fn zero_gains(&self) -> Vec<usize> {
        zero_gains(&self.gain)
    }
}

fn zero_gains(g: &[Rational]) -> Vec<usize> {
    (0..g.len())
        .filter(|&i| g[i].cmp0() == Ordering::Equal)
        .collect()
}

fn dot(a: &[Rational], b: &[Rational]) -> Rational {
    a.iter().zip(b).map(|(x, y)| Rational::from(x * y)).sum()
}

fn text(v: &[Rational]) -> String {
    format!(
        "({})",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `(w, D)` with `LN(a) − b = √(N/D)·w`: `w = GΠa`, `D = ‖Πa‖² + Nε`, and `‖Πa‖²`.
pub fn scaled_output(inst: &Instance, a: &[Rational]) -> (Vec<Rational>, Rational, Rational) {
    let n = inst.n();
    let mean = a.iter().cloned().sum::<Rational>() / Rational::from(n as u64);
    let pa: Vec<Rational> = a.iter().map(|x| Rational::from(x - &mean)).collect();
    let p = dot(&pa, &pa);
    let d = &p + &inst.eps * Rational::from(n as u64);
    let w = pa
        .iter()
        .zip(&inst.gain)
        .map(|(x, g)| Rational::from(x * g))
        .collect();
    (w, d, p)
}

/// `hᵀ G Π G h` (the squared support of the unit-radius image along `h`, up to `N`).
fn support2(gain: &[Rational], h: &[Rational]) -> Rational {
    let n = gain.len();
    let gh: Vec<Rational> = gain
        .iter()
        .zip(h)
        .map(|(g, x)| Rational::from(g * x))
        .collect();
    let mean = gh.iter().cloned().sum::<Rational>() / Rational::from(n as u64);
    gh.iter().map(|x| Rational::from(x - &mean).square()).sum()
}

/// The claims about one output `y = LN(a)`, exactly; `directions` are extra unit-free
/// directions `h` along which the support bound `(hᵀ(y − b))² ≤ N·hᵀGΠGh` is checked.
pub fn check_output(
    inst: &Instance,
    q: &Matrix,
    a: &[Rational],
    directions: &[Vec<Rational>],
) -> Result<(), String> {
    check_output_against(inst, q, a, directions, drazin_contact_predicted)
}

/// Which outputs a statement says touch the Drazin ellipsoid.
pub type ContactRule = fn(&Instance, &[Rational]) -> bool;

/// [`check_output`] against a stated contact rule (the true one is
/// [`drazin_contact_predicted`]; a wrong one must be caught).
pub fn check_output_against(
    inst: &Instance,
    q: &Matrix,
    a: &[Rational],
    directions: &[Vec<Rational>],
    contact: ContactRule,
) -> Result<(), String> {
    let n = inst.n();
    let nn = Rational::from(n as u64);
    let (w, d, p) = scaled_output(inst, a);
    let case = || {
        format!(
            "g = {}, eps = {}, a = {}",
            text(&inst.gain),
            inst.eps,
            text(a)
        )
    };
    if d.cmp0() == Ordering::Equal {
        // a ∝ 1 at ε = 0: Riechers' convention maps it to b (eq. (5)); nothing to check.
        return Ok(());
    }
    let zeros = inst.zero_gains();
    let k = zeros.len();
    // The hyperplane / normal space.
    if k == 0 {
        let s: Rational = w
            .iter()
            .zip(&inst.gain)
            .map(|(x, g)| Rational::from(x / g))
            .sum();
        if s.cmp0() != Ordering::Equal {
            return Err(format!("alpha.(y - b) = sqrt(N/D)·{s} != 0 for {}", case()));
        }
    } else if let Some(&z) = zeros.iter().find(|&&z| w[z].cmp0() != Ordering::Equal) {
        return Err(format!("(y - b)_{z} != 0 at a zero gain for {}", case()));
    }
    // The quadratic form: (y − b)ᵀQ(y − b) = N·wᵀQw/D against N·‖Πa‖²/D.
    let qw = exact::mat_vec(q, &w);
    let form = Rational::from(&nn * &dot(&w, &qw)) / &d;
    let shrink = Rational::from(&nn * &p) / &d;
    let form_ok = if k <= 1 {
        form == shrink
    } else {
        form <= shrink
    };
    if !form_ok {
        return Err(format!(
            "(y-b)^T Q (y-b) = {form} vs N|Pi a|^2/D = {shrink} (k = {k}) for {}",
            case()
        ));
    }
    if form > nn {
        return Err(format!("(y-b)^T Q (y-b) = {form} > N for {}", case()));
    }
    if inst.eps.cmp0() == Ordering::Equal && k <= 1 && form != nn {
        return Err(format!(
            "eps = 0 but (y-b)^T Q (y-b) = {form} != N for {}",
            case()
        ));
    }
    // Riechers' literal G⁻² (the Drazin inverse when some gain is 0): equal to Q's form with no
    // zero gain (y − b is in α⊥), a containing bound otherwise.
    let literal: Rational = w
        .iter()
        .zip(&inst.gain)
        .filter(|(_, g)| g.cmp0() != Ordering::Equal)
        .map(|(x, g)| Rational::from(x / g).square())
        .sum::<Rational>()
        * &nn
        / &d;
    let literal_ok = if k == 0 {
        literal == form
    } else {
        literal <= nn
    };
    if !literal_ok {
        return Err(format!(
            "(y-b)^T G^-2 (y-b) = {literal} inconsistent (form {form}) for {}",
            case()
        ));
    }
    // Where the Drazin ellipsoid touches the image: N·(‖Πa‖² − Σ_{g_z = 0}(Πa)_z²)/D = N
    // exactly when ε = 0 and Πa vanishes on the zero gains.
    if k > 0 && (literal == nn) != contact(inst, a) {
        return Err(format!(
            "(y-b)^T G^-2 (y-b) = {literal}: contact with the Drazin ellipsoid {} predicted for {}",
            if literal == nn { "not" } else { "" },
            case()
        ));
    }
    // The support bound along each direction: (hᵀw)²·N/D ≤ N·hᵀGΠGh.
    for h in directions {
        let lhs = dot(h, &w).square();
        let rhs = Rational::from(&d * &support2(&inst.gain, h));
        if lhs > rhs {
            return Err(format!(
                "output beyond the support along {} for {}",
                text(h),
                case()
            ));
        }
    }
    Ok(())
}

/// The axes of `ΠG²Π` and `Q`, all at once, exactly; returns the number of axes verified
/// (`N − nullity`). Checks, with `v(ζ)` the secular eigenvector and `s` the secular polynomial:
/// `s` has exactly one root strictly between consecutive distinct `g_n²` (so all are real and
/// simple), `1ᵀv ≡ 0`, `ΠG²Πv ≡ ζv`, `‖Gv‖² ≡ ζ‖v‖²` (the endpoint `LN(v) − b = √N·Gv/‖v‖` has
/// squared length `Nζ`), `ζ·Q(Gv) ≡ Gv` (`Gv` is the `Q`-axis of `λ = 1/ζ`) and
/// `(Gv)ᵀQ(Gv) ≡ ‖v‖²` (the endpoint lies on the surface), all modulo `s`; the repeated-gain
/// axes `e_i − e_j` directly; the count; and the characteristic polynomials of `ΠG²Π` and
/// `Q` (nonzero roots reciprocal) against the structure.
pub fn check_axes(gain: &[Rational]) -> Result<usize, String> {
    let n = gain.len();
    let case = || format!("g = {}", text(gain));
    let sec = exact::secular(gain);
    let q = exact::tight_form(gain);
    let k_mat = exact::gram(gain);
    let d: Vec<Rational> = gain
        .iter()
        .map(|x| Rational::from(x.square_ref()))
        .collect();
    let s = &sec.poly;
    // Real, simple, interlacing roots.
    for pair in sec.values.windows(2) {
        let (lo, hi) = (&pair[0].0, &pair[1].0);
        if s.eval(lo).cmp0() == Ordering::Equal || s.count_distinct_roots(lo, hi) != 1 {
            return Err(format!(
                "secular roots do not interlace {lo} < {hi} for {}",
                case()
            ));
        }
    }
    if let Some((top, _)) = sec.values.last() {
        if s.eval(top).cmp0() == Ordering::Equal {
            return Err(format!(
                "secular polynomial vanishes at {top} for {}",
                case()
            ));
        }
    }
    let secular_axes = s.degree().unwrap_or(0);
    if secular_axes + 1 != sec.values.len() {
        return Err(format!(
            "secular polynomial of degree {secular_axes} for {} distinct g^2, {}",
            sec.values.len(),
            case()
        ));
    }
    if secular_axes > 0 {
        let reduce = |p: Poly| p.rem(s);
        let zeta = Poly::x();
        let v: Vec<Poly> = d.iter().map(|dn| sec.eigenvector_component(dn)).collect();
        let sum = v.iter().fold(Poly::zero(), |acc, x| acc.add(x));
        if !reduce(sum).is_zero() {
            return Err(format!("1^T v(zeta) != 0 mod s for {}", case()));
        }
        let dv: Vec<Poly> = v.iter().zip(&d).map(|(x, dn)| x.scale(dn)).collect();
        let inv_n = Rational::from((1, n as u64));
        let mean_dv = dv
            .iter()
            .fold(Poly::zero(), |acc, x| acc.add(x))
            .scale(&inv_n);
        for i in 0..n {
            let lhs = dv[i].sub(&mean_dv).sub(&zeta.mul(&v[i]));
            if !reduce(lhs).is_zero() {
                return Err(format!(
                    "(Pi G^2 Pi v)_{i} != zeta v_{i} mod s for {}",
                    case()
                ));
            }
        }
        let norm_v = v.iter().fold(Poly::zero(), |acc, x| acc.add(&x.mul(x)));
        let norm_gv = v
            .iter()
            .zip(&d)
            .fold(Poly::zero(), |acc, (x, dn)| acc.add(&x.mul(x).scale(dn)));
        if !reduce(norm_gv.sub(&zeta.mul(&norm_v))).is_zero() {
            return Err(format!("|Gv|^2 != zeta |v|^2 mod s for {}", case()));
        }
        let gv: Vec<Poly> = v.iter().zip(gain).map(|(x, g)| x.scale(g)).collect();
        let qgv: Vec<Poly> = q
            .iter()
            .map(|row| {
                row.iter()
                    .zip(&gv)
                    .fold(Poly::zero(), |acc, (qij, x)| acc.add(&x.scale(qij)))
            })
            .collect();
        for i in 0..n {
            if !reduce(zeta.mul(&qgv[i]).sub(&gv[i])).is_zero() {
                return Err(format!(
                    "zeta (Q G v)_{i} != (G v)_{i} mod s for {}",
                    case()
                ));
            }
        }
        let form = gv
            .iter()
            .zip(&qgv)
            .fold(Poly::zero(), |acc, (x, y)| acc.add(&x.mul(y)));
        if !reduce(form.sub(&norm_v)).is_zero() {
            return Err(format!(
                "endpoint off the surface: (Gv)^T Q (Gv) != |v|^2 mod s for {}",
                case()
            ));
        }
    }
    // Repeated nonzero gains: e_i − e_j with ζ = g_i².
    let mut repeated_axes = 0;
    for (value, m) in &sec.values {
        if *m < 2 || value.cmp0() == Ordering::Equal {
            continue;
        }
        let members: Vec<usize> = (0..n).filter(|&i| d[i] == *value).collect();
        for &other in &members[1..] {
            let mut v = vec![Rational::new(); n];
            v[members[0]] = Rational::from(1);
            v[other] = Rational::from(-1);
            let kv = exact::mat_vec(&k_mat, &v);
            let gv: Vec<Rational> = v
                .iter()
                .zip(gain)
                .map(|(x, g)| Rational::from(x * g))
                .collect();
            let qgv = exact::mat_vec(&q, &gv);
            let ok = kv
                .iter()
                .zip(&v)
                .all(|(x, y)| *x == Rational::from(value * y))
                && qgv
                    .iter()
                    .zip(&gv)
                    .all(|(x, y)| Rational::from(x * value) == *y)
                && dot(&gv, &qgv) == dot(&v, &v);
            if !ok {
                return Err(format!(
                    "repeated-gain axis e_{} - e_{other} fails for {}",
                    members[0],
                    case()
                ));
            }
            repeated_axes += 1;
        }
    }
    let k = zero_gains(gain).len();
    let nullity = if k == n { n } else { k.max(1) };
    if secular_axes + repeated_axes != n - nullity {
        return Err(format!(
            "{secular_axes} secular + {repeated_axes} repeated axes != rank {} for {}",
            n - nullity,
            case()
        ));
    }
    // The generic characteristic polynomials agree with the structure; λ = 1/ζ.
    let p_k = exact::char_poly(&k_mat);
    if p_k != sec.predicted_char_poly() {
        return Err(format!(
            "det(xI - Pi G^2 Pi) = {p_k} != the secular prediction for {}",
            case()
        ));
    }
    let (zk, rest_k) = p_k.split_zero_roots();
    let (zq, rest_q) = exact::char_poly(&q).split_zero_roots();
    if zk != nullity || zq != nullity || rest_k.reversed().monic() != rest_q.monic() {
        return Err(format!(
            "the nonzero eigenvalues of Q are not the reciprocals of Pi G^2 Pi's for {}",
            case()
        ));
    }
    Ok(n - nullity)
}

/// Whether `LN(a)` lies on the surface of Riechers' Drazin ellipsoid (some gain zero): exactly
/// when `ε = 0` and the centred input `Πa` is nonzero but vanishes on every zero gain.
pub fn drazin_contact_predicted(inst: &Instance, a: &[Rational]) -> bool {
    let n = Rational::from(inst.n() as u64);
    let mean = a.iter().cloned().sum::<Rational>() / &n;
    let centred_on = |i: usize| Rational::from(&a[i] - &mean);
    inst.eps.cmp0() == Ordering::Equal
        && (0..inst.n()).any(|i| centred_on(i).cmp0() != Ordering::Equal)
        && inst
            .zero_gains()
            .iter()
            .all(|&z| centred_on(z).cmp0() == Ordering::Equal)
}

/// An input whose output touches the Drazin ellipsoid (`e_i − e_j` on two nonzero gains), when
/// the gain has a zero and two nonzero entries.
pub fn drazin_contact_input(gain: &[Rational]) -> Option<Vec<Rational>> {
    if zero_gains(gain).is_empty() {
        return None;
    }
    let mut nonzero = (0..gain.len()).filter(|&i| gain[i].cmp0() != Ordering::Equal);
    let (i, j) = (nonzero.next()?, nonzero.next()?);
    let mut a = vec![Rational::new(); gain.len()];
    a[i] = Rational::from(1);
    a[j] = Rational::from(-1);
    Some(a)
}

/// With zero gains, Riechers' Drazin semi-axis `√N|g_i|` along `e_i` exceeds the support of the
/// image along `e_i`, `N·e_iᵀGΠGe_i = (N − 1)g_i²` (so its endpoint is never an output), while
/// the tight form's semi-axes are attained ([`check_axes`]).
pub fn check_drazin_overshoot(gain: &[Rational]) -> Result<(), String> {
    let n = gain.len();
    if zero_gains(gain).is_empty() {
        return Ok(());
    }
    for (i, g) in gain
        .iter()
        .enumerate()
        .filter(|(_, g)| g.cmp0() != Ordering::Equal)
    {
        let mut e = vec![Rational::new(); n];
        e[i] = Rational::from(1);
        let support = Rational::from(n as u64) * support2(gain, &e);
        let drazin = Rational::from(n as u64) * Rational::from(g.square_ref());
        let want = Rational::from((n - 1) as u64) * Rational::from(g.square_ref());
        if support != want || support >= drazin {
            return Err(format!(
                "support along e_{i} is {support}, Drazin semi-axis^2 {drazin}, g = {}",
                text(gain)
            ));
        }
    }
    Ok(())
}

/// A seeded stream of small rationals.
pub struct Cases {
    rng: ChaCha8Rng,
}

impl Cases {
    pub fn new(seed: u64) -> Self {
        // Mix the theorem id into the seed so theorems sharing a budget draw different streams.
        let tag = THEOREM.id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        Cases {
            rng: ChaCha8Rng::seed_from_u64(seed ^ tag),
        }
    }

    fn below(&mut self, m: u64) -> u64 {
        self.rng.next_u64() % m
    }

    /// `p/q` with `|p| ≤ 12`, `q ∈ 1..=4`.
    pub fn rational(&mut self) -> Rational {
        let p = self.below(25) as i64 - 12;
        let q = 1 + self.below(4) as i64;
        Rational::from((p, q))
    }

    /// Gains with zeros (~15%) and repeats (~25%, up to sign).
    pub fn gains(&mut self, n: usize) -> Vec<Rational> {
        let mut g: Vec<Rational> = Vec::with_capacity(n);
        for _ in 0..n {
            let roll = self.below(20);
            let x = if roll < 3 {
                Rational::new()
            } else if roll < 8 && !g.is_empty() {
                let j = self.below(g.len() as u64) as usize;
                if self.below(2) == 0 {
                    g[j].clone()
                } else {
                    Rational::from(-&g[j])
                }
            } else {
                self.rational()
            };
            g.push(x);
        }
        g
    }

    pub fn instance(&mut self, n: usize) -> Instance {
        let gain = self.gains(n);
        let bias = (0..n).map(|_| self.rational()).collect();
        let eps = if self.below(3) == 0 {
            Rational::new()
        } else {
            Rational::from((1 + self.below(9) as i64, 1000))
        };
        Instance { gain, bias, eps }
    }

    pub fn vector(&mut self, n: usize) -> Vec<Rational> {
        (0..n).map(|_| self.rational()).collect()
    }
}

fn ints(v: &[i64]) -> Vec<Rational> {
    v.iter().map(|&x| Rational::from(x)).collect()
}

/// The fixed edge cases every check runs.
pub fn edge_gains() -> Vec<Vec<Rational>> {
    vec![
        ints(&[2, 9, 12, 13]),
        ints(&[1, 0]),
        ints(&[1, 1, 0]),
        ints(&[1, 1, 1, 1]),
        ints(&[1, -1, 2, 0, 0]),
        ints(&[0, 0, 0]),
        ints(&[3, -1, 1, 1, 2, 5]),
        vec![
            Rational::from((1, 3)),
            Rational::from((-7, 2)),
            Rational::from((5, 4)),
        ],
    ]
}

/// Everything for one gain vector: the axes, the Drazin comparison, and `outputs` random
/// outputs (plus the constructed axis inputs) with bias `b` and each ε in `eps`.
pub fn check_gain(gain: &[Rational], cases: &mut Cases, outputs: usize) -> Result<usize, String> {
    let n = gain.len();
    check_axes(gain)?;
    check_drazin_overshoot(gain)?;
    let q = exact::tight_form(gain);
    let mut tried = 1;
    if let Some(a) = drazin_contact_input(gain) {
        let inst = Instance {
            gain: gain.to_vec(),
            bias: cases.vector(n),
            eps: Rational::new(),
        };
        check_output(&inst, &q, &a, &[])?;
        tried += 1;
    }
    for _ in 0..outputs {
        let inst = Instance {
            gain: gain.to_vec(),
            bias: cases.vector(n),
            eps: cases.instance(n).eps,
        };
        let a = cases.vector(n);
        let dirs = vec![cases.vector(n), cases.vector(n)];
        check_output(&inst, &q, &a, &dirs)?;
        tried += 1;
    }
    Ok(tried)
}

/// The checker: edge cases, then `budget.cases` random gain vectors (N in 2..=6).
pub fn check(budget: Budget) -> CheckReport {
    let mut cases = Cases::new(budget.seed);
    let mut tried = 0;
    let mut run = |gain: Vec<Rational>, cases: &mut Cases| -> Option<String> {
        match check_gain(&gain, cases, 3) {
            Ok(t) => {
                tried += t;
                None
            }
            Err(e) => Some(e),
        }
    };
    for g in edge_gains() {
        if let Some(e) = run(g, &mut cases) {
            return CheckReport {
                cases: tried + 1,
                counterexample: Some(e),
            };
        }
    }
    for _ in 0..budget.cases {
        let n = 2 + cases.below(5) as usize;
        let g = cases.gains(n);
        if let Some(e) = run(g, &mut cases) {
            return CheckReport {
                cases: tried + 1,
                counterexample: Some(e),
            };
        }
    }
    CheckReport {
        cases: tried,
        counterexample: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_passes_on_a_small_budget() {
        let r = check(Budget { cases: 12, seed: 1 });
        assert!(r.counterexample.is_none(), "{:?}", r.counterexample);
        assert!(r.cases > 12);
    }

    #[test]
    fn a_wrong_form_is_caught() {
        // Using Riechers' Drazin form as if it were tight must fail for a zero gain: with
        // g = (1, 1, 0) and a = (1, 0, 0), wᵀ diag(1, 1, 0) w ≠ N|Πa|²/D.
        let gain = ints(&[1, 1, 0]);
        let inst = Instance {
            gain: gain.clone(),
            bias: ints(&[0, 0, 0]),
            eps: Rational::new(),
        };
        let wrong = exact::drazin_form(&gain);
        assert!(check_output(&inst, &wrong, &ints(&[1, 0, 0]), &[]).is_err());
        assert!(check_output(&inst, &exact::tight_form(&gain), &ints(&[1, 0, 0]), &[]).is_ok());
    }

    #[test]
    fn a_perturbed_gain_matrix_is_caught_by_the_axis_identities() {
        // The identities hold for the true secular structure of (2, 9, 12, 13); they must
        // fail when Q is built for other gains.
        let gain = ints(&[2, 9, 12, 13]);
        assert_eq!(check_axes(&gain), Ok(3));
        let q_wrong = exact::tight_form(&ints(&[2, 9, 12, 14]));
        let inst = Instance {
            gain: gain.clone(),
            bias: ints(&[0; 4]),
            eps: Rational::new(),
        };
        assert!(check_output(&inst, &q_wrong, &ints(&[1, 2, 3, 5]), &[]).is_err());
    }

    #[test]
    fn the_drazin_circle_touches_the_image_of_1_1_0() {
        // g = (1, 1, 0), a = (1, −1, 0): y = LN(a) = √3·(1, −1, 0)/√2 exactly (w = a, D = 2,
        // y = √(3/2)·w), and y₁² + y₂² = 3 = N: on the Drazin circle of radius √3.
        let gain = ints(&[1, 1, 0]);
        let inst = Instance {
            gain: gain.clone(),
            bias: ints(&[0, 0, 0]),
            eps: Rational::new(),
        };
        let a = ints(&[1, -1, 0]);
        let (w, d, _) = scaled_output(&inst, &a);
        assert_eq!(
            (w.clone(), d.clone()),
            (ints(&[1, -1, 0]), Rational::from(2))
        );
        let y2: Vec<Rational> = w
            .iter()
            .map(|x| Rational::from(x.square_ref()) * 3u32 / &d)
            .collect();
        let half3 = Rational::from((3, 2));
        assert_eq!(y2, vec![half3.clone(), half3, Rational::new()]);
        assert_eq!(y2.iter().cloned().sum::<Rational>(), Rational::from(3));
        assert!(drazin_contact_predicted(&inst, &a));
        assert_eq!(drazin_contact_input(&gain), Some(a.clone()));
        check_output(&inst, &exact::tight_form(&gain), &a, &[]).unwrap();
        // The other outputs stay strictly inside: a = (1, 0, 0) has (Πa)₃ = −1/3 ≠ 0.
        assert!(!drazin_contact_predicted(&inst, &ints(&[1, 0, 0])));
        // With ε > 0 nothing touches; with one nonzero gain no contact input exists.
        let shrunk = Instance {
            eps: Rational::from((1, 100)),
            ..inst.clone()
        };
        assert!(!drazin_contact_predicted(&shrunk, &a));
        assert_eq!(drazin_contact_input(&ints(&[1, 0, 0])), None);
        assert_eq!(drazin_contact_input(&ints(&[1, 2])), None);
    }

    #[test]
    fn a_never_attained_claim_is_caught() {
        // The old statement ("the Drazin semi-axes are never attained") as a predicate: the
        // checker must reject it at the contact point of g = (1, 1, 0).
        let inst = Instance {
            gain: ints(&[1, 1, 0]),
            bias: ints(&[0, 0, 0]),
            eps: Rational::new(),
        };
        let q = exact::tight_form(&inst.gain);
        let never: ContactRule = |_, _| false;
        let e = check_output_against(&inst, &q, &ints(&[1, -1, 0]), &[], never).unwrap_err();
        assert!(e.contains("contact"), "{e}");
        // Nor may every ε = 0 output be claimed on the surface.
        let always: ContactRule = |i, _| i.eps.cmp0() == Ordering::Equal;
        assert!(check_output_against(&inst, &q, &ints(&[1, 0, 0]), &[], always).is_err());
        for a in [ints(&[1, -1, 0]), ints(&[1, 0, 0]), ints(&[2, 5, 1])] {
            check_output(&inst, &q, &a, &[]).unwrap();
        }
    }

    #[test]
    fn the_support_bound_is_tight_at_the_endpoint() {
        // a = (1, -1, 0) with g = (1, 1, 0): the output is the endpoint of the long axis; the
        // support bound along h = (1, -1, 0) holds with equality.
        let gain = ints(&[1, 1, 0]);
        let inst = Instance {
            gain: gain.clone(),
            bias: ints(&[0, 0, 0]),
            eps: Rational::new(),
        };
        let a = ints(&[1, -1, 0]);
        let (w, d, _) = scaled_output(&inst, &a);
        let h = ints(&[1, -1, 0]);
        assert_eq!(dot(&h, &w).square(), d * support2(&gain, &h));
        assert!(check_drazin_overshoot(&gain).is_ok());
    }
}
