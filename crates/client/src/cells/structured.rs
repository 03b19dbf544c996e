//! Structured output in the cells (`run --response-format`, `--tools`;
//! docs/structured-output.md): a row's counts of checked, valid, invalid and cut answers, from
//! the verdicts its records carry (each request's answer was judged when its stream ended).
//! The row's status is left as its figures make it: an answer that breaks the schema says
//! something of the model and the server's grammar, not of the measurement.

use crate::cells::context::MatrixRun;
use llmib_core::{CellResult, RequestRecord, structured_figures};

/// Puts the counts in a row that has figures, when the run checks answers.
pub(crate) fn set(m: &MatrixRun<'_>, row: &mut CellResult, records: &[RequestRecord]) {
    let Some(spec) = &m.plan.settings.request.structured else {
        return;
    };
    if row.status.has_figures() {
        row.structured = Some(Box::new(structured_figures(spec, records)));
    }
}
