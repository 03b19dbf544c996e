//! A rejected request as the simulator answers it: HTTP status, the engine's error type and
//! message. Apart from `crate::request` so the parts that check a request's pieces (images,
//! adapters) can refuse without importing the whole request reader that calls them.

/// A rejected request: HTTP status, error type and message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reject {
    /// HTTP status.
    pub status: u16,
    /// The engine's error `type`.
    pub err_type: &'static str,
    /// The message, worded as the engine words it.
    pub message: String,
    /// The request field the error is about, where the engine names one (`param`).
    pub param: Option<&'static str>,
}

impl Reject {
    /// A 400 `BadRequestError`.
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Reject {
            status: 400,
            err_type: "BadRequestError",
            message: message.into(),
            param: None,
        }
    }
}
