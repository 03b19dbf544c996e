//! Targeted abort: when a window closes, SGLang keeps generating for the streams the client
//! dropped until its scheduler notices, so their tokens would run into the next cell's start.
//! Every SGLang request body carries an id of the client's (`rid`); at the window's close the
//! client asks `/abort_request` for exactly the ids it cancelled, never `abort_all` (another
//! client's requests on a shared server are not ours to stop). vLLM and llama.cpp stop a
//! request when its connection closes (docs/engines.md), so they need no call.

use super::{Engine, EngineError};
use serde_json::json;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A request id no other request of this process, and almost surely no other client, uses:
/// the process's start (ns) and a counter.
pub(crate) fn next_rid() -> String {
    static NONCE: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nonce = NONCE.get_or_init(|| llmib_core::unix_now_ns() ^ u64::from(std::process::id()));
    format!("llmib-{nonce:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl Engine {
    /// Whether the engine's requests carry ids the client can abort by.
    pub fn aborts_by_id(&self) -> bool {
        self.dialect.abort_by_rid
    }

    /// Asks the server to abort each of `rids` (SGLang `POST /abort_request {"rid"}`), all at
    /// once; returns how many it accepted. `Ok(0)` with nothing to do or no such call; the
    /// first refusal is an error that says what the server answered.
    pub async fn abort_requests(&self, rids: &[Arc<str>]) -> Result<u64, EngineError> {
        if !self.dialect.abort_by_rid || rids.is_empty() {
            return Ok(0);
        }
        let url = format!("{}/abort_request", self.base_url());
        let calls = rids.iter().map(|rid| {
            let req = self
                .client()
                .post(&url)
                .json(&json!({ "rid": rid.as_ref(), "abort_all": false }))
                .timeout(self.side_timeout);
            self.send_text(req, &url)
        });
        let answers = futures_util::future::join_all(calls).await;
        let mut accepted = 0;
        for a in answers {
            a?;
            accepted += 1;
        }
        Ok(accepted)
    }
}

#[cfg(test)]
mod tests {
    use super::next_rid;

    #[test]
    fn request_ids_are_unique_within_the_process() {
        let a = next_rid();
        let b = next_rid();
        assert_ne!(a, b);
        assert!(a.starts_with("llmib-"));
    }
}
