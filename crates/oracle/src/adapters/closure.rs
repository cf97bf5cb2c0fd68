//! Kernels written as Rust closures over typed slices: how a Rust user judges a kernel inside
//! their own `cargo test` (see `normoracle::judge_fn` and `assert_kernel_passes!`).

use super::Kernel;
use crate::dtype::Dtype;
use crate::problem::{EpsConvention, Op, Problem};

/// A storage type a Rust kernel works in.
pub trait Storage: Copy + Default + Send + Sync + 'static {
    const DTYPE: Dtype;
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
}

impl Storage for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
}

impl Storage for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
}

impl Storage for half::f16 {
    const DTYPE: Dtype = Dtype::F16;
    fn from_bits(bits: u64) -> Self {
        half::f16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        half::f16::to_bits(self) as u64
    }
}

impl Storage for half::bf16 {
    const DTYPE: Dtype = Dtype::BF16;
    fn from_bits(bits: u64) -> Self {
        half::bf16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        half::bf16::to_bits(self) as u64
    }
}

/// The signature of a typed kernel: x (rows·d), γ, β (d each, None = 1 and 0), y (rows·d),
/// d, ε. Rows are x.len()/d.
pub trait SliceKernelFn<T>:
    Fn(&[T], Option<&[T]>, Option<&[T]>, &mut [T], usize, f32) -> Result<(), String> + Sync
{
}
impl<
        T,
        F: Fn(&[T], Option<&[T]>, Option<&[T]>, &mut [T], usize, f32) -> Result<(), String> + Sync,
    > SliceKernelFn<T> for F
{
}

/// A closure over typed slices, as a `Kernel` for one op and ε convention.
pub struct SliceKernel<T: Storage, F: SliceKernelFn<T>> {
    pub name: String,
    pub op: Op,
    pub convention: EpsConvention,
    pub f: F,
    _t: std::marker::PhantomData<T>,
}

impl<T: Storage, F: SliceKernelFn<T>> SliceKernel<T, F> {
    pub fn new(name: impl Into<String>, op: Op, convention: EpsConvention, f: F) -> Self {
        SliceKernel {
            name: name.into(),
            op,
            convention,
            f,
            _t: std::marker::PhantomData,
        }
    }
}

impl<T: Storage, F: SliceKernelFn<T>> Kernel for SliceKernel<T, F> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn supports(&self, op: Op, dtype: Dtype) -> bool {
        op == self.op && dtype == T::DTYPE
    }
    fn run(&self, p: &Problem) -> std::result::Result<Vec<u64>, String> {
        if p.convention != self.convention {
            return Err(format!(
                "kernel implements the ε-{} convention, problem uses {}",
                self.convention, p.convention
            ));
        }
        let conv = |v: &[u64]| v.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
        let x = conv(&p.x);
        let g = p.gamma.as_deref().map(conv);
        let b = p.beta.as_deref().map(conv);
        let mut y = vec![T::default(); x.len()];
        (self.f)(&x, g.as_deref(), b.as_deref(), &mut y, p.d, p.eps.value())?;
        Ok(y.into_iter().map(T::to_bits).collect())
    }
}
