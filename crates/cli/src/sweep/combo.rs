//! One combination of a sweep: its server started from the rendered command (unless the sweep
//! is a list of running servers), waited for, measured by this binary's own `run` into
//! `SWEEP/<combination>/`, then stopped and its port waited for. What became of it is its
//! record in `sweep.json`: measured, or why not, with the tail of the server's log.

use crate::sweep::server::{Launched, Ready, Server, free_port, wait_port_free, wait_ready};
use crate::sweep::slurm::SlurmJob;
use llmib_core::{
    ComboRecord, ComboState, Launcher, SweepFile, SweepMember, log_tail, now_rfc3339, render,
    stored_command, wants_port,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// Lines of the server's log a failed combination keeps.
const LOG_TAIL_LINES: usize = 20;

/// How long a stopped server's port may stay busy before the sweep says so.
const PORT_FREE_LIMIT: Duration = Duration::from_secs(30);

/// Measures combination `i` of `file` in `dir`: `serve` is the server command template with
/// its secrets (`None`: the combination is a running server's URL), `run_args` the user's run
/// flags with theirs. Never fails: what went wrong is the record's state and reason.
pub async fn measure(
    dir: &Path,
    file: &SweepFile,
    i: usize,
    serve: Option<&str>,
    run_args: &[String],
    stop: &AtomicBool,
) -> ComboRecord {
    let mut rec = file.combinations[i].clone();
    rec.reason = None;
    rec.log_tail.clear();
    rec.run_exit_code = None;
    rec.started_at = Some(now_rfc3339());
    match serve {
        None => {
            let url = rec.params.get("url").cloned().unwrap_or_default();
            rec.url = Some(url.clone());
            let out = measure_at(dir, &member(file, &rec), &url, None, run_args, stop).await;
            classify(&mut rec, out, None);
        }
        Some(tmpl) => launched(dir, file, &mut rec, tmpl, run_args, stop).await,
    }
    rec.finished_at = Some(now_rfc3339());
    rec
}

/// A combination whose server the sweep starts and stops.
async fn launched(
    dir: &Path,
    file: &SweepFile,
    rec: &mut ComboRecord,
    tmpl: &str,
    run_args: &[String],
    stop: &AtomicBool,
) {
    let url_t = file.spec.url.clone().unwrap_or_default();
    let port = match (wants_port(tmpl) || wants_port(&url_t)).then(free_port) {
        Some(Err(e)) => return failed(rec, ComboState::FailedToStart, format!("{e:#}")),
        Some(Ok(p)) => Some(p),
        None => None,
    };
    // A Slurm job's command has no {host} (refused before the sweep started).
    let cmd = match render(tmpl, &rec.params, port, Some(LOCAL_HOST)) {
        Ok(c) => c,
        Err(e) => return failed(rec, ComboState::FailedToStart, e.to_string()),
    };
    rec.command = Some(stored_command(&cmd));
    let log_rel = format!("logs/{}.log", rec.name);
    let log = dir.join(&log_rel);
    rec.log = Some(log_rel);
    let started = Instant::now();
    let mut server = match start_server(&file.spec.launcher, &cmd, &log, &rec.name).await {
        Ok(s) => s,
        Err(e) => return failed(rec, ComboState::FailedToStart, format!("{e:#}")),
    };
    let limit = Duration::from_secs_f64(file.spec.start_timeout_s);
    let cancelled = || stop.load(Ordering::SeqCst);
    let host = match host_of(&server, limit, &cancelled).await {
        Ready::Answered(h) => Some(h),
        other => not_ready(rec, other, "its Slurm job ran"),
    };
    let url = match host.map(|h| render(&url_t, &rec.params, port, Some(&h))) {
        Some(Ok(u)) => Some(u),
        Some(Err(e)) => not_ready::<(), _>(rec, Ready::Exited(e.to_string()), "its URL was known"),
        None => None,
    };
    if let Some(url) = &url {
        rec.url = Some(url.clone());
        let left = limit.saturating_sub(started.elapsed());
        match wait_ready(&mut server, url, left, &cancelled).await {
            Ready::Answered(_) => {
                rec.start_s = Some(started.elapsed().as_secs_f64());
                let m = member(file, rec);
                let out = measure_at(dir, &m, url, Some(&cmd), run_args, stop).await;
                let died = server.exited().await;
                classify(rec, out, died);
            }
            other => {
                not_ready::<_, ()>(rec, other, &format!("it answered at {url}"));
            }
        }
    }
    let grace = Duration::from_secs_f64(file.spec.stop_grace_s);
    let secrets = secrets_of(&cmd, run_args);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    stop_server(rec, &mut server, grace, url.as_deref(), (&log, &secrets)).await;
}

/// The secrets a server's log may print again (SGLang logs its whole `server_args`): the
/// values of the command's and the run flags' secret-named flags, and `OPENAI_API_KEY`.
fn secrets_of(cmd: &str, run_args: &[String]) -> Vec<String> {
    let words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    let mut secrets = llmib_core::secret_values(&words);
    secrets.extend(llmib_core::secret_values(run_args));
    secrets.extend(
        std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty()),
    );
    secrets
}

