//! The battery: a deterministic list of cases for one (op, dtype, ε convention). A
//! systematic part crosses every family with every width of `WIDTHS` (ε and the presence of
//! γ/β cycling through each family's schedule); a random part adds `random_cases` cases of
//! random family, width, ε and parameters. Every case draws from its own seeded stream, so
//! case N can be regenerated alone (`--case N`).

use super::families::Family;
use super::rng::Rng;
use crate::domain::{Domain, Interval};
use crate::dtype::Dtype;
use crate::problem::{Eps, EpsConvention, Op, Problem};

/// Row widths of the systematic part: SIMD-width neighbours, where tails get forgotten.
pub const WIDTHS: [usize; 22] = [
    1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1024, 1025, 4096,
];

/// Which battery to build.
#[derive(Debug, Clone)]
pub struct BatteryConfig {
    pub op: Op,
    pub dtype: Dtype,
    pub convention: EpsConvention,
    pub seed: u64,
    /// Cases added after the systematic part.
    pub random_cases: usize,
    /// Keep only these families (all when empty).
    pub families: Vec<Family>,
    /// Keep only the cases whose ε lies here (`--eps-range`: for a kernel that rejects some
    /// ε; the cases left out are not run at all).
    pub eps: Interval,
    /// The domain the verdict is decided on (`--domain`): every case runs, the rows outside
    /// are reported apart, as information.
    pub domain: Domain,
}

impl BatteryConfig {
    pub fn new(op: Op, dtype: Dtype, seed: u64) -> Self {
        BatteryConfig {
            op,
            dtype,
            convention: EpsConvention::Inside,
            seed,
            random_cases: 200,
            families: Vec::new(),
            eps: Interval::ALL,
            domain: Domain::default(),
        }
    }
}

/// One case: a problem and where it came from.
#[derive(Debug, Clone)]
pub struct Case {
    /// Position in the battery (stable for a given config).
    pub id: usize,
    pub family: Family,
    pub problem: Problem,
}

/// Whether the parameters γ and β are passed (cycled over cases).
#[derive(Debug, Clone, Copy)]
enum Params {
    None,
    Gamma,
    GammaBeta,
}

const PARAMS: [Params; 3] = [Params::None, Params::Gamma, Params::GammaBeta];

fn rows_for(d: usize) -> usize {
    if d >= 4096 {
        2
    } else {
        4
    }
}

/// The most random cases the command line takes (`--cases`): 10⁷, days of judging already,
/// and far from the `usize` arithmetic that would wrap the battery's length to 0 cases.
pub const MAX_RANDOM_CASES: usize = 10_000_000;

/// The number of cases of the systematic part.
const SYSTEMATIC: usize = Family::ALL.len() * WIDTHS.len();

/// The number of cases the battery holds. Saturates instead of wrapping: a `random_cases`
/// near `usize::MAX` must not make an empty battery (a vacuous pass).
pub fn battery_len(config: &BatteryConfig) -> usize {
    SYSTEMATIC.saturating_add(config.random_cases)
}

/// Builds case `id` of the battery (None past the end or when its family or ε is filtered
/// out).
pub fn case(config: &BatteryConfig, id: usize) -> Option<Case> {
    let mut rng = Rng::new(config.seed, id as u64);
    let (family, d, eps, params) = if id < SYSTEMATIC {
        let family = Family::ALL[id / WIDTHS.len()];
        let w = id % WIDTHS.len();
        let schedule = family.eps_schedule();
        (
            family,
            WIDTHS[w],
            schedule[w % schedule.len()],
            PARAMS[(w / schedule.len() + w) % 3],
        )
    } else if id - SYSTEMATIC < config.random_cases {
        let family = *rng.choose(&Family::ALL);
        let d = if rng.coin() {
            *rng.choose(&WIDTHS)
        } else {
            1 + rng.below(300)
        };
        let eps = *rng.choose(family.eps_schedule());
        (family, d, eps, *rng.choose(&PARAMS))
    } else {
        return None;
    };
    if !config.families.is_empty() && !config.families.contains(&family) {
        return None;
    }
    if !config.eps.contains(eps as f64) {
        return None;
    }
    let dtype = config.dtype;
    let rows = rows_for(d);
    let x = family.generate(&mut rng, dtype, rows, d, eps);
    let gamma: Vec<u64> = (0..d)
        .map(|_| dtype.round_f64(1.0 + 0.5 * rng.normal()))
        .collect();
    let beta: Vec<u64> = (0..d)
        .map(|_| dtype.round_f64(0.1 * rng.normal()))
        .collect();
    let (gamma, beta) = match params {
        Params::None => (None, None),
        Params::Gamma => (Some(gamma), None),
        // RMSNorm's C ABI has no β: RMSNorm cases never carry one.
        Params::GammaBeta if config.op == Op::RmsNorm => (Some(gamma), None),
        Params::GammaBeta => (Some(gamma), Some(beta)),
    };
    Some(Case {
        id,
        family,
        problem: Problem {
            op: config.op,
            dtype,
            eps: Eps::from_f32(eps).expect("schedules hold valid ε"),
            convention: config.convention,
            rows,
            d,
            x,
            gamma,
            beta,
        },
    })
}

/// Every case of the battery, in id order.
pub fn battery(config: &BatteryConfig) -> Vec<Case> {
    (0..battery_len(config))
        .filter_map(|id| case(config, id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn battery_is_deterministic_and_covers_every_family_and_width() {
        let mut cfg = BatteryConfig::new(Op::LayerNorm, Dtype::F32, 5);
        cfg.random_cases = 20;
        let a = battery(&cfg);
        let b = battery(&cfg);
        assert_eq!(a.len(), 9 * 22 + 20);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.problem, y.problem);
        }
        for f in Family::ALL {
            for w in WIDTHS {
                assert!(a.iter().any(|c| c.family == f && c.problem.d == w));
            }
        }
        for c in &a {
            c.problem.validate().unwrap();
        }
        // A single case regenerates alone.
        assert_eq!(case(&cfg, 150).unwrap().problem, a[150].problem);
        let mut other = cfg.clone();
        other.seed = 6;
        assert_ne!(case(&other, 150).unwrap().problem, a[150].problem);
    }

    #[test]
    fn huge_random_case_counts_do_not_wrap() {
        let mut cfg = BatteryConfig::new(Op::LayerNorm, Dtype::F32, 5);
        cfg.random_cases = usize::MAX - 10;
        assert_eq!(battery_len(&cfg), usize::MAX);
        assert!(case(&cfg, usize::MAX - 1).is_some());
        cfg.random_cases = 3;
        assert!(case(&cfg, SYSTEMATIC + 2).is_some());
        assert!(case(&cfg, SYSTEMATIC + 3).is_none());
        assert!(case(&cfg, usize::MAX).is_none());
    }

    #[test]
    fn rms_norm_cases_have_no_beta_and_filters_apply() {
        let mut cfg = BatteryConfig::new(Op::RmsNorm, Dtype::BF16, 1);
        cfg.families = vec![Family::Constant];
        let cases = battery(&cfg);
        assert!(cases
            .iter()
            .all(|c| c.family == Family::Constant && c.problem.beta.is_none()));
        assert!(cases.iter().any(|c| c.problem.gamma.is_some()));
    }
}
