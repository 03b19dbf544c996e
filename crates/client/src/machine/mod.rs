//! The machine the client runs on: its hardware (GPUs, CPU, memory; `--hardware` overrides),
//! a monitor that samples it through a run, and the diagnostics bundle.
//!
//! May import: nothing else of this crate (only `llmib-core`). Nothing in a measured request's
//! path depends on it.

pub(crate) mod diagnostics;
pub(crate) mod hardware;
pub(crate) mod hwmon;
