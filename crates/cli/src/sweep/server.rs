//! A sweep's server: started from its rendered command in a process group of its own (so that
//! stopping it reaches every process its shell started, and a Ctrl-C on the terminal reaches
//! the sweep, which stops it in order), its output in a log inside the sweep directory; waited
//! for until it answers; stopped with SIGTERM, then SIGKILL after a grace; and its port waited
//! for until it is free, so the next combination can take it.

pub use crate::sweep::ready::Ready;
use crate::sweep::slurm::SlurmJob;
use anyhow::{Context as _, Result};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// A started server.
pub struct Server {
    child: Child,
    /// Its process group (the shell's pid).
    pgid: Option<Pid>,
}

/// A started server, wherever it runs.
pub enum Launched {
    /// A local process group.
    Local(Server),
    /// A Slurm job.
    Slurm(SlurmJob),
}

impl Launched {
    /// Whether it has ended, in words (`None`: it runs).
    pub async fn exited(&mut self) -> Option<String> {
        match self {
            Launched::Local(s) => s.exited(),
            Launched::Slurm(j) => j.exited().await,
        }
    }

    /// Stops it: SIGTERM, then for good after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        match self {
            Launched::Local(s) => s.stop(grace).await,
            Launched::Slurm(j) => j.stop(grace).await,
        }
    }
}

impl Server {
    /// Starts `command` with `sh -c`, its stdout and stderr appended to `log`.
    pub fn start(command: &str, log: &Path) -> Result<Server> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("cannot open the server's log {}", log.display()))?;
        let err = out.try_clone().context("the server's log")?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .context("cannot run sh to start the server")?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Server { child, pgid })
    }

    /// Whether it has exited, in words (`None`: it runs).
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("the server exited ({status})")),
            Ok(None) => None,
            Err(e) => Some(format!("the server's state cannot be read: {e}")),
        }
    }
}

/// Polls `url`'s `/v1/models` until it answers (200, or 401/403: it runs and wants a key), the
/// server exits, `limit` passes or `cancelled` says the sweep stops; `Answered` holds how long
/// that took.
pub async fn wait_ready(
    server: &mut Launched,
    url: &str,
    limit: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Ready<Duration> {
    let started = Instant::now();
    // The run's own client (its TLS provider installed); no key: 401 counts as up.
    let opts = llmib_client::HttpOptions {
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let Ok(client) = llmib_client::build_client(&opts) else {
        return Ready::Exited("the HTTP client cannot be built".into());
    };
    let models = format!("{}/v1/models", url.trim_end_matches('/'));
    // A Slurm controller is asked less often than a local process is looked at.
    let pause = match server {
        Launched::Local(_) => Duration::from_millis(100),
        Launched::Slurm(_) => Duration::from_secs(1),
    };
    loop {
        if cancelled() {
            return Ready::Cancelled;
        }
        if let Some(words) = server.exited().await {
            return Ready::Exited(words);
        }
        let ask = client.get(&models).timeout(Duration::from_secs(2)).send();
        if let Ok(r) = ask.await
            && matches!(r.status().as_u16(), 200 | 401 | 403)
        {
            return Ready::Answered(started.elapsed());
        }
        if started.elapsed() >= limit {
            return Ready::TimedOut;
        }
        tokio::time::sleep(pause).await;
    }
}

impl Server {
    /// Stops the whole process group: SIGTERM, SIGKILL after `grace`; returns once the shell
    /// has been reaped.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(g) = self.pgid {
            // ESRCH: every process of the group is gone already.
            let _ = killpg(g, Signal::SIGTERM);
        }
        let waited = tokio::time::timeout(grace, self.child.wait()).await;
        if let Some(g) = self.pgid {
            // Also after the shell ended: a server it started may have outlived it.
            let _ = killpg(g, Signal::SIGKILL);
        }
        if waited.is_err() {
            let _ = self.child.wait().await;
        }
        self.pgid = None;
    }
}

impl Drop for Server {
    /// A server the sweep did not stop (an error or a panic in between) is killed with its
    /// whole group: `kill_on_drop` reaches only the shell, not the server it started.
    fn drop(&mut self) {
        if let Some(g) = self.pgid.take() {
            let _ = killpg(g, Signal::SIGKILL);
        }
    }
}

/// A free port on the loopback interface, for `{port}`: the kernel picks one, and it is let go
/// at once for the server to take.
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("no free port on 127.0.0.1")?;
    Ok(l.local_addr().context("the free port's address")?.port())
}

/// Waits until nothing accepts connections at `url`'s host and port (at most `limit`): the next
/// combination may start a server on it. Returns whether it is free.
pub async fn wait_port_free(url: &str, limit: Duration) -> bool {
    let Some(addr) = host_port(url) else {
        return true;
    };
    let started = Instant::now();
    loop {
        let connect = tokio::net::TcpStream::connect(&addr);
        match tokio::time::timeout(Duration::from_millis(500), connect).await {
            Ok(Err(_)) => return true,
            _ if started.elapsed() >= limit => return false,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `host:port` of an http(s) URL (the scheme's port where none is written).
fn host_port(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let authority = authority.rsplit('@').next()?;
    if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        return Some(authority.to_string());
    }
    let port = if scheme == "https" { 443 } else { 80 };
    Some(format!("{authority}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn a_urls_host_and_port() {
        assert_eq!(
            host_port("http://127.0.0.1:8123/v1").as_deref(),
            Some("127.0.0.1:8123")
        );
        assert_eq!(host_port("https://h").as_deref(), Some("h:443"));
        assert_eq!(host_port("http://u:p@h:1").as_deref(), Some("h:1"));
        assert_eq!(host_port("nope"), None);
    }
}
