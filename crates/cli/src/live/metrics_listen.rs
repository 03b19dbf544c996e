//! `run --metrics-listen ADDR`: the run's live figures as Prometheus text at
//! `http://ADDR/metrics` while it runs, for the Grafana that already watches the servers
//! (`deploy/grafana/llm-inference-bench.json`): the cell in progress, cells done and planned,
//! request errors, the cell's output tokens and tok/s, and its TTFT and TPOT histograms.
//!
//! The listener is bound before the run starts (an address in use is an error then, not an
//! hour in) and closed when the run ends, so a scraper sees the target go down with the run:
//! once the answer to a scrape that read every cell done is written out, or a second after
//! the reports are written.
//! It is fed like the displays: a [`Progress`] sink keeps the last cell's facts, and the live
//! atomics the cell publishes are read at each scrape. Nothing here feeds a figure: the rows
//! come from the records. The text is rendered by [`render`], a function of a snapshot, so
//! what a scrape says is tested without sockets.

use anyhow::{Context, Result};
use llmib_client::{LatencySnapshot, LiveWindow, OpenLoopLive, Progress, ProgressEvent};
use llmib_core::{CellKey, Phase};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The cell a scrape describes.
#[derive(Debug, Clone, PartialEq)]
pub struct CellLabels {
    /// `decode`, `rate`, … (as cells.jsonl spells it).
    pub phase: String,
    /// The context label (`8K`).
    pub context: String,
    /// N (0 for a rate cell).
    pub concurrency: u32,
    /// A rate cell's request rate, requests per second.
    pub rate: Option<f64>,
}

/// What the sink knows between scrapes.
#[derive(Default)]
struct State {
    planned: u64,
    done: u64,
    errors: u64,
    cell: Option<CellLabels>,
    window: Option<Arc<LiveWindow>>,
    open: Option<Arc<OpenLoopLive>>,
    /// The cell's tokens at the previous scrape, and when: tok/s is measured between scrapes.
    last: Option<(Instant, u64)>,
    /// Whether a scrape's answer that reads every planned cell done (the run's last figures)
    /// has been written out to its scraper.
    read_at_end: bool,
}

/// One scrape's figures, read at once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// Cells in the plan.
    pub planned: u64,
    /// Cells with a row (measured, failed or not run).
    pub done: u64,
    /// Request errors the run reported so far.
    pub errors: u64,
    /// The cell in progress.
    pub cell: Option<CellLabels>,
    /// The cell's output tokens so far (a decode window's streams; `None`: a cell that
    /// publishes no token count).
    pub tokens: Option<u64>,
    /// Output tokens per second since the previous scrape.
    pub tok_per_s: Option<f64>,
    /// The cell's requests ended so far.
    pub requests_ended: u64,
    /// The cell's TTFT histogram.
    pub ttft: Option<LatencySnapshot>,
    /// The cell's TPOT histogram.
    pub tpot: Option<LatencySnapshot>,
}

/// The sink the run's progress goes to (beside the display).
#[derive(Clone, Default)]
pub struct MetricsSink(Arc<Mutex<State>>);

fn labels(key: &CellKey, label: &str) -> CellLabels {
    let phase = serde_json::to_value(key.phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    CellLabels {
        phase,
        context: label.to_string(),
        concurrency: if key.phase == Phase::Rate {
            0
        } else {
            key.concurrency
        },
        rate: key.request_rate(),
    }
}

impl Progress for MetricsSink {
    fn event(&self, e: ProgressEvent) {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match e {
            ProgressEvent::CellStarted { total, cell, .. } => {
                s.planned = total as u64;
                s.cell = Some(labels(&cell.key, &cell.label));
                s.window = None;
                s.open = None;
                s.last = None;
            }
            ProgressEvent::WindowLive(w) => {
                s.window = Some(w);
                s.last = None;
            }
            ProgressEvent::OpenLoopLive(o) => s.open = Some(o),
            ProgressEvent::CellDone(_) => s.done += 1,
            ProgressEvent::RequestError { .. } => s.errors += 1,
            _ => {}
        }
    }
}

impl MetricsSink {
    /// A scrape's answer rendered from `snap` has been written out: once it carried every
    /// planned cell done, the run's end need not wait any longer. Marked after the write, not at
    /// the snapshot, since the endpoint closing between the two would lose the very answer
    /// the wait was for (a scraper's last read would then be one cell short).
    fn answered(&self, snap: &Snapshot) {
        if snap.planned > 0 && snap.done >= snap.planned {
            let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            s.read_at_end = true;
        }
    }

    /// The figures now (and the tok/s since the previous call).
    pub fn snapshot(&self) -> Snapshot {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let tokens = s.window.as_ref().map(|w| w.tokens());
        let tok_per_s = match (tokens, s.last) {
            (Some(t), Some((at, before))) => {
                let dt = now.duration_since(at).as_secs_f64();
                (dt > 0.0).then(|| t.saturating_sub(before) as f64 / dt)
            }
            _ => None,
        };
        s.last = tokens.map(|t| (now, t));
        let latency = match (&s.window, &s.open) {
            (Some(w), _) => Some(&w.latency),
            (None, Some(o)) => Some(&o.latency),
            _ => None,
        };
        let ended = match (&s.window, &s.open) {
            (Some(w), _) => w.ended().0,
            (None, Some(o)) => o.ended.load(std::sync::atomic::Ordering::Relaxed),
            _ => 0,
        };
        Snapshot {
            planned: s.planned,
            done: s.done,
            errors: s.errors,
            cell: s.cell.clone(),
            tokens,
            tok_per_s,
            requests_ended: ended,
            ttft: latency.map(|l| l.ttft.snapshot()),
            tpot: latency.map(|l| l.tpot.snapshot()),
        }
    }
}

/// Escapes a label value as Prometheus text wants it.
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
}

