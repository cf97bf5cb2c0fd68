//! Training experiments of the papers, redone (candle's CPU backend, feature `candle`).

#[cfg(feature = "candle")]
pub mod majority;
