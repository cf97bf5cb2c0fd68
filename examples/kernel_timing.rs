//! Times the native kernels call by call, for loops whose data stays in cache: the best
//! and the median of CALLS calls of `kernels::normalize` on the same rows (the bench's
//! inputs, seed 1), with x, γ, β and y placed at chosen distances past a cache line.
//! `normoracle bench` reports the median of samples of repeated calls; on a shared machine
//! the best call follows the arithmetic more closely ("best of N calls" in docs/speed.md).
//!
//! ```sh
//! cargo run --release --example kernel_timing -- OP DTYPE ROWS D CALLS [X_OFF PARAMS_OFF Y_OFF]
//! ```
//!
//! OP: layer_norm (with γ and β), rms_norm (with γ) or floor (the bench's floor,
//! `kernels::floor`: what every kernel must do); DTYPE: f32, f16 or bf16; offsets in
//! bytes past a 64-byte line, multiples of the element size below 64 (default 0).
//! `RAYON_NUM_THREADS` sets the threads. Prints one line: the best and median call in µs.

use half::{bf16, f16};
use normoracle::bench::Inputs;
use normoracle::dtype::Dtype;
use normoracle::kernels::{floor::floor, normalize, Element, Layout, Options, Params};
use normoracle::problem::Op;
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    /// The op, or `None` for the floor.
    op: Option<Op>,
    dtype: Dtype,
    rows: usize,
    d: usize,
    calls: usize,
    /// Bytes past a cache line of x, of γ and β, of y.
    offsets: [usize; 3],
}

fn parse(args: &[String]) -> Result<Args, String> {
    let [op, dtype, rows, d, calls, rest @ ..] = args else {
        return Err("expected OP DTYPE ROWS D CALLS [X_OFF PARAMS_OFF Y_OFF]".into());
    };
    let number = |s: &String, what: &str| {
        s.parse::<usize>()
            .map_err(|_| format!("{what} must be a whole number, got {s:?}"))
    };
    let args = Args {
        op: match op.as_str() {
            "floor" => None,
            op => Some(op.parse::<Op>().map_err(|e| e.to_string())?),
        },
        dtype: dtype.parse::<Dtype>().map_err(|e| e.to_string())?,
        rows: number(rows, "ROWS")?,
        d: number(d, "D")?,
        calls: number(calls, "CALLS")?,
        offsets: match rest {
            [] => [0; 3],
            [x, p, y] => [
                number(x, "X_OFF")?,
                number(p, "PARAMS_OFF")?,
                number(y, "Y_OFF")?,
            ],
            _ => return Err("give all three offsets or none".into()),
        },
    };
    if args.rows == 0 || args.d == 0 || args.calls == 0 {
        return Err("ROWS, D and CALLS must be at least 1".into());
    }
    // Timings of data in cache want small rows; this only keeps the buffers allocatable.
    if args.rows.checked_mul(args.d).is_none_or(|n| n > 1 << 30) {
        return Err("ROWS × D must be at most 2^30 values".into());
    }
    let size = args.dtype.bits() as usize / 8;
    if args.offsets.iter().any(|&o| o >= 64 || o % size != 0) {
        return Err(format!(
            "offsets must be below 64 and multiples of {size} bytes"
        ));
    }
    Ok(args)
}

/// `values` copied into a buffer of their own, starting `offset` bytes past a cache line.
struct Placed<T> {
    buffer: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Element> Placed<T> {
    fn new(values: &[T], offset: usize) -> Placed<T> {
        let size = std::mem::size_of::<T>();
        let mut buffer = vec![T::default(); values.len() + 128 / size];
        let to_line = (64 - buffer.as_ptr() as usize % 64) % 64;
        let start = (to_line + offset) / size;
        buffer[start..start + values.len()].copy_from_slice(values);
        Placed {
            buffer,
            start,
            len: values.len(),
        }
    }
    fn get(&self) -> &[T] {
        &self.buffer[self.start..self.start + self.len]
    }
    fn get_mut(&mut self) -> &mut [T] {
        &mut self.buffer[self.start..self.start + self.len]
    }
}

fn time<T: Element>(args: &Args) -> Result<(f64, f64), String> {
    let n = args.rows * args.d;
    let inputs = Inputs::<T>::new(n, args.d, 1);
    let [x_off, params_off, y_off] = args.offsets;
    let x = Placed::new(&inputs.x, x_off);
    let gamma = Placed::new(&inputs.gamma, params_off);
    let beta = Placed::new(&inputs.beta, params_off);
    let mut y = Placed::new(&vec![T::default(); n], y_off);
    let params = Params {
        gamma: Some(gamma.get()),
        beta: (args.op == Some(Op::LayerNorm)).then_some(beta.get()),
        eps: 1e-5,
    };
    let layout = Layout::contiguous(args.rows, args.d);
    let mut seconds = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        let start = Instant::now();
        match args.op {
            Some(op) => normalize(op, x.get(), y.get_mut(), layout, params, Options::default()),
            None => floor(x.get(), y.get_mut(), layout, None, None),
        }
        .map_err(|e| e.to_string())?;
        seconds.push(start.elapsed().as_secs_f64());
    }
    seconds.sort_by(f64::total_cmp);
    Ok((seconds[0], seconds[seconds.len() / 2]))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|a| {
        let timed = match a.dtype {
            Dtype::F32 => time::<f32>(&a),
            Dtype::F16 => time::<f16>(&a),
            Dtype::BF16 => time::<bf16>(&a),
            Dtype::F64 => Err("the native kernels have no f64".into()),
        };
        timed.map(|t| (a, t))
    });
    match result {
        Ok((a, (best, median))) => {
            println!(
                "{} {} {} x {} ({} calls, offsets {:?}): best {:.2} us, median {:.2} us",
                a.op.map_or("floor", Op::name),
                a.dtype.name(),
                a.rows,
                a.d,
                a.calls,
                a.offsets,
                best * 1e6,
                median * 1e6
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kernel_timing: {e}");
            ExitCode::from(2)
        }
    }
}
