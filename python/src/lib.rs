//! `normoracle._native`: the library's reference, judge and battery for the Python package
//! (`python/normoracle`). Arrays cross as `.npy` bytes (the CLI's reader and its one-line
//! errors) or as raw little-endian bit patterns of the case's dtype; reports cross as the
//! CLI's JSON and text, so that fields the library adds to its reports reach Python as they
//! are. Every library error becomes `ValueError` (usage and input) or `OSError` (io) with the
//! CLI's message; judging runs with the GIL released.

use normoracle::adapters::Kernel;
use normoracle::cases::{self, battery, BatteryConfig, Family};
use normoracle::judge::{self, report, Report, Standard};
use normoracle::npy::{self, NpyArray};
use normoracle::problem::{Eps, EpsConvention, Op, Problem};
use normoracle::problem_io::{self, ProblemArrays};
use normoracle::{Dtype, Error};
use pyo3::exceptions::{PyBaseException, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;

/// A library error as the Python exception a caller expects, with the CLI's message.
fn py_err(e: Error) -> PyErr {
    match e {
        Error::Io(_) => PyOSError::new_err(e.to_string()),
        Error::Usage(_) | Error::Input(_) => PyValueError::new_err(e.to_string()),
    }
}

fn parsed<T: std::str::FromStr<Err = Error>>(text: &str) -> PyResult<T> {
    text.parse().map_err(py_err)
}

fn parse_npy(bytes: &[u8], name: &str) -> PyResult<NpyArray> {
    npy::parse(bytes).map_err(|e| py_err(Error::input(format!("{name}: {e}"))))
}

/// The problem of x, γ, β given as `.npy` bytes.
fn problem_of(
    op: &str,
    dtype: &str,
    x: &[u8],
    gamma: Option<&[u8]>,
    beta: Option<&[u8]>,
    eps: &str,
    convention: &str,
) -> PyResult<(Problem, Vec<usize>)> {
    let x = parse_npy(x, "x")?;
    let gamma = gamma.map(|g| parse_npy(g, "gamma")).transpose()?;
    let beta = beta.map(|b| parse_npy(b, "beta")).transpose()?;
    let arrays = ProblemArrays {
        x: (&x, "x"),
        gamma: gamma.as_ref().map(|a| (a, "gamma")),
        beta: beta.as_ref().map(|a| (a, "beta")),
    };
    let problem = problem_io::from_arrays(
        &arrays,
        parsed(op)?,
        parsed(dtype)?,
        Eps::from_decimal(eps).map_err(py_err)?,
        parsed(convention)?,
    )
    .map_err(py_err)?;
    Ok((problem, x.shape))
}

/// The correctly rounded outputs of a problem, as `.npy` bytes of x's shape and dtype.
#[pyfunction]
#[pyo3(signature = (op, dtype, x, gamma, beta, eps, convention))]
#[allow(clippy::too_many_arguments)]
fn reference<'py>(
    py: Python<'py>,
    op: &str,
    dtype: &str,
    x: &[u8],
    gamma: Option<&[u8]>,
    beta: Option<&[u8]>,
    eps: &str,
    convention: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let (problem, shape) = problem_of(op, dtype, x, gamma, beta, eps, convention)?;
    let bytes = py
        .detach(|| {
            let out = normoracle::exact::reference(&problem)?;
            npy::from_bits(shape, problem.dtype, &out.y).map(|a| npy::to_bytes(&a))
        })
        .map_err(py_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// A report as the Python side takes it: (passed, JSON, text).
fn rendered(r: &Report) -> (bool, String, String) {
    (r.meets_standard(), report::json(r), report::text(r))
}

/// Judges outputs y (`.npy` bytes, x's shape and dtype) against the reference.
#[pyfunction]
#[pyo3(signature = (op, dtype, x, y, gamma, beta, eps, convention, require, kernel))]
#[allow(clippy::too_many_arguments)]
fn check(
    py: Python<'_>,
    op: &str,
    dtype: &str,
    x: &[u8],
    y: &[u8],
    gamma: Option<&[u8]>,
    beta: Option<&[u8]>,
    eps: &str,
    convention: &str,
    require: &str,
    kernel: &str,
) -> PyResult<(bool, String, String)> {
    let standard: Standard = parsed(require)?;
    let (problem, shape) = problem_of(op, dtype, x, gamma, beta, eps, convention)?;
    let y_array = parse_npy(y, "y")?;
    if y_array.shape != shape {
        return Err(py_err(Error::input(format!(
            "y has shape {:?} but x has shape {shape:?}",
            y_array.shape
        ))));
    }
    let y = npy::bits_of(&y_array, problem.dtype, "y").map_err(py_err)?;
    let mut rep = py
        .detach(|| judge::judge_single(&problem, &y, kernel, "array"))
        .map_err(py_err)?;
    rep.standard = standard;
    if let Some(f) = rep.failures.first() {
        let d = problem.d;
        let rows = |name: &str| format!("{name}.reshape(-1, {d})[{}:{}]", f.row, f.row + 1);
        let params: String = [
            ("gamma", problem.gamma.is_some()),
            ("beta", problem.beta.is_some()),
        ]
        .iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| format!(", {name}={name}"))
        .collect();
        rep.reproducer = Some(format!(
            "normoracle.check({}, {}, op=\"{}\"{params}, eps={eps}, eps_convention=\"{}\", require=\"{}\")",
            rows("x"),
            rows("y"),
            problem.op,
            problem.convention,
            standard
        ));
    }
    Ok(rendered(&rep))
}

/// The battery's configuration from the package's arguments.
fn battery_config(
    op: &str,
    dtype: &str,
    seed: Option<u64>,
    random_cases: usize,
    families: Option<Vec<String>>,
    convention: &str,
) -> PyResult<BatteryConfig> {
    let seed = match seed {
        Some(s) => s,
        None => cases::rng::seed_from_env().map_err(py_err)?,
    };
    if random_cases > battery::MAX_RANDOM_CASES {
        return Err(py_err(Error::usage(format!(
            "'{random_cases}' is not a case count from 0 to {}",
            battery::MAX_RANDOM_CASES
        ))));
    }
    let mut config = BatteryConfig::new(parsed(op)?, parsed(dtype)?, seed);
    config.convention = parsed(convention)?;
    config.random_cases = random_cases;
    config.families = families
        .unwrap_or_default()
        .iter()
        .map(|name| Family::from_name(name))
        .collect::<normoracle::Result<_>>()
        .map_err(py_err)?;
    Ok(config)
}

/// Raw little-endian bit patterns of `dtype`, its storage width each.
fn raw_bytes(dtype: Dtype, bits: &[u64]) -> Vec<u8> {
    let width = (dtype.bits() / 8) as usize;
    bits.iter()
        .flat_map(|b| b.to_le_bytes().into_iter().take(width))
        .collect()
}

/// A battery case as it crosses: (id, family, rows, d, ε as the f32's value, x, γ, β), the
/// arrays as raw bit patterns.
type CaseTuple<'py> = (
    usize,
    &'static str,
    usize,
    usize,
    f64,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
);

