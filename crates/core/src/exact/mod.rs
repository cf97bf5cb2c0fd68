//! Exact arithmetic: exact sums, exact row statistics, and the correctly rounded reference.

pub mod dd;
#[cfg(target_arch = "x86_64")]
mod decode_avx512;
pub mod reference;
pub mod slow;
pub mod stats;
pub mod superacc;
pub mod surd;

pub use reference::{reference, Element, ElementInput, ReferenceOutput};
pub use stats::{RowKind, RowStats};
