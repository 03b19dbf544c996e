//! One request of a workload, as every format's parser gives it.

/// One request of a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadRequest {
    /// The row's line in its file (1-based).
    pub line: usize,
    /// When the trace sent it, seconds after the first row (`None`: the format has no time).
    pub arrival_s: Option<f64>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens to ask for.
    pub output_tokens: u64,
    /// The prompt's blocks, in order (Mooncake `hash_ids`; empty for other formats).
    pub prefix_blocks: Vec<u64>,
}
