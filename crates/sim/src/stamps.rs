//! Chunk stamps (`SimConfig::stamp_chunks`): when each content chunk of a stream was handed to
//! the HTTP server. A benchmark compares them with a client's arrival timestamps to measure the
//! client's timing error.
//!
//! Why a log rather than a field in the chunk JSON: a client under test drops unknown fields, so
//! a stamp on the wire would never reach the code that compares. A chunk is identified instead
//! by what every client keeps: the request's `usage.prompt_tokens` and the cumulative
//! `usage.completion_tokens` after the chunk.
//!
//! Arrival stamps say when each generation request reached the engine, so that per-request
//! figures under open load (TTFT from arrival, end to end) can be recomputed from what the
//! server saw, independently of the client (`emitted::served_requests`).

use std::sync::Mutex;
use std::time::Instant;

/// When the simulator handed one content chunk to the HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkStamp {
    /// The engine's id of the request (unique per server), so a request's chunks can be told
    /// apart from those of another stream with the same prompt length.
    pub request: u64,
    /// The request's `usage.prompt_tokens`, as reported (offset fault included).
    pub prompt_tokens: u64,
    /// Prompt tokens the engine served this request from its prefix cache (what its
    /// `usage.prompt_tokens_details.cached_tokens` says), the same on each of its chunks.
    pub cached_tokens: u64,
    /// `usage.completion_tokens` after this chunk (cumulative).
    pub completion_tokens: u32,
    /// Taken once the chunk's bytes are built, immediately before the response stream yields
    /// them to hyper, which writes them to the socket in the same poll. (SGLang's first chunk
    /// is built before the response headers are sent, as SGLang does, so it is stamped a few
    /// microseconds before its write.)
    pub at: Instant,
    /// This chunk ended the request normally (it carries a `finish_reason`). A request whose
    /// stream was cut (an injected stream error, a disconnect, a stall, shutdown) has none.
    pub finished: bool,
}

/// When a generation request reached the engine: the handler had read its whole body. Only
/// requests submitted to the engine are stamped; one answered at once with an error (an
/// injected HTTP 500, a full queue, a bad body) never was in the engine and has no stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalStamp {
    /// The engine's id of the request, as in its [`ChunkStamp`]s.
    pub request: u64,
    /// The request's `usage.prompt_tokens`, as reported (offset fault included).
    pub prompt_tokens: u64,
    /// When the handler started on it (its body already read).
    pub at: Instant,
}

/// One pass of the scheduler as it really ran (not as configured): when it ended and what it
/// did. A loaded host runs passes late; this log says what the engine actually did when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassStamp {
    /// When the pass ended (its tokens were emitted then).
    pub end: Instant,
    /// Requests in the decode batch (0 for a prefill pass).
    pub decode_batch: u32,
    /// Requests whose prompt was (partly) prefilled in this pass (0 for a decode step).
    pub prefill_requests: u32,
}

/// The stamps of one server, in the order they were taken.
#[derive(Debug, Default)]
pub(crate) struct StampLog {
    stamps: Mutex<Vec<ChunkStamp>>,
    passes: Mutex<Vec<PassStamp>>,
    arrivals: Mutex<Vec<ArrivalStamp>>,
}

fn push_locked<T>(m: &Mutex<Vec<T>>, x: T) {
    match m.lock() {
        Ok(mut v) => v.push(x),
        Err(p) => p.into_inner().push(x),
    }
}

fn take_locked<T>(m: &Mutex<Vec<T>>) -> Vec<T> {
    match m.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    }
}

impl StampLog {
    /// Appends one chunk stamp.
    pub(crate) fn push(&self, s: ChunkStamp) {
        push_locked(&self.stamps, s);
    }

    /// Removes and returns every chunk stamp recorded so far.
    pub(crate) fn take(&self) -> Vec<ChunkStamp> {
        take_locked(&self.stamps)
    }

    /// Appends one pass stamp.
    pub(crate) fn push_pass(&self, p: PassStamp) {
        push_locked(&self.passes, p);
    }

    /// Removes and returns every pass stamp recorded so far.
    pub(crate) fn take_passes(&self) -> Vec<PassStamp> {
        take_locked(&self.passes)
    }

