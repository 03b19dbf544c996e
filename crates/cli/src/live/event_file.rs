//! `--events FILE`: every progress event of a run as one JSON line, with when it happened on the
//! wall clock and on the run's monotonic clock, so tools outside the run (a GPU profiler, the
//! server's own logs) can line their telemetry up with the cells.
//!
//! A line is the `--display json` event (docs/dashboard.md, "JSON events": `event`, `t_s` and
//! the event's fields) with three keys more: `unix_ns` (the wall clock, ns since the Unix
//! epoch), `wall` (the same instant as RFC 3339 UTC with nanoseconds) and `mono_ns` (ns since
//! the run started, on the monotonic clock, which never steps when NTP adjusts the wall clock).
//! Both instants are taken together when the event is raised, under one lock with the send, so
//! the lines are in the order of their times even when two tasks raise events at once.
//!
//! The file is written by a thread of its own: the measurement's tasks raise events, and a
//! send never waits on the disk. The thread flushes after every line, so a tool that tails the
//! file sees each event as it comes, and a run that is killed loses none it wrote. Every string
//! goes through the run's redaction (the API key, a URL's password: an error body may quote
//! them) before it is written.

use anyhow::{Context, Result, anyhow};
use llmib_client::{Progress, ProgressEvent, json_value};
use llmib_core::{redact_strings, rfc3339_nanos};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The event file, created (or emptied) before the server is probed, so that a path that cannot
/// be written stops the run before anything is sent.
#[derive(Debug)]
pub struct EventsFile {
    path: PathBuf,
    file: File,
}

