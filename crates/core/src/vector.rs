//! Loops compiled for the widest vector instructions the CPU has. The oracle's hot loops are
//! plain Rust over arrays of eight lanes that the compiler vectorizes; run through
//! [`widest`], they are compiled three times (AVX-512F, AVX2, the baseline) and the CPU's
//! best copy runs. The copies perform the same IEEE operations in the same order (the
//! compiler never fuses a multiplication and an addition on its own), so they give the
//! same bits: the callers' tests compare them ([`Isa::each`]).

/// An instruction set a loop can be compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512F with F16C.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    /// The widest this CPU runs, found once.
    pub fn widest() -> Isa {
        static WIDEST: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *WIDEST.get_or_init(|| {
            Isa::each()
                .last()
                .copied()
                .expect("the baseline is always there")
        })
    }

    /// Every instruction set this CPU runs, narrowest first.
    pub fn each() -> Vec<Isa> {
        let mut all = vec![Isa::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                all.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                all.push(Isa::Avx512);
            }
        }
        all
    }

    /// Runs `f` compiled for this instruction set (`f` is inlined into a copy compiled for
    /// it: mark the closure `#[inline(always)]`).
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        match self {
            Isa::Baseline => f(),
            // SAFETY: `Isa::each` offers these only where the CPU has them.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { avx2(f) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { avx512(f) },
        }
    }
}

/// Runs `f` compiled for the widest instruction set this CPU has ([`Isa::widest`]).
#[inline(always)]
pub fn widest<R>(f: impl FnOnce() -> R) -> R {
    Isa::widest().run(f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,f16c")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `src.iter().map(f).collect()`, written so that it inlines into its caller's copy (a
/// `collect` may stay a function of its own, compiled for the baseline) and vectorizes.
#[inline(always)]
pub fn map_to_vec<A: Copy, B>(src: &[A], f: impl Fn(A) -> B) -> Vec<B> {
    let mut out = Vec::new();
    map_into(src, &mut out, f);
    out
}

/// [`map_to_vec`] into `out` (its old contents dropped, its allocation reused).
#[inline(always)]
pub fn map_into<A: Copy, B>(src: &[A], out: &mut Vec<B>, f: impl Fn(A) -> B) {
    out.clear();
    out.reserve(src.len());
    for (o, &a) in out.spare_capacity_mut().iter_mut().zip(src) {
        o.write(f(a));
    }
    // SAFETY: the loop wrote all src.len() elements (the capacity is at least that).
    unsafe { out.set_len(src.len()) };
}
