//! A simulated continuous-batching inference engine that speaks SGLang's or vLLM's HTTP dialect.
//! It shares no code with the client crates, so that a client bug is never mirrored here.
