//! Startup diagnostics: the facts about the server's machine that explain a surprising figure
//! after the fact (an `NCCL_P2P_DISABLE=1` left in the environment, a P2P override in the
//! NVIDIA driver, a PCIe-only topology, an old driver). They are kept in `run.json` and shown,
//! collapsed, in the HTML report.
//!
//! The client gathers the raw texts (commands, `/proc` and `/sys` files, the environment) and
//! [`Diagnostics::from_inputs`] turns them into this record, so every format is parsed and
//! tested here on recorded outputs, without a GPU. They describe the server only when it runs
//! on this machine: the runner gathers them only then, as it does the Hardware card.
//!
//! A source that is missing (no `nvidia-smi`, no NVIDIA module, a command that timed out) gives
//! a [`Probed`] without a value and with the reason; it never stops the run. Environment values
//! that look like secrets are replaced by [`REDACTED`], and every text is bounded in size.

use crate::redact::{REDACTED, is_secret_name, redact_text};
use serde::{Deserialize, Serialize};

/// The prefixes of the environment variables kept: the ones that change how an inference
/// server, its collectives and CUDA behave.
pub const ENV_PREFIXES: [&str; 6] = ["NCCL_", "VLLM_", "SGLANG_", "CUDA_", "TORCH_", "NVIDIA_"];

/// At most this many environment variables are kept (the rest are counted).
pub const MAX_ENV_VARS: usize = 256;
/// An environment value is cut to this many bytes.
pub const MAX_ENV_VALUE_BYTES: usize = 2048;
/// `nvidia-smi topo -m` is kept up to this many bytes (a 16-GPU matrix with NICs is ~6 KB).
pub const MAX_TOPOLOGY_BYTES: usize = 16 * 1024;
/// The driver's `RegistryDwords` is kept up to this many bytes.
const MAX_REGISTRY_BYTES: usize = 4096;

/// Where each fact is read, in words (the `source` of a [`Probed`]).
pub mod source {
    /// The kernel and architecture.
    pub const UNAME: &str = "uname -srm";
    /// The header of plain `nvidia-smi`: driver and CUDA versions.
    pub const NVIDIA_SMI: &str = "nvidia-smi";
    /// The loaded kernel module's version line.
    pub const PROC_VERSION: &str = "/proc/driver/nvidia/version";
    /// The GPU interconnect matrix.
    pub const TOPOLOGY: &str = "nvidia-smi topo -m";
    /// The loaded kernel module's parameters (what is in force, not what a file asks for).
    pub const PROC_PARAMS: &str = "/proc/driver/nvidia/params";
    /// The module parameter as sysfs shows it (may read empty even when it is in force).
    pub const SYS_REGISTRY_DWORDS: &str = "/sys/module/nvidia/parameters/NVreg_RegistryDwords";
}

/// One fact and where it came from, or why it is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probed<T> {
    /// The fact; `None` when it could not be read.
    pub value: Option<T>,
    /// Where it was read (a command or a file), when it was.
    pub source: Option<String>,
    /// Why it is missing (the command failed, the file is absent), when it is.
    pub reason: Option<String>,
}

impl<T> Probed<T> {
    /// A fact read from `source`.
    pub fn found(value: T, source: &str) -> Self {
        Probed {
            value: Some(value),
            source: Some(source.to_owned()),
            reason: None,
        }
    }

    /// A fact that could not be read, and why.
    pub fn missing(reason: impl Into<String>) -> Self {
        Probed {
            value: None,
            source: None,
            reason: Some(reason.into()),
        }
    }
}

/// One environment variable, its value redacted where it looks like a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    /// Name (`NCCL_P2P_DISABLE`).
    pub name: String,
    /// Value, or [`REDACTED`].
    pub value: String,
}

/// The kernel and architecture (`uname -srm`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uname {
    /// Kernel name (`Linux`).
    pub system: String,
    /// Kernel release (`6.8.0-45-generic`).
    pub kernel: String,
    /// Machine architecture (`x86_64`).
    pub arch: String,
}

/// A text kept verbatim up to a bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundedText {
    /// The text (control characters other than newline and tab replaced by `?`).
    pub text: String,
    /// Whether it was cut at the bound.
    pub truncated: bool,
}

/// One setting of the NVIDIA kernel module that bears on peer-to-peer copies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverSetting {
    /// Name (`ForceP2P`, `RMForceP2PType`, `GrdmaPciTopoCheckOverride`).
    pub name: String,
    /// Value as written (`0x11`).
    pub value: String,
}

