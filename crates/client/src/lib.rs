//! The client side: HTTP/SSE, engine adapters, exact-length prompts and the driver that runs
//! the cells of a speed test matrix.
//!
//! The source is in rooms by concern, each a folder whose module comment says what lives there
//! and what it may import; a lower room never imports a higher one:
//! - `machine/`: the machine the client runs on (hardware, its monitor, diagnostics);
//! - `wire/`: one request's bytes (HTTP readers, TLS, kernel times, SSE, chunks, the stream);
//! - `server/`: the server (engine adapters and their probe, metrics, tokenizers);
//! - `prompts/`: prompts of an exact token count;
//! - `progress/`: what a run tells the displays (typed events, live atomics);
//! - `cells/`: running cells (the matrix, each cell kind, windows, open load, shards).
//!
//! Modules are private; the `pub use` lists below are the crate's whole surface, so the
//! compiler reports any function no caller needs. Every type a public item exposes is
//! re-exported too (`unnameable_types` keeps that true).

#![warn(unnameable_types)]

mod cells;
mod machine;
mod progress;
mod prompts;
mod server;
mod wire;

// One request, streamed and measured: the wire format and the record.
/// The client-lag probe a decode window runs beside its streams, and what it reads of the raw
/// reader (for the overhead bench's fixed-cost line; runs use it through their windows).
pub use cells::lagprobe::{UnstampedCount, spawn as spawn_lag_probe};
pub use wire::body::{HttpReader, http_proxy_var};
pub use wire::chunk::{Chunk, ChunkError, ServerError, StreamItem, Usage, parse_event};
pub use wire::events::parse_event_of;
pub use wire::http::{
    ANTHROPIC_VERSION, HttpError, HttpOptions, KeyHeader, build_client, describe_request_error,
};
pub use wire::rawhttp::{KeyAuth, RawMark, RawReaderError};
#[cfg(feature = "tls")]
pub use wire::rawtls::TlsError;
pub use wire::sse::{OwnedSseEvent, SseDecoder, SseError, SseEvent};
pub use wire::stream::{BodyError, Counting, Measured, RequestSpec, StreamLimits, measure};

// The server: engine adapters, their probe, metrics and tokenizers.
pub use server::counting::count_tokens;
pub use server::engine::{
    Answer, ChatCalibration, Engine, EngineError, Gauges, ImagePart, MAX_SPEC_POSITIONS, Probe,
    ProbeError, ProbeOptions, PromptInput, SpecCounters, SpecPositions, answer_of,
};
pub use server::local_tokenizer::{LocalTokenizer, TokenizerError};
pub use server::metrics::{Metrics, Sample};

// The prompts a request sends.
pub use prompts::block_prompt::load_workload;
pub use prompts::prompt::{BuiltPrompt, PromptBuilder, PromptError};

// What the displays are fed.
pub use progress::events::{
    EventKind, Progress, ProgressEvent, REQUEST_ERROR_EVENTS, RequestErrorKind, Stage, json_line,
    json_value, readiness_reason,
};
pub use progress::latency::{LATENCY_BOUNDS_S, LatencySnapshot, LiveLatencies, LiveLatency};
pub use progress::live::{LiveText, LiveWindow, OpenLoopLive, StreamLive};
pub use progress::live::{TEXT_RING_BYTES, TextRing, TextRings};

// Running cells: the matrix driver, bursts, open load, shards.
pub use cells::burst::{BurstError, send_burst};
pub use cells::context::{CancellationToken, DriverError, MatrixEnd, MatrixRun};
pub use cells::pacer::{Pacer, SPIN};
pub use cells::run::run_matrix;
pub use cells::shard::ShardRun;
pub use cells::skip::{CellSkip, SKIPPED};

// The machine the client runs on.
pub use machine::diagnostics::gather_diagnostics;
pub use machine::hardware::{HardwareParseError, detect_local, parse_hardware_override};
pub use machine::hwmon::{HwMonitor, panic_text};

#[cfg(test)]
mod props;
