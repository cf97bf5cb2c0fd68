//! Whether a single row could be normalized faster on two cores than on one: the bench's
//! floor (`kernels::floor`) of one row of D f32 on the calling thread, against the floor of
//! each half of it on a thread of its own (`rayon::join`). A kernel that split a row would
//! need two such hand-offs (the halves' sums, then their outputs), so the joined halves are
//! less than any split kernel does; where they are slower than the whole row on one
//! thread, no kernel gains by splitting rows of that width.
//!
//! ```sh
//! cargo run --release --example row_split -- D CALLS
//! ```
//!
//! Runs on a pool of two threads. Prints the best and median seconds per call of each, over
//! 21 series of CALLS calls.

use normoracle::bench::Inputs;
use normoracle::kernels::floor::floor;
use normoracle::kernels::Layout;
use std::process::ExitCode;
use std::time::Instant;

fn per_call(calls: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        f();
    }
    start.elapsed().as_secs_f64() / calls as f64
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match &args[..] {
        [d, calls] => d.parse::<usize>().ok().zip(calls.parse::<usize>().ok()),
        _ => None,
    };
    let Some((d, calls)) = parsed.filter(|&(d, calls)| (2..=1 << 24).contains(&d) && calls > 0)
    else {
        eprintln!("row_split: expected D (2 to 2^24) and CALLS (at least 1)");
        return ExitCode::from(2);
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two threads");
    let x = Inputs::<f32>::new(d, d, 1).x;
    let mut y = vec![0.0f32; d];
    let half = d / 2;
    let (mut whole, mut split) = (Vec::new(), Vec::new());
    pool.install(|| {
        for _ in 0..21 {
            whole.push(per_call(calls, || {
                floor(&x, &mut y, Layout::contiguous(1, d), None, None).expect("a valid row")
            }));
            split.push(per_call(calls, || {
                let (xa, xb) = x.split_at(half);
                let (ya, yb) = y.split_at_mut(half);
                let run = |x: &[f32], y: &mut [f32]| {
                    floor(x, y, Layout::contiguous(1, x.len()), None, None).expect("a valid row")
                };
                rayon::join(|| run(xa, ya), || run(xb, yb));
            }));
        }
    });
    for (what, mut t) in [("one thread", whole), ("halves joined", split)] {
        t.sort_by(f64::total_cmp);
        println!(
            "{what:>14}: best {:.3} us, median {:.3} us (1 x {d}, {calls} calls a series)",
            t[0] * 1e6,
            t[t.len() / 2] * 1e6
        );
    }
    ExitCode::SUCCESS
}
