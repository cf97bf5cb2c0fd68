//! The binary end to end: every subcommand's output and exit codes (commands), and the
//! ellipsoid, hygiene (bad input, closed pipes, signals), theorems and unselectable
//! commands, in one test binary. `cargo test --test cli hygiene::` runs one of them.

mod commands;
mod ellipsoid;
mod hygiene;
mod theorems;
mod unselectable;
