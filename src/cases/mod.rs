//! The one place for input generators: a portable seeded source (`rng`), the input families
//! (`families`) and the battery that crosses them with widths, ε and parameters (`battery`).

pub mod battery;
pub mod families;
pub mod rng;

pub use battery::{battery, case, BatteryConfig, Case, WIDTHS};
pub use families::Family;
