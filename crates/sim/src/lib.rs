//! A simulated continuous-batching inference engine that speaks SGLang's or vLLM's HTTP dialect.
//! It shares no code with the client crates, so that a client bug is never mirrored here.
//!
//! The pieces, in the order a request meets them:
//! - `config`: every knob ([`SimConfig`]), and `profiles` ([`builtin_profile`]) that fill them;
//! - `server`: start-up ([`serve`], [`spawn`]); `http`, `request`, `info`, `metrics`: the
//!   router, its endpoints and each engine's bodies, with what they share (`state`, `reply`);
//! - `api`, `agent_request`, `frames`, `sse`, `messages_api`, `responses_api`: the generation
//!   routes (OpenAI completions and chat, Anthropic's Messages API, OpenAI's Responses API),
//!   each a parser and a framing over one engine submission and one SSE driver;
//! - `tokenizer`: the simulator's own deterministic tokenizer (not one token per character);
//! - `engine`: the scheduler thread (KV admission, prefix cache, prefill, decode steps);
//! - `wire`: the exact JSON and SSE bytes each engine writes;
//! - `faults`: seeded fault decisions; `abort`: SGLang's `/abort_request` and the abort log;
//! - `lora`: LoRA adapters beside the base model (how a request names one, their model cards,
//!   the extra step time of a batch holding several);
//! - `stamps` and `emitted`: when requests arrived and what the engine really emitted when, and
//!   the figures of a window or of each request computed from that (the oracle of the
//!   client's timing tests).
//!
//! Start it in-process with [`spawn`] (tests, demos) or [`serve`] (your own listener and
//! shutdown signal). `docs/simulator.md` describes the model and shows transcripts.

mod abort;
mod agent_request;
pub mod answers;
mod api;
mod config;
mod emitted;
mod engine;
mod error;
mod faults;
mod frames;
mod http;
mod images;
mod info;
mod lora;
mod messages_api;
mod metrics;
mod profiles;
mod reject;
mod reply;
mod request;
mod responses_api;
mod rng;
mod server;
mod sse;
mod stamps;
mod state;
mod structured;
mod tokenizer;
mod tools;
mod wire;

#[cfg(test)]
#[path = "tests/agent_apis.rs"]
mod agent_apis;
#[cfg(test)]
#[path = "tests/agent_faults.rs"]
mod agent_faults;
#[cfg(test)]
#[path = "tests/agent_transcripts.rs"]
mod agent_transcripts;
#[cfg(test)]
#[path = "tests/control.rs"]
mod control_tests;
#[cfg(test)]
#[path = "tests/images.rs"]
mod images_tests;
#[cfg(test)]
#[path = "tests/lora.rs"]
mod lora_tests;
#[cfg(test)]
#[path = "tests/open_load.rs"]
mod open_load_tests;
#[cfg(test)]
#[path = "tests/raw.rs"]
mod raw;
#[cfg(test)]
#[path = "tests/sessions.rs"]
mod sessions_tests;
#[cfg(test)]
#[path = "tests/spec_loop.rs"]
mod spec_loop_tests;
#[cfg(test)]
#[path = "tests/structured.rs"]
mod structured_tests;
#[cfg(test)]
#[path = "tests/tools.rs"]
mod tools_tests;

pub use config::{FaultConfig, Flavor, MessagesUsage, SimConfig, SpecAcceptRule};
pub use emitted::{EmittedFigures, ServedRequest, served_requests};
pub use error::SimError;
pub use profiles::{builtin_profile, builtin_profile_names, load_profile, profile_from_toml};
pub use server::{SimHandle, serve, spawn};
pub use stamps::{AbortCause, AbortRecord, ArrivalStamp, ChunkStamp, PassStamp};
