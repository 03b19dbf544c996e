//! How waiting for a sweep's server ended, wherever it runs: a local process answering, or a
//! Slurm job running (its own file, so that the launchers and the waiting share it without
//! importing each other).

/// How waiting for a server (or for its Slurm job to run) ended.
pub enum Ready<T> {
    /// It answered (or runs), with this.
    Answered(T),
    /// It exited first, with these words.
    Exited(String),
    /// It did not answer within the limit.
    TimedOut,
    /// The sweep was stopped (Ctrl-C) while it waited.
    Cancelled,
}
