//! The Startup diagnostics section: what `run.json` recorded of the server's machine at the
//! start (kernel, driver, CUDA, the P2P override, the environment, the GPU topology), for a
//! reader who must explain a figure after the fact. The HTML page shows it collapsed; the
//! Markdown gives the same facts. Only runs whose server ran on the measuring machine have it.
//!
//! Every value here came from outside (the environment, command output) and was redacted by the
//! runner; the exporters escape it like any other string.

use crate::model::{Report, UNKNOWN};
use crate::number::NULL;
use crate::table::{Table, TableCell, TableRow};
use llmib_core::{Diagnostics, P2pOverride, Probed};
use serde::Serialize;

/// The section's caption.
pub(crate) const CAPTION: &str = "This machine as the run found it at the start (the server \
    runs here): kernel, NVIDIA driver and CUDA versions, the driver's P2P override, the \
    environment variables that tune NCCL, vLLM, SGLang, CUDA and PyTorch (secret-looking values \
    redacted), and the GPU topology.";

/// What the section shows.
#[derive(Debug, Serialize)]
pub(crate) struct DiagView {
    /// Fact, value, where it was read.
    pub facts: Table,
    /// The kept environment variables; `None` when there are none.
    pub env: Option<Table>,
    /// How many variables were not kept, in words.
    pub env_note: Option<String>,
    /// `nvidia-smi topo -m`, verbatim.
    pub topology: Option<String>,
    /// The topology was cut at its bound.
    pub topology_truncated: bool,
}

/// The section for `report`, when its run has diagnostics.
pub(crate) fn view(report: &Report) -> Option<DiagView> {
    let d = report.info.diagnostics.as_ref()?;
    let topology = d.topology.value.as_ref();
    Some(DiagView {
        facts: facts(d),
        env: (!d.env.is_empty()).then(|| {
            text_table(
                &["Variable", "Value"],
                d.env
                    .iter()
                    .map(|v| vec![v.name.clone(), v.value.clone()])
                    .collect(),
            )
        }),
        env_note: (d.env_omitted > 0).then(|| {
            format!(
                "{} more variables with these prefixes were not kept.",
                d.env_omitted
            )
        }),
        topology: topology.map(|t| t.text.clone()),
        topology_truncated: topology.is_some_and(|t| t.truncated),
    })
}

/// The facts table: kernel, architecture, driver, CUDA, P2P override, and the topology when it
/// is missing (why).
fn facts(d: &Diagnostics) -> Table {
    let mut rows = vec![
        fact("Kernel", &d.uname, |u| format!("{} {}", u.system, u.kernel)),
        fact("Architecture", &d.uname, |u| u.arch.clone()),
        fact("NVIDIA driver", &d.driver_version, String::clone),
        fact("CUDA (driver)", &d.cuda_version, String::clone),
        fact("P2P override", &d.p2p_override, p2p_text),
    ];
    if let Some(r) = d
        .p2p_override
        .value
        .as_ref()
        .and_then(|p| p.registry_dwords.as_ref())
    {
        let source = d.p2p_override.source.clone().unwrap_or_default();
        rows.push(vec!["Driver RegistryDwords".into(), r.clone(), source]);
    }
    if d.topology.value.is_none() {
        rows.push(fact("GPU topology", &d.topology, |_| String::new()));
    }
    text_table(&["Fact", "Value", "Source"], rows)
}

/// One row: the value (or `unknown: why`) and its source.
fn fact<T>(label: &str, p: &Probed<T>, text: impl Fn(&T) -> String) -> Vec<String> {
    let value = match (&p.value, &p.reason) {
        (Some(v), _) => text(v),
        (None, Some(r)) => format!("{UNKNOWN}: {r}"),
        (None, None) => UNKNOWN.to_string(),
    };
    let source = p.source.clone().unwrap_or_else(|| NULL.to_string());
    vec![label.to_string(), value, source]
}

/// `on (ForceP2P=0x11, RMForceP2PType=1)` or `off`, with the settings that were found.
fn p2p_text(p: &P2pOverride) -> String {
    let settings: Vec<String> = p
        .settings
        .iter()
        .map(|s| format!("{}={}", s.name, s.value))
        .collect();
    let word = if p.on { "on" } else { "off" };
    if settings.is_empty() {
        word.to_string()
    } else {
        format!("{word} ({})", settings.join(", "))
    }
}

/// A table of plain text columns.
fn text_table(columns: &[&str], rows: Vec<Vec<String>>) -> Table {
    Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        numeric: vec![false; columns.len()],
        rows: rows
            .into_iter()
            .map(|cells| TableRow {
                status: "diagnostics".into(),
                cells: cells
                    .into_iter()
                    .map(|text| TableCell {
                        sort: text.clone(),
                        text,
                        numeric: false,
                    })
                    .collect(),
            })
            .collect(),
    }
}
