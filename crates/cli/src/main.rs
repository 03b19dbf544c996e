//! The `llm-inference-bench` binary.

fn main() {}
