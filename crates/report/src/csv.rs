//! CSV: one row per measurement, the seed's All-measurements columns with units in the headers,
//! generated from the same [`Column`] list as the tables. Values are unrounded numbers in the
//! header's unit (a spreadsheet should not parse `9,232.0`); null is an empty field. Columns
//! after the seed's carry the rest of the report: token-count source, the server's reported
//! prompt lengths and prefill rate, the Burst / E2E figures (with the steady-state sub-window's
//! output tok/s and length), and the open-loop figures (rate
//! cells and capacity rows: rates, failures, SLO attainment, goodput, capacity, and the rate
//! cells' latency, queue and pacing percentiles), speculative decoding per decode cell
//! (acceptance rate, tokens per step, and the client's own tokens per chunk), then the session
//! cells' own columns (turns completed, prompt, cached and predicted cached tokens, hit rates
//! measured and predicted, TPOT p50), empty on other rows.

use crate::model::Report;
use crate::table::{Column, Raw};
use crate::{Exporter, Format, ReportError};
use llmib_core::BurstFigures;
use llmib_core::CellResult;
use llmib_core::RateFigures;
use llmib_core::Summary;

/// The CSV exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

/// Quotes a field when RFC 4180 requires it (comma, quote, line break).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Exporter for CsvExporter {
    fn format(&self) -> Format {
        Format::Csv
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let mut out = String::new();
        let header: Vec<String> = Column::ALL
            .iter()
            .map(|c| field(c.csv_header()))
            .chain(EXTRA.iter().map(|(h, _)| field(h)))
            .collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for cell in &report.cells {
            let row: Vec<String> = Column::ALL
                .iter()
                .map(|col| col.raw(cell))
                .chain(EXTRA.iter().map(|(_, f)| f(cell)))
                .map(|raw| match raw {
                    Raw::Null => String::new(),
                    // `Display` of f64 is the shortest text that reads back to the same number.
                    Raw::Num(v) => v.to_string(),
                    Raw::Text(t) => field(&t),
                })
                .collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
        Ok(out)
    }
}

