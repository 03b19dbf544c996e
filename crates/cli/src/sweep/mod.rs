//! The sweep's machinery beside its command (`commands/sweep.rs`): a combination started,
//! waited for and stopped (a local process group or Slurm), the `--file` TOML, and uploading a
//! sweep directory. The decisions (grid, records, frontier) are pure functions in core.

pub mod combo;
pub mod file;
pub mod ready;
pub mod server;
pub mod slurm;
pub mod upload;