/// The battery's length and resolved seed (cases filtered out by family included).
#[pyfunction]
#[pyo3(signature = (op, dtype, seed, random_cases, families, convention))]
fn battery_len(
    op: &str,
    dtype: &str,
    seed: Option<u64>,
    random_cases: usize,
    families: Option<Vec<String>>,
    convention: &str,
) -> PyResult<(usize, u64)> {
    let config = battery_config(op, dtype, seed, random_cases, families, convention)?;
    Ok((battery::battery_len(&config), config.seed))
}

/// Case `id` of the battery (None when its family is filtered out).
#[pyfunction]
#[pyo3(signature = (op, dtype, seed, random_cases, families, convention, id))]
#[allow(clippy::too_many_arguments)]
fn battery_case<'py>(
    py: Python<'py>,
    op: &str,
    dtype: &str,
    seed: u64,
    random_cases: usize,
    families: Option<Vec<String>>,
    convention: &str,
    id: usize,
) -> PyResult<Option<CaseTuple<'py>>> {
    let config = battery_config(op, dtype, Some(seed), random_cases, families, convention)?;
    let Some(case) = cases::case(&config, id) else {
        return Ok(None);
    };
    let p = &case.problem;
    let bytes = |bits: &[u64]| PyBytes::new(py, &raw_bytes(p.dtype, bits));
    Ok(Some((
        case.id,
        case.family.name(),
        p.rows,
        p.d,
        p.eps.value() as f64,
        bytes(&p.x),
        p.gamma.as_deref().map(bytes),
        p.beta.as_deref().map(bytes),
    )))
}

