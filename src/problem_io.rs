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
    let (rows, d) = x.rows_and_width()?;
    if d == 0 {
        return Err(Error::input(format!(
            "{}: rows have width d = 0",
            files.x.display()
        )));
    }
    // No rows would be a verdict on nothing ("PASS, 0 cases"), and the width of an empty
    // array is unbounded by its file (shape (0, 2**40) is a few bytes).
    if rows == 0 {
        return Err(Error::input(format!(
            "{}: shape {:?} has no rows: nothing to judge",
            files.x.display(),
            x.shape
        )));
    }
    let param = |path: Option<&Path>, name: &str| -> Result<Option<Vec<u64>>> {
        let Some(path) = path else { return Ok(None) };
        let a: NpyArray = npy::read(path)?;
        if a.shape != [d] {
            return Err(Error::input(format!(
                "{name} {} has shape {:?} but rows of x have d = {d}",
                path.display(),
                a.shape
            )));
        }
        Ok(Some(npy::bits_of(&a, dtype, name)?))
    };
    let problem = Problem {
        op,
        dtype,
        eps,
        convention,
        rows,
        d,
        x: npy::bits_of(&x, dtype, "x")?,
        gamma: param(files.gamma, "gamma")?,
        beta: param(files.beta, "beta")?,
    };
    problem.validate()?;
    Ok((problem, x.shape))
}
