//! Reproducible results, the formats they are written in, and progress display.

pub mod format;
pub mod progress;
