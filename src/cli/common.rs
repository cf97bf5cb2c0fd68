//! Arguments shared by several subcommands.

use normoracle::cases::Family;
use normoracle::domain::Interval;
use normoracle::problem::{Eps, EpsConvention, Op};
use normoracle::{Dtype, Error, Result};

/// Which cases of the battery run: the filters `fuzz` and `cases` share.
#[derive(clap::Args, Debug, Clone)]
pub struct BatteryFilters {
    /// Only these families (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub family: Vec<String>,
    /// Only the cases whose ε lies in LO..HI (either end optional, e.g. 1e-6..), for a kernel
    /// that rejects some ε; the rest are not run.
    #[arg(long, default_value = "..", allow_hyphen_values = true, value_parser = Interval::parse_eps)]
    pub eps_range: Interval,
}

impl BatteryFilters {
    pub fn families(&self) -> Result<Vec<Family>> {
        self.family.iter().map(|f| Family::from_name(f)).collect()
    }
}

/// The operation, format and ε of a normalization.
#[derive(clap::Args, Debug, Clone)]
pub struct NormArgs {
    /// layer_norm or rms_norm.
    #[arg(long, value_parser = |s: &str| s.parse::<Op>())]
    pub op: Op,
    /// f16, bf16, f32 or f64.
    #[arg(long, value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Dtype,
    #[command(flatten)]
    pub eps: EpsArgs,
}

/// ε and where it enters.
#[derive(clap::Args, Debug, Clone)]
pub struct EpsArgs {
    /// ε as a decimal; the value used is the f32 nearest to it.
    #[arg(long, default_value = "1e-5", allow_hyphen_values = true)]
    pub eps: String,
    /// ε as the exact bits of an f32 (e.g. 0x3727c5ac); overrides --eps.
    #[arg(long)]
    pub eps_bits: Option<String>,
    /// inside: (x−μ)/√(σ²+ε); outside: (x−μ)/(σ+ε).
    #[arg(long, default_value = "inside", value_parser = |s: &str| s.parse::<EpsConvention>())]
    pub eps_convention: EpsConvention,
}

impl EpsArgs {
    pub fn eps(&self) -> Result<Eps> {
        match &self.eps_bits {
            Some(bits) => Eps::from_bits_text(bits),
            None => Eps::from_decimal(&self.eps),
        }
    }
}

/// ` --domain D --require S` for a reproducer: the flags that decide its verdict, each only
/// where it differs from the default.
pub fn verdict_flags(
    domain: Option<&normoracle::domain::Domain>,
    require: normoracle::judge::Standard,
) -> String {
    let mut flags = String::new();
    if let Some(domain) = domain {
        flags += &format!(" --domain {}", shell_quote(&domain.to_string()));
    }
    if require != normoracle::judge::Standard::Bound {
        flags += &format!(" --require {require}");
    }
    flags
}

/// Quotes an argument for a copy-pasteable shell command.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A count of random battery cases (`--cases`), at most `MAX_RANDOM_CASES`.
pub fn parse_random_cases(s: &str) -> Result<usize> {
    let max = normoracle::cases::battery::MAX_RANDOM_CASES;
    match s.parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(Error::usage(format!(
            "'{s}' is not a case count from 0 to {max}"
        ))),
    }
}

/// The most values a command generates in memory at once (`rows × d`, `n × d`): 2²⁸, i.e.
/// 2 GiB as f64, sixteen times bench-oracle's default 4096 × 4096. Beyond it the
/// product, or the allocation, fails (overflow, abort) before any work is done.
pub const MAX_GENERATED_VALUES: usize = 1 << 28;

/// `a × b` (named `what`, e.g. "--rows × --d") when it is at most `MAX_GENERATED_VALUES`.
pub fn generated_values(what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .filter(|&n| n <= MAX_GENERATED_VALUES)
        .ok_or_else(|| {
            Error::usage(format!(
                "{what} = {a} × {b} is more than {MAX_GENERATED_VALUES} (2^28) values"
            ))
        })
}

/// The most timed runs or samples per measurement: a median of more says nothing new.
pub const MAX_REPEATS: usize = 1000;

/// The most threads a command's pool takes (far beyond any machine's cores; a count near
/// `usize::MAX` made the pool spawn threads until the system refused).
pub const MAX_THREADS: usize = 1024;

/// `value` of the argument `what` when it is at most `max`.
pub fn at_most(what: &str, value: usize, max: usize) -> Result<usize> {
    if value <= max {
        Ok(value)
    } else {
        Err(Error::usage(format!("{what} {value} is more than {max}")))
    }
}