fn histogram(out: &mut String, name: &str, help: &str, h: &LatencySnapshot) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (le, n) in &h.buckets {
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {n}");
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", h.sum_s, h.count);
}

/// The Prometheus text of a snapshot.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    metric(
        &mut out,
        "llmib_cells_planned",
        "gauge",
        "Cells in the run's plan.",
        s.planned,
    );
    metric(
        &mut out,
        "llmib_cells_done",
        "counter",
        "Cells with a row.",
        s.done,
    );
    let help = "Request errors the run reported.";
    metric(&mut out, "llmib_request_errors", "counter", help, s.errors);
    if let Some(c) = &s.cell {
        cell_info(&mut out, c);
    }
    let help = "Requests of the cell in progress that ended.";
    metric(
        &mut out,
        "llmib_cell_requests_ended",
        "gauge",
        help,
        s.requests_ended,
    );
    if let Some(t) = s.tokens {
        let help = "Output tokens of the cell in progress (the client's running count).";
        metric(&mut out, "llmib_cell_output_tokens", "gauge", help, t);
    }
    if let Some(r) = s.tok_per_s {
        let help = "Output tokens per second of the cell in progress, since the previous scrape.";
        metric(
            &mut out,
            "llmib_cell_output_tokens_per_second",
            "gauge",
            help,
            r,
        );
    }
    if let Some(h) = &s.ttft {
        let help = "Time to first token of the cell in progress, seconds.";
        histogram(&mut out, "llmib_cell_ttft_seconds", help, h);
    }
    if let Some(h) = &s.tpot {
        let help = "Time per output token after the first, of the cell in progress, seconds.";
        histogram(&mut out, "llmib_cell_tpot_seconds", help, h);
    }
    out
}

/// The cell in progress as an info gauge (its labels name it).
fn cell_info(out: &mut String, c: &CellLabels) {
    let rate = c.rate.map(|r| r.to_string()).unwrap_or_default();
    let _ = writeln!(
        out,
        "# HELP llmib_cell_info The cell in progress.\n# TYPE llmib_cell_info gauge"
    );
    let _ = writeln!(
        out,
        "llmib_cell_info{{phase=\"{}\",context=\"{}\",concurrency=\"{}\",rate=\"{rate}\"}} 1",
        label_value(&c.phase),
        label_value(&c.context),
        c.concurrency
    );
}

/// The listener: bound, serving, closed when dropped.
pub struct MetricsListen {
    /// The sink to give the run.
    pub sink: MetricsSink,
    task: JoinHandle<()>,
}

/// How long a run's end waits for a scrape that reads its last figures.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);

impl MetricsListen {
    /// The run has ended: waits (at most [`LINGER`]) until a scrape has read every cell done,
    /// so a scraper polling the run's end reads its last counts, then closes the endpoint. A
    /// run whose scrapes come seldom (Prometheus every 15 s) is not held up for them.
    pub async fn finish(self) {
        let start = Instant::now();
        while start.elapsed() < LINGER && !self.read_at_end() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    fn read_at_end(&self) -> bool {
        let s = self.sink.0.lock().unwrap_or_else(PoisonError::into_inner);
        // A run that ended early (Ctrl-C) never has every cell done: nothing to wait for then
        // beyond a scrape of what it has, which the limit bounds.
        s.read_at_end
    }
}

impl Drop for MetricsListen {
    fn drop(&mut self) {
        // The accept loop owns the socket: aborting it closes the port with the run.
        self.task.abort();
    }
}

/// Reads a request's head into `buf` (its length read): until the blank line that ends it, a
/// full buffer, the scraper's end, or 2 s. One read is not enough: a client may send the head
/// in pieces, and bytes of it left unread when the answer's socket closes make the kernel
/// reset the connection, which can lose the answer on the scraper's side.
async fn read_head(conn: &mut tokio::net::TcpStream, buf: &mut [u8]) -> usize {
    let mut n = 0;
    let read = async {
        while n < buf.len() && !buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf[n..]).await {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), read).await;
    n
}

