//! Reproducible results and the formats they are written in.

pub mod format;
