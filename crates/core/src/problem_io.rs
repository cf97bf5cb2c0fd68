//! Problems from `.npy` files: x (shape (..., d), leading axes are rows), optional γ and β
//! (shape (d,)), checked against each other with one-line errors.

use crate::error::{Error, Result};
use crate::npy::{self, NpyArray};
use crate::problem::{Eps, EpsConvention, Op, Problem};
use crate::Dtype;
use std::path::Path;

/// Where a problem's arrays come from.
#[derive(Debug, Clone)]
pub struct ProblemFiles<'a> {
    pub x: &'a Path,
    pub gamma: Option<&'a Path>,
    pub beta: Option<&'a Path>,
}

/// Reads the arrays and builds a validated problem; also returns x's shape.
pub fn load(
    files: &ProblemFiles,
    op: Op,
    dtype: Dtype,
    eps: Eps,
    convention: EpsConvention,
) -> Result<(Problem, Vec<usize>)> {
    let x = npy::read(files.x)?;
    let param = |path: Option<&Path>, name: &str| -> Result<Option<(NpyArray, String)>> {
        path.map(|p| Ok((npy::read(p)?, format!("{name} {}", p.display()))))
            .transpose()
    };
    let gamma = param(files.gamma, "gamma")?;
    let beta = param(files.beta, "beta")?;
    let arrays = ProblemArrays {
        x: (&x, &files.x.display().to_string()),
        gamma: gamma.as_ref().map(|(a, label)| (a, label.as_str())),
        beta: beta.as_ref().map(|(a, label)| (a, label.as_str())),
    };
    let problem = from_arrays(&arrays, op, dtype, eps, convention)?;
    Ok((problem, x.shape))
}

/// A problem's arrays in memory, each with the label its errors name it by (a file's path
/// for the CLI, an argument's name for the Python package).
#[derive(Debug, Clone, Copy)]
pub struct ProblemArrays<'a> {
    pub x: (&'a NpyArray, &'a str),
    pub gamma: Option<(&'a NpyArray, &'a str)>,
    pub beta: Option<(&'a NpyArray, &'a str)>,
}

/// Builds a validated problem from arrays: x of shape (..., d), leading axes rows; γ and β
/// of shape (d,); all stored as `dtype` is (`npy::bits_of`).
pub fn from_arrays(
    arrays: &ProblemArrays,
    op: Op,
    dtype: Dtype,
    eps: Eps,
    convention: EpsConvention,
) -> Result<Problem> {
    let (x, x_label) = arrays.x;
    let (rows, d) = x.rows_and_width()?;
    if d == 0 {
        return Err(Error::input(format!("{x_label}: rows have width d = 0")));
    }
    // No rows would be a verdict on nothing ("PASS, 0 cases"), and the width of an empty
    // array is unbounded by its file (shape (0, 2**40) is a few bytes).
    if rows == 0 {
        return Err(Error::input(format!(
            "{x_label}: shape {:?} has no rows: nothing to judge",
            x.shape
        )));
    }
    let param = |p: Option<(&NpyArray, &str)>, name: &str| -> Result<Option<Vec<u64>>> {
        let Some((a, label)) = p else { return Ok(None) };
        if a.shape != [d] {
            return Err(Error::input(format!(
                "{label} has shape {:?} but rows of x have d = {d}",
                a.shape
            )));
        }
        Ok(Some(npy::bits_of(a, dtype, name)?))
    };
    let problem = Problem {
        op,
        dtype,
        eps,
        convention,
        rows,
        d,
        x: npy::bits_of(x, dtype, "x")?,
        gamma: param(arrays.gamma, "gamma")?,
        beta: param(arrays.beta, "beta")?,
    };
    problem.validate()?;
    Ok(problem)
}
