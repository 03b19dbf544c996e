//! What one stream publishes while it runs, for live views: its first-token flag and its
//! running token count. The request executor (`stream`) writes it with one relaxed atomic per
//! read; a window (`LiveWindow`, in the progress room) holds one per stream and reads them.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// One stream's live state.
#[derive(Debug, Default)]
pub struct StreamLive {
    /// Set by the stream's first content chunk of the measured phase (readiness reads it).
    pub first_token: AtomicBool,
    /// Content tokens received so far over all of this stream's requests.
    pub tokens: AtomicU64,
}
