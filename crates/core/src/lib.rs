//! Core of llm-inference-bench: the validated plan, per-request records, the figures computed
//! from them (pure functions), cell statuses and the results store. No HTTP, no terminal, so
//! everything here is tested without sockets.

pub mod accuracy;
pub mod burst;
pub mod capacity;
pub mod cell;
pub mod counting;
pub mod figures;
pub mod hw;
pub mod lag;
pub mod live;
pub mod meta;
pub mod plan;
pub mod readiness;
pub mod record;
pub mod redact;
pub mod run;
pub mod size;
pub mod stats;
pub mod store;
pub mod time;
pub mod verdict;

#[cfg(test)]
#[path = "tests/props.rs"]
mod props;
