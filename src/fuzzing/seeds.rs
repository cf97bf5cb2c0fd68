//! Seed corpora from the battery: a few dozen small inputs per target, each a battery case
//! (every family, both ops and ε conventions, widths up to `input::MAX_D`) in the target's
//! format.

use super::input::{self, MAX_D};
use super::keys;
use super::sandbox;
use crate::adapters::{reference_f64::ReferenceF64, Kernel};
use crate::cases::{self, rng, BatteryConfig, Family, WIDTHS};
use crate::dtype::Dtype;
use crate::geometry::selectability::Normalization;
use crate::npy;
use crate::problem::{EpsConvention, Op, Problem};

/// Battery problems in these dtypes, every `stride`-th of (dtype, op, convention, family),
/// at widths that cycle through `WIDTHS` up to `MAX_D`.
pub fn battery_problems(dtypes: &[Dtype], stride: usize) -> Vec<Problem> {
    let narrow: Vec<usize> = (0..WIDTHS.len()).filter(|&w| WIDTHS[w] <= MAX_D).collect();
    let mut out = Vec::new();
    let mut k = 0usize;
    for &dtype in dtypes {
        for op in Op::ALL {
            for convention in [EpsConvention::Inside, EpsConvention::Outside] {
                let mut config = BatteryConfig::new(op, dtype, rng::DEFAULT_SEED);
                config.convention = convention;
                for (f, _) in Family::ALL.iter().enumerate() {
                    if k.is_multiple_of(stride) {
                        let w = narrow[(7 * k) % narrow.len()];
                        let case = cases::case(&config, f * WIDTHS.len() + w)
                            .expect("systematic cases exist");
                        out.push(case.problem);
                    }
                    k += 1;
                }
            }
        }
    }
    out
}

fn encode(problems: &[Problem]) -> Vec<Vec<u8>> {
    problems
        .iter()
        .map(|p| input::encode_problem(p).expect("seed problems fit the format"))
        .collect()
}

/// A kernel target in one dtype: 36 problems.
pub fn kernel(dtype: Dtype) -> Vec<Vec<u8>> {
    encode(&battery_problems(&[dtype], 1))
}

/// The reference target: 36 problems over all dtypes.
pub fn reference() -> Vec<Vec<u8>> {
    encode(&battery_problems(&Dtype::ALL, 4))
}

/// The judge target: problems with the outputs of the plain f64 kernel (close to, not always
/// equal to, the correctly rounded ones), and a few with one output missing.
pub fn judge() -> Vec<Vec<u8>> {
    battery_problems(&Dtype::ALL, 4)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let y = ReferenceF64.run(p).expect("the f64 kernel runs everything");
            let mode = u8::from(i % 9 == 4);
            let mut bytes = input::encode_problem(p).expect("seed problems fit the format");
            bytes.push(mode);
            bytes.extend(input::encode_values(p.dtype, &y));
            bytes
        })
        .collect()
}

/// The `.npy` target: x, γ and β of battery problems as files, in versions 1 and 2, with
/// 1-, 2- and 3-axis shapes.
pub fn npy() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, p) in battery_problems(&Dtype::ALL, 8).iter().enumerate() {
        let shape = match i % 3 {
            0 => vec![p.rows * p.d],
            1 => vec![p.rows, p.d],
            _ => vec![1, p.rows, p.d],
        };
        let x = npy::from_bits(shape, p.dtype, &p.x).expect("shape holds x");
        let bytes = npy::to_bytes(&x);
        out.push(if i % 2 == 0 {
            bytes
        } else {
            as_version_2(&bytes)
        });
        if let Some(g) = &p.gamma {
            let g = npy::from_bits(vec![p.d], p.dtype, g).expect("shape holds γ");
            out.push(npy::to_bytes(&g));
        }
    }
    out
}

/// A version-1 `.npy` file rewritten as version 2 (a 4-byte header length).
fn as_version_2(v1: &[u8]) -> Vec<u8> {
    let header_len = u16::from_le_bytes([v1[8], v1[9]]) as u32;
    let mut out = v1[..6].to_vec();
    out.extend([2, 0]);
    out.extend(header_len.to_le_bytes());
    out.extend(&v1[10..]);
    out
}

