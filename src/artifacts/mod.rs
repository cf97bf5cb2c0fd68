//! Reproducible results, the formats they are written in, and progress display.

pub mod catalogue;
pub mod format;
pub mod progress;
pub mod registry;