/// Binds `addr` and serves `/metrics` until the returned listener is dropped.
pub async fn start(addr: &str) -> Result<MetricsListen> {
    let listener = TcpListener::bind(addr).await.with_context(|| {
        format!("--metrics-listen {addr}: cannot listen there (give a free HOST:PORT)")
    })?;
    let sink = MetricsSink::default();
    let served = sink.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let sink = served.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let n = read_head(&mut conn, &mut buf).await;
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("");
                let snap =
                    (path == "/metrics" || path.starts_with("/metrics?")).then(|| sink.snapshot());
                let (status, body) = match &snap {
                    Some(snap) => ("200 OK", render(snap)),
                    None => (
                        "404 Not Found",
                        "only /metrics is served here\n".to_string(),
                    ),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                // A scraper that went away is no concern of the run's.
                let written = conn.write_all(answer.as_bytes()).await.is_ok()
                    && conn.shutdown().await.is_ok();
                if let Some(snap) = snap.as_ref().filter(|_| written) {
                    sink.answered(snap);
                }
            });
        }
    });
    Ok(MetricsListen { sink, task })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_names_the_cell_its_counts_and_histograms() {
        let h = llmib_client::LiveLatency::default();
        h.observe_ns(20_000_000);
        let s = Snapshot {
            planned: 5,
            done: 2,
            errors: 1,
            cell: Some(CellLabels {
                phase: "decode".into(),
                context: "8K \"x\"".into(),
                concurrency: 4,
                rate: None,
            }),
            tokens: Some(1200),
            tok_per_s: Some(400.5),
            requests_ended: 3,
            ttft: Some(h.snapshot()),
            tpot: None,
        };
        let text = render(&s);
        for line in [
            "llmib_cells_planned 5",
            "llmib_cells_done 2",
            "llmib_request_errors 1",
            r#"llmib_cell_info{phase="decode",context="8K \"x\"",concurrency="4",rate=""} 1"#,
            "llmib_cell_output_tokens 1200",
            "llmib_cell_output_tokens_per_second 400.5",
            r#"llmib_cell_ttft_seconds_bucket{le="0.01"} 0"#,
            r#"llmib_cell_ttft_seconds_bucket{le="0.025"} 1"#,
            r#"llmib_cell_ttft_seconds_bucket{le="+Inf"} 1"#,
            "llmib_cell_ttft_seconds_count 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
        assert!(!text.contains("llmib_cell_tpot_seconds"), "{text}");
    }

    #[test]
    fn the_sink_counts_cells_and_errors_and_measures_tok_per_s_between_scrapes() {
        let sink = MetricsSink::default();
        let w = Arc::new(LiveWindow::new(2, std::time::Duration::from_secs(1), true));
        sink.event(ProgressEvent::WindowLive(w.clone()));
        let first = sink.snapshot();
        assert_eq!((first.tokens, first.tok_per_s), (Some(0), None));
        w.stream(0)
            .expect("stream")
            .tokens
            .store(50, std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = sink.snapshot();
        assert_eq!(second.tokens, Some(50));
        assert!(second.tok_per_s.is_some_and(|r| r > 0.0), "{second:?}");
        sink.event(ProgressEvent::Note("x".into()));
        assert_eq!(sink.snapshot().done, 0);
    }

    #[test]
    fn the_runs_end_waits_for_an_answer_written_not_for_a_snapshot_taken() {
        let sink = MetricsSink::default();
        let mut s = sink.0.lock().expect("lock");
        s.planned = 1;
        s.done = 1;
        drop(s);
        let snap = sink.snapshot();
        let read = |sink: &MetricsSink| sink.0.lock().expect("lock").read_at_end;
        assert!(!read(&sink), "a snapshot alone released the end");
        sink.answered(&Snapshot::default());
        assert!(!read(&sink), "an answer with no cell done released the end");
        sink.answered(&snap);
        assert!(read(&sink));
    }

    #[tokio::test]
    async fn a_head_sent_in_pieces_is_read_whole_before_the_answer() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = free.local_addr().expect("address").to_string();
        drop(free);
        let listen = start(&addr).await.expect("listen");
        let mut c = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        c.write_all(b"GET /met").await.expect("first piece");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        c.write_all(b"rics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("second piece");
        let mut answer = String::new();
        c.read_to_string(&mut answer).await.expect("the answer");
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("llmib_cells_done 0"), "{answer}");
        drop(listen);
    }
}
