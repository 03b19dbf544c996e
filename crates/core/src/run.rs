//! `run.json`: what a run was (plan, server, hardware, model, tool, times). Together with
//! `cells.jsonl` it holds everything needed to redraw the seed page.

use crate::diag::Diagnostics;
use crate::meta::{EngineInfo, HardwareInfo, ModelInfo};
use crate::plan::Plan;
use serde::{Deserialize, Serialize};

/// Version of the results schema (`run.json` + `cells.jsonl`). Bumped on incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The benchmark tool's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `llm-inference-bench`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl ToolInfo {
    /// This build of the tool.
    pub fn current() -> Self {
        ToolInfo {
            name: "llm-inference-bench".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// As the seed's Run card prints it: `llm-inference-bench v0.6.2`.
    pub fn label(&self) -> String {
        format!("{} v{}", self.name, self.version)
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Started, not finished (or killed).
    Running,
    /// Every planned cell has a row.
    Completed,
    /// Stopped by the user (Ctrl-C) or the time budget.
    Interrupted,
    /// Stopped by an error that made going on pointless (server gone).
    Aborted,
}

/// The contents of `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The tool that measured.
    pub tool: ToolInfo,
    /// Run state.
    pub state: RunState,
    /// Wall-clock start (RFC 3339).
    pub started_at: String,
    /// Wall-clock end (RFC 3339), when finished.
    pub finished_at: Option<String>,
    /// Endpoint measured (userinfo stripped).
    pub url: String,
    /// The Engine card.
    pub engine: EngineInfo,
    /// The served model.
    pub model: ModelInfo,
    /// The Hardware card.
    pub hardware: HardwareInfo,
    /// The launch command, secrets replaced by `<redacted>`.
    pub launch_command: Option<String>,
    /// Where the launch command came from (`sglang server_args`, `--launch-command`).
    pub launch_command_source: Option<String>,
    /// The resolved plan.
    pub plan: Plan,
    /// Free-form notes the run wants a reader to see (dropped contexts, degraded counting…).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Startup diagnostics of the server's machine (environment, kernel, driver, GPU topology,
    /// P2P override), gathered only when the server runs on this machine. Absent in older
    /// `run.json` files and for remote servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
    /// The sweep and combination this run measured, where a `sweep` ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::sweep::SweepMember>,
}