impl EventsFile {
    /// Creates `path`, replacing a file already there (a resumed run writes its own events).
    pub fn create(path: &Path) -> Result<EventsFile> {
        let file = File::create(path)
            .with_context(|| format!("--events: cannot create {}", path.display()))?;
        Ok(EventsFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Starts writing: events raised from now on are timed from `origin` (the run's start) and
    /// stripped of `secrets`.
    pub fn start(self, secrets: Vec<String>, origin: Instant) -> Result<EventWriter> {
        let (tx, rx) = channel();
        let file = self.file;
        let thread = std::thread::Builder::new()
            .name("events-file".into())
            .spawn(move || write_lines(BufWriter::new(file), &rx, &secrets))
            .context("--events: cannot start the writing thread")?;
        Ok(EventWriter {
            sender: Mutex::new(Some(tx)),
            origin,
            path: self.path,
            thread: Some(thread),
        })
    }
}

/// An event with its two instants.
struct Stamped {
    event: ProgressEvent,
    mono_ns: u64,
    wall: SystemTime,
}

/// The sink that times each event and hands it to the writing thread.
pub struct EventWriter {
    sender: Mutex<Option<Sender<Stamped>>>,
    origin: Instant,
    path: PathBuf,
    thread: Option<JoinHandle<std::io::Result<u64>>>,
}

impl Progress for EventWriter {
    /// Stamps the event and sends it; the lock covers only the two clock reads and the send
    /// (no I/O), so that lines come out in the order of their times.
    fn event(&self, e: ProgressEvent) {
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = sender.as_ref() {
            let mono_ns = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let stamped = Stamped {
                event: e,
                mono_ns,
                wall: SystemTime::now(),
            };
            // A thread that stopped on a write error has said so; the run goes on.
            let _ = tx.send(stamped);
        }
    }
}

impl EventWriter {
    /// Stops taking events, waits until every one sent is written and flushed, and returns how
    /// many lines the file holds, or why it could not be written.
    pub fn finish(mut self) -> Result<u64> {
        self.stop()
    }

    fn stop(&mut self) -> Result<u64> {
        // Dropping the sender ends the thread's loop once it has written what was sent.
        drop(
            self.sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let Some(thread) = self.thread.take() else {
            return Ok(0);
        };
        let path = self.path.display();
        match thread.join() {
            Ok(Ok(lines)) => Ok(lines),
            Ok(Err(e)) => Err(anyhow!("the event file {path} could not be written: {e}")),
            Err(panic) => Err(anyhow!(
                "the event file {path} stopped after a panic ({})",
                llmib_client::panic_text(panic.as_ref())
            )),
        }
    }
}

impl Drop for EventWriter {
    /// An error exit still writes what was raised (and says nothing more: the error is the
    /// news).
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The writing thread: a line per event, flushed, until every sender is gone. After a write
/// error it goes on draining the channel (so nothing piles up) and returns the error.
fn write_lines(
    mut out: BufWriter<File>,
    rx: &Receiver<Stamped>,
    secrets: &[String],
) -> std::io::Result<u64> {
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let mut lines = 0u64;
    let mut failed = None;
    for s in rx {
        if failed.is_some() {
            continue;
        }
        let line = event_line(&s.event, s.mono_ns, s.wall, &secrets);
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Ok(()) => lines += 1,
            Err(e) => failed = Some(e),
        }
    }
    failed.map_or(Ok(lines), Err)
}

/// One line of the file (no newline): the JSON event at `mono_ns` since the run started, raised
/// at `wall`, with every string redacted of `secrets`.
pub fn event_line(e: &ProgressEvent, mono_ns: u64, wall: SystemTime, secrets: &[&str]) -> String {
    // `t_s` as `--display json` writes it: seconds since the start, to the millisecond.
    let t_s = (mono_ns as f64 / 1e6).round() / 1e3;
    let mut v = match json_value(e, t_s) {
        Some(Value::Object(map)) => map,
        // `json_value` turns an event it cannot write into a note; this cannot happen, and a
        // gap in the file would be worse than a line that says so.
        _ => Map::from_iter([
            ("event".to_string(), Value::from("note")),
            ("t_s".to_string(), Value::from(t_s)),
            (
                "text".to_string(),
                Value::from("an event could not be written"),
            ),
        ]),
    };
    let unix_ns = wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    v.insert("mono_ns".into(), Value::from(mono_ns));
    v.insert("unix_ns".into(), Value::from(unix_ns));
    v.insert("wall".into(), Value::from(rfc3339_nanos(wall)));
    let mut v = Value::Object(v);
    redact_strings(&mut v, secrets);
    v.to_string()
}

/// Fan-out: every sink gets every event, in order (the event file first, so its instant is the
/// nearer to the event's; the display last).
pub struct Fanout<'a>(pub Vec<&'a dyn Progress>);

impl Progress for Fanout<'_> {
    fn event(&self, e: ProgressEvent) {
        if let Some((last, rest)) = self.0.split_last() {
            for sink in rest {
                sink.event(e.clone());
            }
            last.event(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmib_client::{RequestErrorKind, Stage};
    use std::time::Duration;

    fn error_event(message: &str) -> ProgressEvent {
        ProgressEvent::RequestError {
            phase: Stage::Window,
            stream: 3,
            kind: RequestErrorKind::parse("http_500"),
            message: message.into(),
            retry_in_s: None,
            retry_after: false,
        }
    }

    /// A line is the JSON event with its times, keys in order, the key gone from every string.
    #[test]
    fn a_line_carries_both_clocks_and_no_secret() {
        let wall = UNIX_EPOCH + Duration::from_nanos(1_796_139_902_123_456_789);
        let e = error_event("HTTP 500: bad key sk-abc-123");
        let line = event_line(&e, 2_500_000_001, wall, &["sk-abc-123"]);
        assert!(!line.contains("sk-abc-123"), "{line}");
        let v: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["event"], "request_error");
        assert_eq!(v["message"], "HTTP 500: bad key <redacted>");
        assert_eq!(v["mono_ns"], 2_500_000_001u64);
        assert_eq!(v["t_s"], 2.5);
        assert_eq!(v["unix_ns"], 1_796_139_902_123_456_789u64);
        assert_eq!(v["wall"], "2026-12-01T15:45:02.123456789Z");
        let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(
            keys, sorted,
            "keys in alphabetical order, as --display json"
        );
    }

    /// The writer keeps the order of the events, stamps them in increasing order, and has
    /// written and flushed every line when `finish` returns.
    #[test]
    fn the_writer_writes_every_event_in_order() {
        let dir = std::env::temp_dir().join(format!("llmib-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("events.jsonl");
        let w = EventsFile::create(&path)
            .expect("create")
            .start(vec!["sk-x".into()], Instant::now())
            .expect("start");
        for i in 0..50 {
            w.event(ProgressEvent::Note(format!("note {i} sk-x")));
        }
        assert_eq!(w.finish().expect("written"), 50);
        let text = std::fs::read_to_string(&path).expect("read back");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 50);
        assert!(!text.contains("sk-x"));
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l["text"], format!("note {i} <redacted>"));
        }
        let mono: Vec<u64> = lines.iter().filter_map(|l| l["mono_ns"].as_u64()).collect();
        assert!(mono.windows(2).all(|w| w[0] <= w[1]), "{mono:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_path_that_cannot_be_created_says_which() {
        let e = EventsFile::create(Path::new("/nonexistent-dir/x/events.jsonl"))
            .expect_err("no such directory");
        assert!(e.to_string().contains("--events"), "{e}");
    }
}