/// Whether the NVIDIA driver's P2P override is in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct P2pOverride {
    /// True when `ForceP2P`, `RMForceP2PType` or `RMPcieP2PType` is set to a non-zero value in
    /// the module's `RegistryDwords` (the `NVreg_RegistryDwords="ForceP2P=0x11;…"` recipe).
    pub on: bool,
    /// The P2P-related settings found (registry keys, then module parameters).
    pub settings: Vec<DriverSetting>,
    /// `RegistryDwords` as loaded, verbatim but bounded; `None` when empty.
    pub registry_dwords: Option<String>,
}

/// The startup diagnostics of `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Environment variables with one of the [`ENV_PREFIXES`], sorted by name.
    pub env: Vec<EnvVar>,
    /// Variables beyond [`MAX_ENV_VARS`], not kept.
    #[serde(default)]
    pub env_omitted: usize,
    /// Kernel and architecture.
    pub uname: Probed<Uname>,
    /// NVIDIA driver version.
    pub driver_version: Probed<String>,
    /// The highest CUDA version the driver supports (`nvidia-smi`'s header).
    pub cuda_version: Probed<String>,
    /// `nvidia-smi topo -m`, verbatim.
    pub topology: Probed<BoundedText>,
    /// The driver's P2P override.
    pub p2p_override: Probed<P2pOverride>,
}

/// What one source gave: its output, or why there is none.
pub type RawText = Result<String, ProbeError>;

/// Why a source of the diagnostics (a command, a file) gave no text. Its words go into the
/// record after the source's name (`uname -srm: timed out after 5.0 s`), so they never repeat
/// the source: an I/O error is named by its kind where it has a common one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The command or the file does not exist.
    #[error("not found")]
    NotFound,
    /// The command or the file may not be read.
    #[error("permission denied")]
    PermissionDenied,
    /// The command ran past its timeout and was killed.
    #[error("timed out after {:.1} s", .0.as_secs_f64())]
    TimedOut(std::time::Duration),
    /// The command exited without success.
    #[error("exited with {0}")]
    Exited(std::process::ExitStatus),
    /// Any other failure, in the system's words.
    #[error("{0}")]
    Other(String),
}

/// The raw texts the client gathered; [`Diagnostics::from_inputs`] reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagInputs {
    /// The process environment (every variable; filtering is done here).
    pub env: Vec<(String, String)>,
    /// Output of `uname -srm`.
    pub uname: RawText,
    /// Output of plain `nvidia-smi`.
    pub nvidia_smi: RawText,
    /// `/proc/driver/nvidia/version`.
    pub proc_version: RawText,
    /// Output of `nvidia-smi topo -m`.
    pub topology: RawText,
    /// `/proc/driver/nvidia/params`.
    pub proc_params: RawText,
    /// `/sys/module/nvidia/parameters/NVreg_RegistryDwords`.
    pub sys_registry_dwords: RawText,
}

impl Diagnostics {
    /// The record for what the client gathered; a source that failed gives a missing fact.
    pub fn from_inputs(i: DiagInputs) -> Diagnostics {
        let (env, env_omitted) = diagnostic_env(i.env);
        let smi = i.nvidia_smi.as_deref().map(parse_smi_header);
        let driver_version = match (&smi, &i.proc_version) {
            (
                Ok(SmiHeader {
                    driver: Some(d), ..
                }),
                _,
            ) => Probed::found(d.clone(), source::NVIDIA_SMI),
            (_, Ok(text)) => match parse_proc_driver_version(text) {
                Some(v) => Probed::found(v, source::PROC_VERSION),
                None => Probed::missing(format!("no version in {}", source::PROC_VERSION)),
            },
            (smi, Err(proc)) => Probed::missing(format!(
                "{}; {}: {proc}",
                smi_reason(smi, "driver"),
                source::PROC_VERSION
            )),
        };
        let cuda_version = match &smi {
            Ok(SmiHeader { cuda: Some(c), .. }) => Probed::found(c.clone(), source::NVIDIA_SMI),
            other => Probed::missing(smi_reason(other, "CUDA")),
        };
        Diagnostics {
            env,
            env_omitted,
            uname: match &i.uname {
                Ok(text) => match parse_uname(text) {
                    Some(u) => Probed::found(u, source::UNAME),
                    None => Probed::missing(format!("unexpected `{}` output", source::UNAME)),
                },
                Err(e) => Probed::missing(format!("{}: {e}", source::UNAME)),
            },
            driver_version,
            cuda_version,
            topology: match &i.topology {
                Ok(t) if !t.trim().is_empty() => {
                    Probed::found(bounded_text(t, MAX_TOPOLOGY_BYTES), source::TOPOLOGY)
                }
                Ok(_) => Probed::missing(format!("`{}` printed nothing", source::TOPOLOGY)),
                Err(e) => Probed::missing(format!("{}: {e}", source::TOPOLOGY)),
            },
            p2p_override: p2p_override(&i.proc_params, &i.sys_registry_dwords),
        }
    }
}

