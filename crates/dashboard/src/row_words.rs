//! A saved row's figures in words for the plain lines and the event log: a session row's
//! figures, and why a row failed. Its own file so that both displays (`lines`, `view`) use it
//! without importing each other.

use llmib_core::CellResult;

/// A session row's figures: total tok/s, TTFT p50, the cache hit rate measured / predicted,
/// turns completed, then why it is not Valid (its reason carries the cache note: caching
/// looks off, evictions) or its first error.
pub(crate) fn session_figures(r: &CellResult) -> String {
    let pct = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{:.1} %", x * 100.0));
    let s = &r.session;
    let mut t = format!(
        "{:>10} tok/s  TTFT {} ms  hit {} / {}  turns {}",
        r.total_tok_per_s.map_or("–".into(), |x| format!("{x:.1}")),
        r.ttft_ms_p50.map_or("–".into(), |x| format!("{x:.0}")),
        pct(s.cache_hit_rate.flatten()),
        pct(s.predicted_cache_hit_rate.flatten()),
        s.turns_completed
            .flatten()
            .map_or("–".into(), |n| n.to_string()),
    );
    let why = failed_why(r);
    if !why.is_empty() {
        t.push_str("  ");
        t.push_str(&why);
    }
    t
}

/// Why a row failed, or why some of its requests did: its first error, else its reason (a
/// stall inside a window fails a cell with a reason and no request error).
pub(crate) fn failed_why(r: &CellResult) -> String {
    r.first_error
        .clone()
        .or_else(|| r.status_reason.clone())
        .unwrap_or_default()
}
