//! Deferred token counting, the gathering half: after the window, the texts of the chunks that
//! need the server's tokenizer are sent to it (each distinct text once, retried once), and the
//! rules of `llmib_core::counting` set every chunk's count from the answers. A text the
//! tokenizer could not count is never silently one token under the tokenizer's name: the row's
//! source is downgraded to the chunk count and the row says why (`token_count_note`).
//!
//! The work happens after the window, off the measurement's hot path.

use crate::server::engine::Engine;
use crate::wire::stream::Measured;
use llmib_core::{CountReport, TokenizeError, Tokenized, count_request, needs_tokenizer};
use std::collections::HashSet;

/// Asks the tokenizer for `text`'s length, once more if the first call fails (a tokenize call
/// that meets a server still freeing the window's requests can time out once).
async fn tokenize_len(engine: &Engine, text: &str) -> Result<u32, TokenizeError> {
    match engine.tokenize(text, false).await {
        Ok(v) => Ok(v.len() as u32),
        Err(_) => engine
            .tokenize(text, false)
            .await
            .map(|v| v.len() as u32)
            .map_err(|e| TokenizeError::Server(e.to_string())),
    }
}

/// Tokenizes every distinct text that a record needs counted: with the server's tokenizer, or
/// else with the local tokenizer file (`--tokenizer`; the flag in the answer says so). With
/// neither the map stays empty, and the rules count those chunks by chunk count, saying so.
async fn tokenize_needed(engine: &Engine, records: &[Measured]) -> (Tokenized, bool) {
    let mut out = Tokenized::new();
    let local = engine.local_tokenizer().filter(|_| !engine.has_tokenizer());
    if !engine.has_tokenizer() && local.is_none() {
        return (out, false);
    }
    let mut wanted: HashSet<&str> = HashSet::new();
    for m in records {
        if let Some(texts) = m.texts.as_deref()
            && needs_tokenizer(&m.record, Some(texts))
        {
            wanted.extend(texts.iter().map(String::as_str));
        }
    }
    let used_local = local.is_some() && !wanted.is_empty();
    for t in wanted {
        // A token the server's detokenizer held back has an empty text (`stream::measure`):
        // nothing to ask a tokenizer about, and some refuse an empty prompt.
        if t.is_empty() {
            out.insert(String::new(), Ok(0));
            continue;
        }
        let n = match local {
            Some(l) => l.count(t).map_err(|e| TokenizeError::Local(e.to_string())),
            None => tokenize_len(engine, t).await,
        };
        out.insert(t.to_string(), n);
    }
    (out, used_local)
}

/// Sets the token count of every chunk of every record and reports the weakest source used.
pub async fn count_tokens(engine: &Engine, records: &mut [Measured]) -> CountReport {
    let (tokenized, local) = tokenize_needed(engine, records).await;
    let mut report = CountReport::new();
    report.local_tokenizer = local;
    for m in records.iter_mut() {
        let texts = m.texts.take();
        count_request(
            &mut m.record,
            texts.as_deref(),
            m.saw_usage_per_chunk,
            &tokenized,
            &mut report,
        );
    }
    report
}