/// A Python callable as a kernel: `call(rows, d, eps, x, gamma, beta) -> bytes`, the arrays
/// raw bit patterns of the case's dtype. It runs with the GIL taken for the call only; an
/// exception is the case's kernel error, and the first is kept to chain to the assertion.
struct PyKernel {
    name: String,
    op: Op,
    dtype: Dtype,
    call: Py<PyAny>,
    first_error: Mutex<Option<PyErr>>,
}

impl Kernel for PyKernel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn supports(&self, op: Op, dtype: Dtype) -> bool {
        op == self.op && dtype == self.dtype
    }

    fn run(&self, p: &Problem) -> Result<Vec<u64>, String> {
        Python::attach(|py| {
            let bytes = |bits: &[u64]| PyBytes::new(py, &raw_bytes(p.dtype, bits));
            let args = (
                p.rows,
                p.d,
                p.eps.value() as f64,
                bytes(&p.x),
                p.gamma.as_deref().map(bytes),
                p.beta.as_deref().map(bytes),
            );
            let returned = self.call.call1(py, args).and_then(|y| {
                let bytes: &[u8] = y.bind(py).extract()?;
                Ok(from_raw_bytes(p.dtype, bytes))
            });
            match returned {
                Ok(y) => Ok(y),
                Err(e) => {
                    let message = e.to_string().replace('\n', " ");
                    let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert(e);
                    Err(message)
                }
            }
        })
    }
}

/// Bit patterns from raw little-endian bytes (a trailing partial value is dropped; the judge
/// reports the count that does not match).
fn from_raw_bytes(dtype: Dtype, bytes: &[u8]) -> Vec<u64> {
    let width = (dtype.bits() / 8) as usize;
    bytes
        .chunks_exact(width)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// Runs the battery through `call` and judges it: (passed, JSON, text, the first exception
/// the callable raised). `case` runs that case alone; `api` is the Python call the
/// reproducer names (`normoracle.assert_kernel(fn`, say).
#[pyfunction]
#[pyo3(signature = (call, name, op, dtype, seed, random_cases, families, convention, require, case, api))]
#[allow(clippy::too_many_arguments)]
fn judge_kernel(
    py: Python<'_>,
    call: Py<PyAny>,
    name: String,
    op: &str,
    dtype: &str,
    seed: Option<u64>,
    random_cases: usize,
    families: Option<Vec<String>>,
    convention: &str,
    require: &str,
    case: Option<usize>,
    api: &str,
) -> PyResult<(bool, String, String, Option<Py<PyBaseException>>)> {
    let standard: Standard = parsed(require)?;
    let config = battery_config(op, dtype, seed, random_cases, families, convention)?;
    let kernel = PyKernel {
        name,
        op: config.op,
        dtype: config.dtype,
        call,
        first_error: Mutex::new(None),
    };
    let mut rep = py
        .detach(|| judge::run_battery(&kernel, &config, case, false))
        .map_err(py_err)?;
    rep.standard = standard;
    if let Some(id) = rep.first_failing_case() {
        let default_cases = BatteryConfig::new(config.op, config.dtype, 0).random_cases;
        let cases = if config.random_cases == default_cases {
            String::new()
        } else {
            format!(", cases={}", config.random_cases)
        };
        let convention = if config.convention == EpsConvention::Inside {
            String::new()
        } else {
            format!(", eps_convention=\"{}\"", config.convention)
        };
        rep.reproducer = Some(format!(
            "{api}, op=\"{}\", dtype=\"{}\", seed={}{cases}{convention}, require=\"{standard}\", case={id})",
            config.op, config.dtype, config.seed
        ));
    }
    let first_error = kernel
        .first_error
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .map(|e| e.into_value(py));
    let (passed, json, text) = rendered(&rep);
    Ok((passed, json, text, first_error))
}

/// The families of the battery, in battery order.
#[pyfunction]
fn families() -> Vec<&'static str> {
    Family::ALL.iter().map(|f| f.name()).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_SEED", cases::rng::DEFAULT_SEED)?;
    m.add(
        "DEFAULT_RANDOM_CASES",
        BatteryConfig::new(Op::LayerNorm, Dtype::F32, 0).random_cases,
    )?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(battery_len, m)?)?;
    m.add_function(wrap_pyfunction!(battery_case, m)?)?;
    m.add_function(wrap_pyfunction!(judge_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(families, m)?)?;
    Ok(())
}