/// The local host's address, for a local server's `{host}`.
const LOCAL_HOST: &str = "127.0.0.1";

/// Starts the server as the sweep's launcher says.
async fn start_server(
    launcher: &Launcher,
    cmd: &str,
    log: &Path,
    name: &str,
) -> anyhow::Result<Launched> {
    match launcher {
        Launcher::Local => Server::start(cmd, log).map(Launched::Local),
        Launcher::Slurm { sbatch_args } => SlurmJob::submit(cmd, log, name, sbatch_args)
            .await
            .map(Launched::Slurm),
    }
}

/// The address the server runs at: this machine's, or the Slurm job's node once it runs.
async fn host_of(
    server: &Launched,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Ready<String> {
    match server {
        Launched::Local(_) => Ready::Answered(LOCAL_HOST.to_string()),
        Launched::Slurm(job) => job.wait_running(limit, cancelled).await,
    }
}

/// Records why a server was not ready (`before`: what did not happen); `None`, the value it
/// did not get.
fn not_ready<T, U>(rec: &mut ComboRecord, r: Ready<T>, before: &str) -> Option<U> {
    match r {
        Ready::Answered(_) => {}
        Ready::Exited(words) => failed(
            rec,
            ComboState::FailedToStart,
            format!("{words} before {before}"),
        ),
        Ready::TimedOut => failed(
            rec,
            ComboState::FailedToStart,
            format!("the server was not ready ({before}) within the start limit (--start-timeout)"),
        ),
        Ready::Cancelled => failed(
            rec,
            ComboState::Interrupted,
            "stopped before the server answered".into(),
        ),
    }
    None
}

/// Stops the server, waits until its port is free, and keeps its log's tail (secrets
/// redacted) where the combination did not end measured (or ended with a word to say).
async fn stop_server(
    rec: &mut ComboRecord,
    server: &mut Launched,
    grace: Duration,
    url: Option<&str>,
    (log, secrets): (&Path, &[&str]),
) {
    let t = Instant::now();
    server.stop(grace).await;
    let busy = match url {
        Some(u) => !wait_port_free(u, PORT_FREE_LIMIT).await,
        None => false,
    };
    if busy {
        let note = format!(
            "its port was still busy {} s after the stop",
            PORT_FREE_LIMIT.as_secs()
        );
        rec.reason = Some(match rec.reason.take() {
            Some(r) => format!("{r}; {note}"),
            None => note,
        });
    }
    rec.stop_s = Some(t.elapsed().as_secs_f64());
    if rec.state != ComboState::Measured || rec.reason.is_some() {
        rec.log_tail = std::fs::read_to_string(log)
            .map(|t| log_tail(&t, LOG_TAIL_LINES, secrets))
            .unwrap_or_default();
    }
}

/// A combination that ended before its run.
fn failed(rec: &mut ComboRecord, state: ComboState, why: String) {
    rec.state = state;
    rec.reason = Some(why);
}

/// What the run of one combination ended with.
struct RunOutcome {
    /// Its exit code (`None`: killed by a signal, or never started).
    code: Option<i32>,
    /// The last line it printed on stderr (its error, where it failed).
    last_err: Option<String>,
}

/// Sets the record's state from its run's end and whether the server died meanwhile.
fn classify(rec: &mut ComboRecord, out: RunOutcome, died: Option<String>) {
    rec.run_exit_code = out.code;
    let (state, reason) = match (died, out.code) {
        (Some(words), _) => (
            ComboState::ServerDied,
            Some(format!("{words} while it was measured")),
        ),
        (None, Some(0)) => (ComboState::Measured, None),
        (None, Some(4)) => (
            ComboState::Measured,
            Some("every cell it measured failed".into()),
        ),
        (None, Some(5)) => (
            ComboState::Measured,
            Some("no cell was measured (each Over capacity or Not run)".into()),
        ),
        (None, Some(6)) => (ComboState::Measured, Some("its upload failed".into())),
        (None, Some(3)) => (
            ComboState::ServerDied,
            Some("the server stopped answering".into()),
        ),
        (None, Some(130)) => (ComboState::Interrupted, Some("stopped by Ctrl-C".into())),
        (None, code) => (
            ComboState::RunFailed,
            Some(
                out.last_err
                    .unwrap_or_else(|| format!("the run ended with exit code {code:?}")),
            ),
        ),
    };
    rec.state = state;
    rec.reason = reason;
}

/// What the combination's run records of its sweep (`run.json`'s `sweep`).
fn member(file: &SweepFile, rec: &ComboRecord) -> SweepMember {
    SweepMember {
        id: file.id.clone(),
        combination: rec.name.clone(),
        params: rec.params.clone(),
    }
}

/// Runs `run` on `url` into `dir/<combination>`, its stdout on this terminal (its dashboard or lines),
/// its stderr passed through with the last line kept. A stopped sweep sends the run one SIGINT
/// (unless the terminal's Ctrl-C reached it already), and the run saves what it measured.
async fn measure_at(
    dir: &Path,
    member: &SweepMember,
    url: &str,
    cmd: Option<&str>,
    run_args: &[String],
    stop: &AtomicBool,
) -> RunOutcome {
    let exe = own_binary();
    let mut c = tokio::process::Command::new(exe);
    c.arg("run")
        .arg("--url")
        .arg(url)
        .arg("--output")
        .arg(dir.join(&member.combination))
        .arg("--force");
    // Serialising a struct of strings cannot fail; an empty value would be refused by the run.
    c.arg("--sweep-member")
        .arg(serde_json::to_string(member).unwrap_or_default());
    if let Some(cmd) = cmd {
        c.arg("--launch-command").arg(cmd);
    }
    c.args(run_args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            return RunOutcome {
                code: None,
                last_err: Some(format!("cannot start the run: {e}")),
            };
        }
    };
    let last = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    if let Some(err) = child.stderr.take() {
        let last = std::sync::Arc::clone(&last);
        tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                errln!("{l}");
                if !l.trim().is_empty()
                    && let Ok(mut g) = last.lock()
                {
                    *g = Some(l);
                }
            }
        });
    }
    let code = wait_run(&mut child, stop).await;
    // The stderr task ends with the child's pipe: give it a moment to take the last line.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let last_err = last.lock().ok().and_then(|g| g.clone());
    RunOutcome { code, last_err }
}

/// This binary's path, for the runs. Linux names a binary replaced on disk while it runs (a
/// rebuild) `PATH (deleted)`: the path itself then holds the new build, which takes the same
/// flags.
fn own_binary() -> std::path::PathBuf {
    let Ok(exe) = std::env::current_exe() else {
        return "llm-inference-bench".into();
    };
    match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(path) => path.into(),
        None => exe,
    }
}

/// Waits for the run; once the sweep is stopped, the run gets a SIGINT after a second unless
/// it has ended by then (a terminal's Ctrl-C reaches it directly, and a second SIGINT would
/// make it leave without its reports).
async fn wait_run(child: &mut tokio::process::Child, stop: &AtomicBool) -> Option<i32> {
    let mut stop_seen: Option<Instant> = None;
    let mut signalled = false;
    loop {
        tokio::select! {
            status = child.wait() => return status.ok().and_then(|s| s.code()),
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        if !stop.load(Ordering::SeqCst) || signalled {
            continue;
        }
        let seen = *stop_seen.get_or_insert_with(Instant::now);
        if seen.elapsed() >= Duration::from_secs(1)
            && let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok())
        {
            let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
            signalled = true;
        }
    }
}
