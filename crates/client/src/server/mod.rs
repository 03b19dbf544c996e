//! The server: the engine adapters (one file each under `engine/`, with the probe that tells
//! them apart), the Prometheus metrics they scrape, the sampler that reads them through each
//! cell (`telemetry`), the local tokenizer, and token counting through the server's tokenizer.
//! A new engine adapter goes in `engine/`.
//!
//! May import: `wire` (to send its requests). Never `prompts`, `progress` or `cells`.

pub(crate) mod counting;
pub(crate) mod engine;
pub(crate) mod local_tokenizer;
pub(crate) mod metrics;
pub(crate) mod telemetry;