    /// Appends one arrival stamp.
    pub(crate) fn push_arrival(&self, a: ArrivalStamp) {
        push_locked(&self.arrivals, a);
    }

    /// Removes and returns every arrival stamp recorded so far.
    pub(crate) fn take_arrivals(&self) -> Vec<ArrivalStamp> {
        take_locked(&self.arrivals)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::SimConfig;
    use std::time::Instant;

    /// Streams one 3-token completion over raw HTTP/1.1 and returns the whole response.
    async fn stream_once(addr: std::net::SocketAddr) -> String {
        let body = r#"{"prompt":[5,6,7,8],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
        let mut s = TcpStream::connect(addr).await.expect("connects");
        let head = format!(
            "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(head.as_bytes()).await.expect("writes");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("reads");
        out
    }

    fn config(stamp: bool) -> SimConfig {
        SimConfig {
            decode_step_ms: vec![(1, 2.0)],
            stamp_chunks: stamp,
            ..SimConfig::default()
        }
    }

    #[tokio::test]
    async fn stamps_every_content_chunk_in_order_only_when_asked() {
        let sim = crate::spawn(config(true)).await.expect("starts");
        let with = stream_once(sim.addr()).await;
        let stamps = sim.take_chunk_stamps();
        assert_eq!(
            stamps
                .iter()
                .map(|s| (s.prompt_tokens, s.completion_tokens))
                .collect::<Vec<_>>(),
            vec![(4, 1), (4, 2), (4, 3)]
        );
        // In order. (Not checked: their spacing, which a loaded host may squeeze when a late
        // step is followed by one on time.)
        assert!(stamps.windows(2).all(|w| w[0].at <= w[1].at), "{stamps:?}");
        assert!(sim.take_chunk_stamps().is_empty(), "taking drains the log");
        sim.shutdown().await;

        let sim = crate::spawn(config(false)).await.expect("starts");
        let without = stream_once(sim.addr()).await;
        assert!(sim.take_chunk_stamps().is_empty());
        sim.shutdown().await;
        // Nothing on the wire changes: the same SSE events (ids and dates aside).
        let events = |r: &str| {
            r.lines()
                .filter(|l| l.starts_with("data: "))
                .map(|l| l.split("\"choices\"").nth(1).unwrap_or(l).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(events(&with).len(), 5, "{with}");
        assert_eq!(events(&with), events(&without));
    }

    /// Serial prefill (vLLM-like): four requests admitted together get one prefill pass each,
    /// so their first tokens come one pass apart; without it, one pass prefills them all.
    #[tokio::test]
    async fn serial_prefill_gives_each_admitted_request_its_own_pass() {
        for serial in [true, false] {
            let cfg = SimConfig {
                serial_prefill: serial,
                decode_step_ms: vec![(1, 3.0)],
                // A long pass, so requests that arrive while one runs wait for the next.
                prefill_overhead_ms: 20.0,
                ..config(true)
            };
            let sim = crate::spawn(cfg).await.expect("starts");
            let addr = sim.addr();
            futures_util::future::join_all((0..4).map(|_| stream_once(addr))).await;
            let passes = sim.take_pass_stamps();
            let stamps = sim.take_chunk_stamps();
            sim.shutdown().await;
            let prefills: Vec<u32> = passes
                .iter()
                .map(|p| p.prefill_requests)
                .filter(|&k| k > 0)
                .collect();
            assert_eq!(prefills.iter().sum::<u32>(), 4, "{passes:?}");
            let firsts: Vec<Instant> = stamps
                .iter()
                .filter(|s| s.completion_tokens == 1)
                .map(|s| s.at)
                .collect();
            assert_eq!(firsts.len(), 4);
            if serial {
                assert_eq!(prefills, vec![1, 1, 1, 1], "{passes:?}");
                // Between two first tokens lies at least one more pass.
                let ends: Vec<Instant> = passes.iter().map(|p| p.end).collect();
                let mut f = firsts.clone();
                f.sort();
                assert!(f.windows(2).all(|w| w[0] < w[1]), "one pass apart: {f:?}");
                assert!(ends.len() >= 4 + 3, "{passes:?}");
            } else {
                assert!(prefills.iter().any(|&k| k > 1), "{passes:?}");
            }
        }
    }
}
