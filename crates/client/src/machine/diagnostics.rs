//! Gathering the startup diagnostics of this machine (`llmib_core::Diagnostics`): the
//! environment, `uname`, `nvidia-smi` and its topology matrix, and the NVIDIA module's
//! parameters. Only the raw texts are collected here; `llmib_core` parses them, so every
//! format is tested on recorded outputs.
//!
//! Each command runs with a short timeout and is killed past it (a hung driver makes
//! `nvidia-smi` block for minutes), and the whole gathering runs on a blocking thread so the
//! async runtime never waits on a process. A missing tool or file is a reason in the record,
//! never an error: diagnostics must not stop a run.

use llmib_core::{DiagInputs, Diagnostics, ProbeError, RawText, diag_source};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// At most this much of a command's output or a file is read.
const MAX_READ_BYTES: u64 = 1024 * 1024;

/// The diagnostics of this machine. Call it only when the server runs here: they describe the
/// machine the tool runs on.
pub async fn gather_diagnostics() -> Diagnostics {
    match tokio::task::spawn_blocking(gather_inputs).await {
        Ok(inputs) => Diagnostics::from_inputs(inputs),
        // The thread panicked (it should not): an empty record that says why.
        Err(e) => Diagnostics::from_inputs(unavailable(&format!("gathering failed: {e}"))),
    }
}

/// Every raw text. The commands run at once, each on a thread of its own: `nvidia-smi` takes a
/// few hundred milliseconds on a GPU server, twice, and the run's first request waits for
/// these facts (issue 44: one after another they were most of the time to the first request).
fn gather_inputs() -> DiagInputs {
    let (uname, nvidia_smi, topology) = std::thread::scope(|s| {
        let uname = s.spawn(|| run_command("uname", &["-srm"], COMMAND_TIMEOUT));
        let smi = s.spawn(|| run_command("nvidia-smi", &[], COMMAND_TIMEOUT));
        let topo = s.spawn(|| run_command("nvidia-smi", &["topo", "-m"], COMMAND_TIMEOUT));
        (joined(uname), joined(smi), joined(topo))
    });
    DiagInputs {
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        uname,
        nvidia_smi,
        proc_version: read_file(diag_source::PROC_VERSION),
        topology,
        proc_params: read_file(diag_source::PROC_PARAMS),
        sys_registry_dwords: read_file(diag_source::SYS_REGISTRY_DWORDS),
    }
}

/// A command thread's text; a thread that panicked (it should not) is its source's failure,
/// said, never a missing fact.
fn joined(h: std::thread::ScopedJoinHandle<'_, RawText>) -> RawText {
    h.join().unwrap_or_else(|_| {
        Err(ProbeError::Other(
            "the command's thread panicked".to_owned(),
        ))
    })
}

/// Inputs where every source failed for `reason`.
fn unavailable(reason: &str) -> DiagInputs {
    let r = || Err(ProbeError::Other(reason.to_owned()));
    DiagInputs {
        env: Vec::new(),
        uname: r(),
        nvidia_smi: r(),
        proc_version: r(),
        topology: r(),
        proc_params: r(),
        sys_registry_dwords: r(),
    }
}

/// A file's text (bounded), or why it could not be read.
fn read_file(path: &str) -> RawText {
    let file = std::fs::File::open(path).map_err(|e| describe_io(&e))?;
    let mut buf = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| describe_io(&e))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// `not found`, `permission denied`, … (the error's kind: its text may repeat the path).
fn describe_io(e: &std::io::Error) -> ProbeError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ProbeError::NotFound,
        std::io::ErrorKind::PermissionDenied => ProbeError::PermissionDenied,
        _ => ProbeError::Other(e.to_string()),
    }
}

/// Runs `program args` for at most `timeout`: its stdout (bounded) when it exits
/// with success, else why not. Stdout is read on a thread of its own, so a command that prints
/// more than a pipe holds cannot block waiting for us.
fn run_command(program: &str, args: &[&str], timeout: Duration) -> RawText {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| describe_io(&e))?;
    let reader = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.take(MAX_READ_BYTES).read_to_end(&mut buf);
            buf
        })
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProbeError::TimedOut(timeout));
            }
            Err(e) => return Err(ProbeError::Other(e.to_string())),
        }
    };
    let out = reader
        .and_then(|r| r.join().ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if status.success() {
        Ok(out)
    } else {
        Err(ProbeError::Exited(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_report_output_failure_and_absence() {
        let t = COMMAND_TIMEOUT;
        assert_eq!(run_command("echo", &["GPU0"], t).as_deref(), Ok("GPU0\n"));
        assert!(
            run_command("false", &[], t).is_err_and(|e| e.to_string().starts_with("exited with"))
        );
        assert_eq!(
            run_command("llmib-no-such-tool", &[], t),
            Err(ProbeError::NotFound)
        );
        assert_eq!(read_file("/llmib/no/such/file"), Err(ProbeError::NotFound));
    }

    #[test]
    fn a_hung_command_is_killed_at_the_timeout() {
        let start = Instant::now();
        let t = Duration::from_millis(200);
        assert_eq!(
            run_command("sleep", &["30"], t).map_err(|e| e.to_string()),
            Err("timed out after 0.2 s".to_owned())
        );
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn gathering_this_machine_never_fails() {
        let d = gather_diagnostics().await;
        // Every fact has a value or a reason, whatever this machine has.
        for (has, reason) in [
            (d.uname.value.is_some(), d.uname.reason.is_some()),
            (
                d.driver_version.value.is_some(),
                d.driver_version.reason.is_some(),
            ),
            (d.topology.value.is_some(), d.topology.reason.is_some()),
            (
                d.p2p_override.value.is_some(),
                d.p2p_override.reason.is_some(),
            ),
        ] {
            assert!(has != reason);
        }
        assert!(d.env.iter().all(|v| {
            llmib_core::ENV_PREFIXES
                .iter()
                .any(|p| v.name.starts_with(p))
        }));
    }
}
