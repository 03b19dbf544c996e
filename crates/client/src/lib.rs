//! The client side: HTTP/SSE, engine adapters, exact-length prompts and the driver that runs
//! the cells of a speed test matrix.

pub mod chunk;
pub mod engine;
pub mod hardware;
pub mod http;
pub mod hwmon;
pub mod lagprobe;
pub mod live;
pub mod local_tokenizer;
pub mod metrics;
pub mod sse;

pub mod burst;
pub mod counting;
pub mod driver;
pub mod progress;
pub mod prompt;
pub mod stream;
pub mod window;

#[cfg(test)]
mod props;
