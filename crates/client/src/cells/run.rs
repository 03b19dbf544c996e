//! One run: the matrix's planned cells in order (`crate::cells::matrix`), then each context's
//! open-load section (`crate::cells::load_section`), which comes after the whole matrix so that a
//! context's capacity row can use its decode cells, then each context's session section
//! (`crate::cells::session_section`), whose TTFT split uses the context's prefill row.

use crate::cells::context::{DriverError, MatrixEnd, MatrixRun};
use crate::cells::load_section;
use crate::cells::session_section;
use crate::cells::state::RunState;
use crate::cells::warm;
use crate::progress::events::ProgressEvent;
use tokio::time::Instant;

/// Runs the matrix, then the open-load sections; saves every row as soon as it is known.
pub async fn run_matrix(m: MatrixRun<'_>) -> Result<MatrixEnd, DriverError> {
    let started = Instant::now();
    // Said where the run prints, not only in the reports: a context the user asked for that
    // does not run, with the flag that would make it fit.
    for d in &m.plan.dropped_contexts {
        m.progress.event(ProgressEvent::Note(format!(
            "context {} not run: {}",
            d.spec, d.reason
        )));
    }
    for d in &m.plan.decode_dropped {
        m.progress.event(ProgressEvent::Note(format!(
            "context {}: {}",
            d.spec, d.reason
        )));
    }
    let mut st = RunState::new(&m);
    if let Some(context) = m.first_measured_context() {
        warm::warm_up_once(&m, &mut st, context).await;
    }
    let mut end = crate::cells::matrix::run_cells(&m, &mut st, started).await?;
    open_load(&m, &mut st, &mut end, started).await?;
    if m.plan.settings.sessions.is_some() {
        if !st.hidden_warmup_done
            && end == MatrixEnd::Completed
            && let Some(c) = llmib_core::session_contexts(m.plan).0.first()
        {
            warm::warm_up_once(&m, &mut st, c.tokens).await;
        }
        let stop = || m.stop_reason(started);
        session_section::run_session_sections(&m, &mut st.builder, &mut end, stop).await?;
    }
    Ok(end)
}

/// The open-load sections after the matrix (`crate::cells::load_section`). A run of open load alone
/// gets the hidden warm-up first: the server's one-off costs belong to no rate cell either.
async fn open_load(
    m: &MatrixRun<'_>,
    st: &mut RunState,
    end: &mut MatrixEnd,
    started: Instant,
) -> Result<(), DriverError> {
    let first_load_context = m.plan.contexts.iter().find(|c| c.decode);
    if let (Some(_), Some(c)) = (&m.plan.settings.load, first_load_context)
        && !st.hidden_warmup_done
        && *end == MatrixEnd::Completed
    {
        warm::warm_up_once(m, st, c.tokens).await;
    }
    let stop = || m.stop_reason(started);
    load_section::run_load_sections(m, &mut st.builder, end, stop).await
}