/// A column after the seed's: its header and its value.
type Extra = (&'static str, fn(&CellResult) -> Raw);

/// The columns after the seed's twelve: where each row's figures came from, the prompt
/// lengths the server reported, the server's own prefill rate, and the Burst / E2E figures
/// (empty on other rows), so that a spreadsheet holds every section of the report.
const EXTRA: &[Extra] = &[
    ("Token count source", |c| {
        c.token_count_source
            .map_or(Raw::Null, |s| Raw::Text(s.label().to_string()))
    }),
    ("Server prompt tokens min", |c| {
        Raw::int(c.prompt_check.as_ref().and_then(|p| p.reported_min))
    }),
    ("Server prompt tokens max", |c| {
        Raw::int(c.prompt_check.as_ref().and_then(|p| p.reported_max))
    }),
    ("Server prefill tok/s", |c| {
        Raw::num(c.server_prompt_tok_per_s)
    }),
    ("Burst requests/s", |c| {
        Raw::num(c.burst.as_ref().map(|b| b.requests_per_s))
    }),
    ("Burst E2E p50 (ms)", |c| {
        burst_ms(c, |b| b.e2e_ms.as_ref(), |s| s.p50)
    }),
    ("Burst E2E p90 (ms)", |c| {
        burst_ms(c, |b| b.e2e_ms.as_ref(), |s| s.p90)
    }),
    ("Burst TTFT p90 (ms)", |c| {
        burst_ms(c, |b| b.ttft_ms.as_ref(), |s| s.p90)
    }),
    ("Burst TTST p50 (ms)", |c| {
        burst_ms(c, |b| b.ttst_ms.as_ref(), |s| s.p50)
    }),
    ("Burst TBT p90 (ms)", |c| {
        burst_ms(c, |b| b.tbt_ms.as_ref(), |s| s.p90)
    }),
    ("Burst max-token hits", |c| {
        Raw::int(c.burst.as_ref().map(|b| b.max_token_hits))
    }),
    ("Burst wall time (s)", |c| {
        Raw::num(c.burst.as_ref().map(|b| b.wall_s))
    }),
    ("Burst steady tok/s", |c| {
        Raw::num(burst_steady(c).map(|s| s.output_tok_per_s))
    }),
    ("Burst steady window (s)", |c| {
        Raw::num(burst_steady(c).map(|s| s.duration_s))
    }),
    ("Request rate (req/s)", |c| Raw::num(c.request_rate)),
    ("Achieved request rate (req/s)", |c| {
        Raw::num(c.achieved_request_rate.flatten())
    }),
    ("Failed requests", |c| Raw::int(c.failed_requests.flatten())),
    ("SLO attainment", |c| Raw::num(c.slo_attainment.flatten())),
    ("Goodput (req/s)", |c| Raw::num(c.goodput_rps.flatten())),
    ("Goodput (tok/s)", |c| {
        Raw::num(c.goodput_tok_per_s.flatten())
    }),
    ("Capacity request rate (req/s)", |c| {
        Raw::num(c.capacity_request_rate.flatten())
    }),
    ("Capacity concurrency", |c| {
        Raw::int(c.capacity_concurrency.flatten().map(u64::from))
    }),
    ("Rate TTFT p99 (ms)", |c| {
        rate_at(c, |f| f.ttft_ms.as_ref(), |s| s.p99)
    }),
    ("Rate TPOT p50 (ms)", |c| {
        rate_at(c, |f| f.tpot_ms.as_ref(), |s| s.p50)
    }),
    ("Rate TPOT p99 (ms)", |c| {
        rate_at(c, |f| f.tpot_ms.as_ref(), |s| s.p99)
    }),
    ("Rate ITL p99 (ms)", |c| {
        rate_at(c, |f| f.itl_ms.as_ref(), |s| s.p99)
    }),
    ("Rate E2E p50 (ms)", |c| {
        rate_at(c, |f| f.e2e_ms.as_ref(), |s| s.p50)
    }),
    ("Rate E2E p90 (ms)", |c| {
        rate_at(c, |f| f.e2e_ms.as_ref(), |s| s.p90)
    }),
    ("Rate E2E p99 (ms)", |c| {
        rate_at(c, |f| f.e2e_ms.as_ref(), |s| s.p99)
    }),
    ("Rate queue p50 (ms)", |c| {
        rate_at(c, |f| f.queue_ms.as_ref(), |s| s.p50)
    }),
    ("Rate queue p99 (ms)", |c| {
        rate_at(c, |f| f.queue_ms.as_ref(), |s| s.p99)
    }),
    ("Rate pacing error p50 (us)", |c| {
        rate_at(c, |f| f.pacing_error_us.as_ref(), |s| s.p50)
    }),
    ("Rate pacing error p99 (us)", |c| {
        rate_at(c, |f| f.pacing_error_us.as_ref(), |s| s.p99)
    }),
    ("Pacing warning", |c| {
        c.rate
            .as_ref()
            .and_then(|f| f.pacing_warning.clone())
            .map_or(Raw::Null, Raw::Text)
    }),
    ("SLO", |c| {
        let slo = c
            .rate
            .as_ref()
            .and_then(|f| f.slo.as_ref().map(|s| s.slo.clone()));
        slo.or_else(|| c.capacity.as_ref().map(|f| f.slo.clone()))
            .map_or(Raw::Null, Raw::Text)
    }),
    ("Workload", |c| {
        workload_of(c).map_or(Raw::Null, |w| Raw::Text(w.source.clone()))
    }),
    ("Time scale", |c| {
        Raw::num(workload_of(c).and_then(|w| w.time_scale))
    }),
    ("Input length asked", |c| {
        workload_of(c).map_or(Raw::Null, |w| Raw::Text(w.input.requested.clone()))
    }),
    ("Input length p50", |c| {
        Raw::int(workload_of(c).map(|w| w.input.p50))
    }),
    ("Input length mean", |c| {
        Raw::num(workload_of(c).map(|w| w.input.mean))
    }),
    ("Input length KS", |c| {
        Raw::num(workload_of(c).and_then(|w| w.input.ks))
    }),
    ("Output length asked", |c| {
        workload_of(c).map_or(Raw::Null, |w| Raw::Text(w.output.requested.clone()))
    }),
    ("Output length p50", |c| {
        Raw::int(workload_of(c).map(|w| w.output.p50))
    }),
    ("Output length mean", |c| {
        Raw::num(workload_of(c).map(|w| w.output.mean))
    }),
    ("Output length KS", |c| {
        Raw::num(workload_of(c).and_then(|w| w.output.ks))
    }),
    ("Predicted cached tokens", |c| {
        Raw::int(workload_of(c).and_then(|w| w.predicted_cached_tokens))
    }),
    ("Stop reason", |c| {
        c.rate
            .as_ref()
            .and_then(|f| f.stop_reason)
            .map_or(Raw::Null, |r| {
                Raw::Text(crate::workload_view::stop_text(Some(r)))
            })
    }),
    ("Speculative accept rate", |c| {
        Raw::num(c.speculative.as_ref().and_then(|s| s.accept_rate))
    }),
    ("Speculative tokens per step", |c| {
        Raw::num(c.speculative.as_ref().and_then(|s| s.accept_length))
    }),
    ("Tokens per chunk", |c| Raw::num(c.tokens_per_chunk)),
    ("Session turns completed", |c| {
        Raw::int(c.session.turns_completed.flatten())
    }),
    ("Session prompt tokens", |c| {
        Raw::int(c.session.prompt_tokens.flatten())
    }),
    ("Session cached tokens", |c| {
        Raw::int(c.session.cached_tokens.flatten())
    }),
    ("Session predicted cached tokens", |c| {
        Raw::int(c.session.predicted_cached_tokens.flatten())
    }),
    ("Session cache hit rate", |c| {
        Raw::num(c.session.cache_hit_rate.flatten())
    }),
    ("Session predicted cache hit rate", |c| {
        Raw::num(c.session.predicted_cache_hit_rate.flatten())
    }),
    ("Session TPOT p50 (ms)", |c| {
        Raw::num(
            c.session
                .tpot_ms
                .as_ref()
                .and_then(Option::as_ref)
                .map(|s| s.p50),
        )
    }),
];

/// A rate row's workload figures, where its requests varied.
fn workload_of(c: &CellResult) -> Option<&llmib_core::WorkloadFigures> {
    c.rate.as_ref()?.workload.as_ref()
}

/// One percentile of one of a rate row's summaries.
fn rate_at(
    c: &CellResult,
    pick: fn(&RateFigures) -> Option<&Summary>,
    at: fn(&Summary) -> f64,
) -> Raw {
    Raw::num(c.rate.as_deref().and_then(pick).map(at))
}

/// One percentile of one of a burst row's summaries.
fn burst_ms(
    c: &CellResult,
    pick: fn(&BurstFigures) -> Option<&Summary>,
    at: fn(&Summary) -> f64,
) -> Raw {
    Raw::num(c.burst.as_ref().and_then(pick).map(at))
}

/// A Burst / E2E row's steady-state sub-window, where one opened.
fn burst_steady(c: &CellResult) -> Option<&llmib_core::SteadyFigures> {
    c.burst.as_ref()?.steady.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(field("Valid"), "Valid");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
