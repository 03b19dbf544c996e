//! LoRA adapters in the cells (`run --lora`; docs/lora.md): the `model` each request names,
//! and the row's figures per adapter. The assignment is `llmib_core::LoraSettings`'s, by a key
//! derived from the request's stream index alone, so building a request and reading its record
//! back need no table between them:
//! - a decode or burst stream i resends one request: key i, its adapter for the whole cell;
//! - an open-load request has a stream index of its own, counted from `OPEN_LOAD_STREAMS` in
//!   each context: its key is its index in that count, so consecutive arrivals take
//!   consecutive adapters under round-robin.
//!
//! Prefill, mixed-prefill and session cells, probes and the hidden warm-ups send to the base
//! model.

use std::borrow::Cow;

use crate::cells::context::MatrixRun;
use llmib_core::{CellResult, LoraSpan, RequestRecord, Window, lora_figures, lora_request_model};

/// Where open-load stream indices start in each context (`section::OPEN_LOOP_STREAMS`, which
/// imports this module, hence the copy; a test holds them equal).
const OPEN_LOAD_STREAMS: u32 = 1 << 30;

/// The assignment key of a request of stream `stream` (module docs).
fn key(stream: u32) -> u32 {
    stream.checked_sub(OPEN_LOAD_STREAMS).unwrap_or(stream)
}

/// The `model` a request of stream `stream` names: its adapter (as the engine names one)
/// under `--lora`, else the served model.
pub(crate) fn request_model<'m>(m: &'m MatrixRun<'_>, stream: u32) -> Cow<'m, str> {
    match &m.plan.settings.lora {
        Some(l) => {
            let adapter = l.adapter(key(stream));
            Cow::Owned(lora_request_model(Some(m.engine.kind()), &m.model, adapter))
        }
        None => Cow::Borrowed(&m.model),
    }
}

/// A decode row's figures per adapter over its window; its records carry their stream index.
pub(crate) fn window_figures(
    m: &MatrixRun<'_>,
    row: &mut CellResult,
    records: &[RequestRecord],
    w: Window,
) {
    set(
        m,
        row,
        records,
        &|r| Some(key(r.stream)),
        LoraSpan::Window(w),
    );
}

/// A burst or rate row's figures per adapter over the whole cell; record k is the request of
/// stream `streams[k]` (its position among the cell's requests).
pub(crate) fn cell_figures(
    m: &MatrixRun<'_>,
    row: &mut CellResult,
    records: &[RequestRecord],
    streams: &[u32],
) {
    let key_of = |r: &RequestRecord| streams.get(r.stream as usize).map(|s| key(*s));
    set(m, row, records, &key_of, LoraSpan::Cell);
}

/// Puts the figures in a row that has figures, when the run spreads requests over adapters.
fn set(
    m: &MatrixRun<'_>,
    row: &mut CellResult,
    records: &[RequestRecord],
    key_of: &dyn Fn(&RequestRecord) -> Option<u32>,
    span: LoraSpan,
) {
    let Some(l) = &m.plan.settings.lora else {
        return;
    };
    if row.status.has_figures() {
        row.lora = Some(Box::new(lora_figures(records, key_of, l, span)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_load_keys_count_from_the_sections_first_stream() {
        assert_eq!(OPEN_LOAD_STREAMS, crate::cells::section::OPEN_LOOP_STREAMS);
        assert_eq!(key(3), 3);
        assert_eq!(key(OPEN_LOAD_STREAMS + 7), 7);
    }
}
