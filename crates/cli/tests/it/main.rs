//! The one integration-test binary of the workspace (one binary keeps CI's link time low).
//! Each module is one suite; they share helpers from `common`.

mod api;
mod api_agents;
mod common;
mod dashboard;
mod datasets;
mod diagnostics;
mod economics;
mod emission;
mod eval;
mod events;
mod faults;
mod first_use;
mod guards;
mod highconc;
mod hub;
mod hub_browser;
mod interrupt;
mod llamacpp;
mod load;
mod long_ids;
mod rawreader;
mod readiness;
mod report;
mod report_sessions;
mod run;
mod sessions;
mod shard;
mod sim;
mod slurm;
mod spec_accept;
mod stable;
mod sweep;
mod telemetry;
mod vllm;
mod vllm_agents;
