//! The one place for input generators: a portable seeded source (`rng`), the input families
//! (`families`), the battery that crosses them with widths, ε and parameters (`battery`), and
//! the accuracy table's targeted problems: the mean-offset sweep and minimal reproducers of
//! classic bugs (`probes`).

pub mod battery;
pub mod families;
pub mod probes;
pub use normoracle_core::rng;

pub use battery::{battery, case, BatteryConfig, Case, WIDTHS};
pub use families::Family;