/// The certificate target: the rows of battery problems of width ≤ 6 as keys (plain, with
/// biases, layer-normalized with the problem's ε and γ, rms-normalized), through every
/// pipeline, and keys on a grid with hull points, duplicates and ties.
pub fn certificate() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let problems = battery_problems(&Dtype::ALL, 1);
    for (k, p) in problems
        .iter()
        .filter(|p| p.d <= keys::MAX_KEY_D && p.rows <= keys::MAX_KEYS)
        .take(28)
        .enumerate()
    {
        let values: Vec<f64> = p.x.iter().map(|&b| p.dtype.to_f64(b)).collect();
        if values.iter().any(|v| !v.is_finite()) {
            continue;
        }
        let rows: Vec<Vec<f64>> = values.chunks(p.d).map(<[f64]>::to_vec).collect();
        let gamma: Option<Vec<f64>> = p
            .gamma
            .as_ref()
            .map(|g| g.iter().map(|&b| p.dtype.to_f64(b)).collect());
        let eps = p.eps.value();
        let biases: Vec<f64> = rows.iter().map(|r| r[0] / 2.0).collect();
        let pipeline = (k / 4) as u8;
        out.push(match k % 4 {
            0 => keys::encode(&rows, None, None, pipeline),
            1 => keys::encode(&rows, Some(&biases), None, pipeline),
            2 => keys::encode(
                &rows,
                None,
                Some((
                    Normalization::layer_norm(eps).expect("valid ε"),
                    gamma.as_deref(),
                )),
                pipeline,
            ),
            _ => keys::encode(
                &rows,
                None,
                Some((
                    Normalization::rms_norm(eps).expect("valid ε"),
                    gamma.as_deref(),
                )),
                pipeline,
            ),
        });
    }
    let grid: [Vec<Vec<f64>>; 4] = [
        // The centre of a square: in the hull of the corners.
        vec![
            vec![0.0, 0.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.0],
            vec![0.5, 0.5],
        ],
        // Duplicates.
        vec![vec![1.0, 2.0], vec![1.0, 2.0], vec![3.0, -1.0]],
        // A point on a segment, in one dimension.
        vec![vec![-1.0], vec![0.25], vec![2.0]],
        // A cube's vertices and its centre, in three dimensions.
        (0..9)
            .map(|v| {
                if v == 8 {
                    vec![0.5; 3]
                } else {
                    (0..3).map(|b| ((v >> b) & 1) as f64).collect()
                }
            })
            .take(keys::MAX_KEYS)
            .collect(),
    ];
    for (k, rows) in grid.iter().enumerate() {
        out.push(keys::encode(rows, None, None, k as u8));
        let biases: Vec<f64> = (0..rows.len()).map(|j| j as f64 / 4.0).collect();
        out.push(keys::encode(rows, Some(&biases), None, 0));
        let ln = Normalization::layer_norm(1e-5).expect("valid ε");
        out.push(keys::encode(rows, None, Some((ln, None)), 0));
    }
    out
}

/// The CLI target: command lines over the sandbox's files (`sandbox::write`), covering every
/// subcommand and the pass, fail and error exits. Every seed is safe to run through the
/// binary in a copy of the sandbox (nothing slow, nothing written outside it).
/// Seeds of the worker-protocol target: the frames of real calls (requests from battery
/// problems of every dtype, and the responses a worker gives), alone and run together.
pub fn worker_protocol() -> Vec<Vec<u8>> {
    use crate::harness::protocol::{
        CallRequest, CallResponse, CrashReport, Request, Response, Spots,
    };
    let mut out = Vec::new();
    for (i, p) in battery_problems(&[Dtype::F32, Dtype::F16], 4)
        .iter()
        .enumerate()
    {
        let width: u8 = if p.dtype == Dtype::F32 { 4 } else { 2 };
        let bytes = |bits: &[u64]| -> Vec<u8> {
            bits.iter()
                .flat_map(|&b| (b as u32).to_le_bytes()[..usize::from(width)].to_vec())
                .collect()
        };
        let request = Request::Call(CallRequest {
            case: i as u64,
            rows: p.rows as u64,
            d: p.d as u64,
            eps_bits: p.eps.value().to_bits(),
            width,
            x: bytes(&p.x),
            gamma: p.gamma.as_deref().map(bytes),
            beta: p.beta.as_deref().map(bytes),
        })
        .encode();
        let spots = |count: u64, first: i64| Spots { count, first };
        let response = Response::Called(CallResponse {
            return_code: (i % 3) as i32,
            fp_before: 0x1f80,
            fp_after: 0x1f80 | ((i as u64 % 2) << 15),
            late: spots(i as u64 % 2, 0),
            before_start: spots(0, 0),
            past_end: spots(i as u64 % 3, p.x.len() as i64),
            unwritten: spots(0, 0),
            y: bytes(&p.x),
        })
        .encode();
        out.push([request.clone(), response.clone()].concat());
        out.push(request);
        out.push(response);
    }
    out.push(Request::Finish.encode());
    for r in [
        Response::Ready {
            before_load: 0x1f80,
            after_load: 0x9fc0,
        },
        Response::LoadFailed {
            message: "symbol 'normoracle_layer_norm_f32' not found".into(),
        },
        Response::Crash(CrashReport {
            signal: 11,
            address: 0x7f00_0000_1000,
            region: 4,
            element: 16,
            access: 2,
            loading: 0,
        }),
        Response::Done {
            late: Spots { count: 1, first: 3 },
        },
    ] {
        out.push(r.encode());
    }
    out
}

