//! A sweep's server as a Slurm job: submitted with `sbatch --wrap` (its output in the sweep's
//! log, which must be on a file system the node shares), waited for until it runs, reached at
//! its node's address (`scontrol show node`'s `NodeAddr`), and cancelled with SIGTERM, then for
//! good after the grace, until the queue no longer holds it.

use anyhow::{Context as _, Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::process::Command;

/// A submitted job.
pub struct SlurmJob {
    id: String,
    /// Whether it has been cancelled and left the queue.
    gone: bool,
}

/// Where a job is in the queue.
enum JobState {
    /// Waiting for resources.
    Pending,
    /// Running on this node.
    Running(String),
    /// No longer running: ended, failed or cancelled (Slurm's word, where the queue still
    /// says it).
    Ended(String),
}

/// Runs a Slurm command and returns its stdout; its stderr is the error.
async fn slurm(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .await
        .with_context(|| format!("cannot run {program} (is Slurm's client installed?)"))?;
    if !out.status.success() {
        bail!(
            "{program} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl SlurmJob {
    /// Submits `command` as a job named after the combination, its output in `log`.
    pub async fn submit(command: &str, log: &Path, name: &str, extra: &[String]) -> Result<Self> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
        }
        let job_name = format!("--job-name=llmib-sweep-{name}");
        let output = format!("--output={}", log.display());
        let mut args: Vec<&str> = vec!["--parsable", &job_name, &output];
        args.extend(extra.iter().map(String::as_str));
        args.extend(["--wrap", command]);
        let out = slurm("sbatch", &args).await?;
        // `--parsable` prints `ID` or `ID;cluster`.
        let id = out.split(';').next().unwrap_or("").trim().to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
            bail!("sbatch printed no job id: {out:?}");
        }
        Ok(SlurmJob { id, gone: false })
    }

    /// The job's state in the queue.
    async fn state(&self) -> JobState {
        match slurm("squeue", &["-h", "-j", &self.id, "-o", "%T|%N"]).await {
            Ok(line) if line.is_empty() => JobState::Ended("it left the queue".into()),
            Ok(line) => {
                let (state, node) = line.split_once('|').unwrap_or((&line, ""));
                match state {
                    "RUNNING" if !node.is_empty() => JobState::Running(node.to_string()),
                    "PENDING" | "CONFIGURING" | "RUNNING" => JobState::Pending,
                    other => JobState::Ended(other.to_lowercase()),
                }
            }
            // An id the controller no longer knows has ended long since.
            Err(e) => JobState::Ended(format!("{e:#}")),
        }
    }

    /// Waits until the job runs, within `limit`, and returns its node's address.
    pub async fn wait_running(
        &self,
        limit: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> crate::sweep::ready::Ready<String> {
        use crate::sweep::ready::Ready;
        let started = Instant::now();
        loop {
            if cancelled() {
                return Ready::Cancelled;
            }
            match self.state().await {
                JobState::Running(node) => return Ready::Answered(node_addr(&node).await),
                JobState::Ended(words) => {
                    return Ready::Exited(format!("the Slurm job {} ended ({words})", self.id));
                }
                JobState::Pending if started.elapsed() >= limit => return Ready::TimedOut,
                JobState::Pending => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }

    /// Whether the job has ended, in words (`None`: it runs or waits).
    pub async fn exited(&self) -> Option<String> {
        match self.state().await {
            JobState::Ended(words) => Some(format!("the Slurm job {} ended ({words})", self.id)),
            _ => None,
        }
    }

    /// Cancels the job: SIGTERM to every step and the batch shell, then `scancel` for good
    /// after `grace`; returns once the queue no longer holds it (at most 30 s more).
    pub async fn stop(&mut self, grace: Duration) {
        if self.gone {
            return;
        }
        let _ = slurm("scancel", &["--signal=TERM", "--full", &self.id]).await;
        if !self.left_queue(grace).await {
            let _ = slurm("scancel", &[&self.id]).await;
            self.left_queue(Duration::from_secs(30)).await;
        }
        self.gone = true;
    }

    /// Polls the queue until the job has left it, within `limit`.
    async fn left_queue(&self, limit: Duration) -> bool {
        let started = Instant::now();
        loop {
            if matches!(self.state().await, JobState::Ended(_)) {
                return true;
            }
            if started.elapsed() >= limit {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for SlurmJob {
    /// A job the sweep did not stop (an error in between) is cancelled, not left holding a
    /// node: one `scancel`, not waited for.
    fn drop(&mut self) {
        if !self.gone {
            let _ = std::process::Command::new("scancel").arg(&self.id).status();
        }
    }
}

/// A node's address (`NodeAddr`), else its name.
async fn node_addr(node: &str) -> String {
    // A job on several nodes is reached at its first (`node[1-2]` lists are for multi-node
    // servers, whose head the user names in --url instead).
    let first = node.split(',').next().unwrap_or(node);
    match slurm("scontrol", &["show", "node", first]).await {
        Ok(text) => text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("NodeAddr="))
            .map_or_else(|| first.to_string(), str::to_string),
        Err(_) => first.to_string(),
    }
}