/// Why `nvidia-smi`'s header gave no `what` version.
fn smi_reason(smi: &Result<SmiHeader, &ProbeError>, what: &str) -> String {
    match smi {
        Ok(_) => format!("no {what} version in `{}` output", source::NVIDIA_SMI),
        Err(e) => format!("{}: {e}", source::NVIDIA_SMI),
    }
}

/// The P2P override from the loaded parameters (`/proc`), else from sysfs; which source it was
/// is the fact's `source`.
fn p2p_override(proc_params: &RawText, sys: &RawText) -> Probed<P2pOverride> {
    match (proc_params, sys) {
        (Ok(text), _) => Probed::found(parse_nvidia_params(text), source::PROC_PARAMS),
        (Err(_), Ok(value)) => Probed::found(
            p2p_from_registry_dwords(value, Vec::new()),
            source::SYS_REGISTRY_DWORDS,
        ),
        (Err(p), Err(s)) => Probed::missing(format!(
            "{}: {p}; {}: {s}",
            source::PROC_PARAMS,
            source::SYS_REGISTRY_DWORDS
        )),
    }
}

/// The variables with one of the [`ENV_PREFIXES`], sorted by name, values redacted and bounded;
/// and how many were left out beyond [`MAX_ENV_VARS`].
pub fn diagnostic_env(vars: impl IntoIterator<Item = (String, String)>) -> (Vec<EnvVar>, usize) {
    let mut kept: Vec<EnvVar> = vars
        .into_iter()
        .filter(|(name, _)| ENV_PREFIXES.iter().any(|p| name.starts_with(p)))
        .map(|(name, value)| EnvVar {
            value: redact_env_value(&name, &value),
            name: bounded_text(&name, 256).text,
        })
        .collect();
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    let omitted = kept.len().saturating_sub(MAX_ENV_VARS);
    kept.truncate(MAX_ENV_VARS);
    (kept, omitted)
}

/// An environment value as it may be written: wholly [`REDACTED`] when the name is a secret's
/// (`VLLM_API_KEY`) or the value looks like a credential; otherwise through [`redact_text`]
/// (a URL's password, a `--api-key X` inside an arguments variable), and bounded.
pub fn redact_env_value(name: &str, value: &str) -> String {
    if is_secret_name(name) || looks_like_secret(value) {
        return REDACTED.to_owned();
    }
    let b = bounded_text(&redact_text(value, &[]), MAX_ENV_VALUE_BYTES);
    if b.truncated {
        format!("{}…", b.text)
    } else {
        b.text
    }
}

/// Whether a value looks like a credential on its own: a known token prefix (`hf_`, `sk-`,
/// `nvapi-`, `ghp_`, `github_pat_`, `glpat-`, `xox?-`, AWS key ids, a JWT), or one long opaque
/// word mixing upper case, lower case and digits (a random key). UUIDs (`GPU-…`, `MIG-…`) and
/// paths are not secrets: `CUDA_VISIBLE_DEVICES` must stay readable.
pub fn looks_like_secret(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.contains(char::is_whitespace) {
        return false;
    }
    const PREFIXES: [&str; 12] = [
        "hf_",
        "sk-",
        "sk_",
        "nvapi-",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "AKIA",
    ];
    let long_word = v.len() >= 20
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if long_word && PREFIXES.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    if v.starts_with("eyJ") && v.matches('.').count() == 2 {
        return true;
    }
    let opaque = v.len() >= 32
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '=' | '.'));
    let count = |f: fn(&char) -> bool| v.chars().filter(f).count();
    opaque
        && !is_uuid_like(v)
        && count(char::is_ascii_uppercase) >= 3
        && count(char::is_ascii_lowercase) >= 3
        && count(char::is_ascii_digit) >= 3
}

