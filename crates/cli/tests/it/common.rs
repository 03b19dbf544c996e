//! Helpers shared by the suites: temp dirs, the binary's path, starting the simulator.

/// Path of the `llm-inference-bench` binary built for these tests.
#[allow(dead_code)]
pub fn bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_llm-inference-bench"))
}
