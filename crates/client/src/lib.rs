//! The client side: HTTP/SSE, engine adapters, exact-length prompts and the driver that runs
//! the cells of a speed test matrix.
//!
//! Modules are private; the `pub use` lists below are the crate's whole surface, so the
//! compiler reports any function no caller needs. Every type a public item exposes is
//! re-exported too (`unnameable_types` keeps that true).

#![warn(unnameable_types)]

mod block_prompt;
mod body;
mod burst;
mod chunk;
mod counting;
mod decode_cell;
mod diagnostics;
mod driver;
mod engine;
mod hardware;
mod http;
mod hwmon;
mod ktime;
mod lagprobe;
mod live;
mod load_section;
mod local_tokenizer;
mod matrix;
mod metrics;
mod open_loop;
mod pacer;
mod progress;
mod prompt;
mod ramp;
mod rawbody;
mod rawhttp;
#[cfg(feature = "tls")]
mod rawtls;
mod run;
mod shard;
mod skip;
mod sse;
mod stream;
mod varying;
mod warm;
mod window;

// The server: engine adapters, their probe and the HTTP client under them.
pub use engine::{
    ChatCalibration, Engine, EngineError, Gauges, Probe, ProbeError, ProbeOptions, PromptInput,
    SpecCounters,
};
pub use http::{HttpError, HttpOptions, build_client, describe_request_error};
pub use local_tokenizer::{LocalTokenizer, TokenizerError};
pub use metrics::{Metrics, Sample};

// One request, streamed and measured: the wire format, the record and the prompt it sends.
pub use body::{HttpReader, http_proxy_var};
pub use chunk::{Chunk, ChunkError, ServerError, StreamItem, Usage, parse_event};
pub use counting::count_tokens;
pub use prompt::{BuiltPrompt, PromptBuilder, PromptError};
pub use rawhttp::RawMark;
pub use sse::{OwnedSseEvent, SseDecoder, SseError, SseEvent};
pub use stream::{BodyError, Counting, Measured, RequestSpec, StreamLimits, measure};

// Running cells: the matrix driver, bursts, and what they tell the displays.
pub use block_prompt::load_workload;
pub use burst::{BurstError, send_burst};
pub use driver::{CancellationToken, DriverError, MatrixEnd, MatrixRun};
pub use live::{LiveWindow, OpenLoopLive, StreamLive};
pub use pacer::{Pacer, SPIN};
pub use progress::{
    EventKind, Progress, ProgressEvent, REQUEST_ERROR_EVENTS, RequestErrorKind, Stage, json_line,
    readiness_reason,
};
pub use run::run_matrix;
pub use shard::ShardRun;
pub use skip::{CellSkip, SKIPPED};

// The machine the client runs on.
pub use diagnostics::gather_diagnostics;
pub use hardware::{HardwareParseError, detect_local, parse_hardware_override};
pub use hwmon::{HwMonitor, panic_text};

#[cfg(test)]
mod props;