pub fn cli() -> Vec<Vec<u8>> {
    cli_argvs()
        .iter()
        .map(|args| {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            input::argv_to_bytes(&refs)
        })
        .collect()
}

/// The CLI seeds as argument lists (program name excluded).
pub fn cli_argvs() -> Vec<Vec<String>> {
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let mut out = Vec::new();
    for dtype in Dtype::ALL {
        let f = |what: &str| sandbox::file(dtype, what);
        out.push(words(&format!(
            "check --op layer_norm --dtype {dtype} --x {} --y {} --gamma {} --beta {}",
            f("x"),
            f("y"),
            f("gamma"),
            f("beta")
        )));
    }
    let f32 = |what: &str| sandbox::file(Dtype::F32, what);
    let bf16 = |what: &str| sandbox::file(Dtype::BF16, what);
    for line in [
        // A failing verdict: layer-norm outputs judged as RMSNorm.
        format!("check --op rms_norm --dtype f32 --x {} --y {}", f32("x"), f32("y")),
        format!(
            "check --op layer_norm --dtype f32 --eps-bits 0x3727c5ac --eps-convention outside --row 2 --json --x {} --y {} --gamma {}",
            f32("x"),
            f32("y"),
            f32("gamma")
        ),
        format!("check --op layer_norm --dtype f32 --row 9 --x {} --y {}", f32("x"), f32("y")),
        format!("check --op layer_norm --dtype bf16 --x {} --y {}", f32("x"), f32("y")),
        format!("check --op layer_norm --dtype bf16 --x {} --y {} --gamma {}", bf16("x"), bf16("y"), f32("gamma")),
        format!("check --op layer_norm --dtype f16 --x {} --y {}", sandbox::GARBAGE, f32("y")),
        format!("check --op layer_norm --dtype f32 --x missing.npy --y {}", f32("y")),
        format!("check --op layer_norm --dtype f32 --eps -1e-5 --x {} --y {}", f32("x"), f32("y")),
        format!("check --op layer_norm --dtype f32 --eps nan --x {} --y {}", f32("x"), f32("y")),
        format!("check {}", sandbox::CASES),
        format!("check {} --json", sandbox::CASES),
        "check".into(),
        "fuzz --builtin reference-f64 --op layer_norm --dtype f32 --cases 0 --case 3".into(),
        "fuzz --builtin reference-f64 --op rms_norm --dtype bf16 --case 201 --cases 5 --json".into(),
        "fuzz --builtin reference-f64 --op layer_norm --dtype f16 --case 40 --family constant".into(),
        "fuzz --builtin reference-f64 --op layer_norm --dtype f64 --case 999".into(),
        "fuzz --builtin nope --op layer_norm --dtype f32 --case 0".into(),
        "fuzz --lib missing.so --op layer_norm --dtype f32 --case 0".into(),
        "fuzz --lib missing.so --op rms_norm --dtype f16 --case 2 --timeout 0.5 --memory-limit 64".into(),
        "fuzz --lib missing.so --op layer_norm --dtype bf16 --case 1 --in-process --timeout 1e9".into(),
        "fuzz --builtin native --op layer_norm --dtype f32 --case 0 --in-process".into(),
        format!(
            "reference --op layer_norm --dtype f32 --x {} --gamma {} --out out.npy",
            f32("x"),
            f32("gamma")
        ),
        "audit --help".into(),
        "cases --help".into(),
        "bench-oracle --help".into(),
        "--version".into(),
        "--help".into(),
        "nope".into(),
    ] {
        out.push(words(&line));
    }
    out
}
