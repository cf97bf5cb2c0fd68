//! Benchmarks of the oracle itself (divan): the correctly rounded reference and a whole
//! verdict, on N(0,1) f32 rows. `cargo bench --bench reference`.

use normoracle::adapters::{reference_f64::ReferenceF64, Kernel};
use normoracle::exact;
use normoracle::judge::{bench::gaussian_problem, judge_problem, ProblemLabel, Report};

fn main() {
    divan::main();
}

const SHAPES: [(usize, usize); 3] = [(1, 4096), (64, 4096), (1024, 1024)];

#[divan::bench(args = SHAPES)]
fn reference(bencher: divan::Bencher, (rows, d): (usize, usize)) {
    let problem = gaussian_problem(rows, d, 1, normoracle::Dtype::F32);
    bencher
        .counter(divan::counter::ItemsCount::new(rows * d))
        .bench(|| exact::reference(divan::black_box(&problem)).unwrap());
}

#[divan::bench(args = SHAPES)]
fn verdict(bencher: divan::Bencher, (rows, d): (usize, usize)) {
    let problem = gaussian_problem(rows, d, 1, normoracle::Dtype::F32);
    let y = ReferenceF64.run(&problem).unwrap();
    bencher
        .counter(divan::counter::ItemsCount::new(rows * d))
        .bench(|| {
            let mut report =
                Report::new("bench", problem.op, problem.dtype, problem.convention, None);
            let label = ProblemLabel {
                case: None,
                family: "gaussian".into(),
            };
            judge_problem(divan::black_box(&problem), &y, &label, &mut report).unwrap();
            report
        });
}
