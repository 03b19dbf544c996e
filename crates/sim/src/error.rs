//! The simulator's one error type.

/// Everything that can go wrong starting or configuring the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A knob has an impossible value; the message names it and what is allowed.
    #[error("invalid simulator configuration: {0}")]
    Invalid(String),
    /// A profile name or file could not be used.
    #[error("simulator profile {0}")]
    Profile(String),
    /// Binding or serving failed.
    #[error("simulator I/O error: {0} (is the port free?)")]
    Io(#[from] std::io::Error),
}
