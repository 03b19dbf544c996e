//! The client side: HTTP/SSE, engine adapters, exact-length prompts and the driver that runs
//! the cells of a speed test matrix.

pub mod sse;
pub mod chunk;
pub mod metrics;
pub mod http;
pub mod hardware;
pub mod engine;
