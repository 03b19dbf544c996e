//! One file per subcommand: each turns its parsed flags into calls of the library crates and
//! returns what `main.rs` maps to an exit code. Flags and their checks live in `config/`, what a
//! run shows while it goes in `live/`, and the sweep's machinery in `sweep/`.

pub mod completions;
pub mod eval;
pub mod hub;
pub mod import;
pub mod merge;
pub mod repeats;
pub mod report;
pub mod run;
pub mod sim;
pub mod sweep;
pub mod upload;