/// `GPU-8d3c…`, `MIG-…` or a bare UUID: hex groups joined by `-`.
fn is_uuid_like(v: &str) -> bool {
    let body = v
        .strip_prefix("GPU-")
        .or_else(|| v.strip_prefix("MIG-"))
        .unwrap_or(v);
    body.contains('-') && body.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// `text` up to `max` bytes (cut at a line end where one is near, else at a character
/// boundary), control characters other than newline and tab replaced by `?`.
pub fn bounded_text(text: &str, max: usize) -> BoundedText {
    let clean: String = text
        .replace("\r\n", "\n")
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            '\r' => '\n',
            c if c.is_control() => '?',
            c => c,
        })
        .collect();
    if clean.len() <= max {
        return BoundedText {
            text: clean,
            truncated: false,
        };
    }
    let mut end = max;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    // A whole last line reads better than half of one, unless that loses most of the text.
    if let Some(nl) = clean[..end].rfind('\n').filter(|&nl| nl >= end / 2) {
        end = nl + 1;
    }
    BoundedText {
        text: clean[..end].to_owned(),
        truncated: true,
    }
}

/// Parses `uname -srm` (`Linux 6.8.0-45-generic x86_64`).
pub fn parse_uname(text: &str) -> Option<Uname> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [system, kernel, arch] = words.as_slice() else {
        return None;
    };
    Some(Uname {
        system: (*system).to_owned(),
        kernel: (*kernel).to_owned(),
        arch: (*arch).to_owned(),
    })
}

/// The versions in `nvidia-smi`'s header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmiHeader {
    /// `Driver Version: 580.95.05`.
    pub driver: Option<String>,
    /// `CUDA Version: 13.0`.
    pub cuda: Option<String>,
}

/// Parses the `Driver Version:` and `CUDA Version:` of plain `nvidia-smi`'s header.
pub fn parse_smi_header(text: &str) -> SmiHeader {
    let field = |label: &str| {
        let i = text.find(label)?;
        let v = text[i + label.len()..].split_whitespace().next()?;
        let v = v.trim_end_matches('|');
        (!v.is_empty()).then(|| v.to_owned())
    };
    SmiHeader {
        driver: field("Driver Version:"),
        cuda: field("CUDA Version:"),
    }
}

/// The driver version in `/proc/driver/nvidia/version` (`NVRM version: NVIDIA UNIX … Kernel
/// Module  580.95.05  …`): the first word of the `NVRM` line made of digits and dots.
pub fn parse_proc_driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|w| {
            w.contains('.')
                && w.starts_with(|c: char| c.is_ascii_digit())
                && w.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(str::to_owned)
}

/// Registry keys that force peer-to-peer copies on.
const P2P_KEYS: [&str; 3] = ["ForceP2P", "RMForceP2PType", "RMPcieP2PType"];
/// Module parameters that go with a P2P override, recorded when present.
const P2P_PARAMS: [&str; 3] = [
    "GrdmaPciTopoCheckOverride",
    "EnableResizableBar",
    "DmaRemapPeerMmio",
];

/// Parses `/proc/driver/nvidia/params` (`Name: value` lines, `RegistryDwords: "…"`).
pub fn parse_nvidia_params(text: &str) -> P2pOverride {
    let mut registry = String::new();
    let mut params = Vec::new();
    for (name, value) in text.lines().filter_map(|l| l.split_once(':')) {
        let (name, value) = (name.trim(), value.trim());
        if name == "RegistryDwords" {
            registry = value.trim_matches('"').to_owned();
        } else if P2P_PARAMS.contains(&name) {
            params.push(DriverSetting {
                name: name.to_owned(),
                value: value.to_owned(),
            });
        }
    }
    p2p_from_registry_dwords(&registry, params)
}

/// The override in a `RegistryDwords` value (`ForceP2P=0x11;RMForceP2PType=1`), with the module
/// parameters read beside it.
pub fn p2p_from_registry_dwords(value: &str, params: Vec<DriverSetting>) -> P2pOverride {
    let value = value.trim().trim_matches('"');
    // sysfs prints an unset string parameter as `(null)`.
    let value = if value == "(null)" { "" } else { value };
    let mut settings: Vec<DriverSetting> = value
        .split([';', ','])
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| P2P_KEYS.iter().any(|p| p.eq_ignore_ascii_case(k)))
        .map(|(k, v)| DriverSetting {
            name: k.to_owned(),
            value: v.to_owned(),
        })
        .collect();
    let on = settings.iter().any(|s| parse_dword(&s.value) != Some(0));
    settings.extend(params);
    let registry = bounded_text(value, MAX_REGISTRY_BYTES).text;
    P2pOverride {
        on,
        settings,
        registry_dwords: (!registry.is_empty()).then_some(registry),
    }
}

/// A registry DWORD: `0x11` (hex) or `17`.
fn parse_dword(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
#[path = "tests/diag.rs"]
mod tests;
