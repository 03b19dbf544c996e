//! The notes under a report's tables: what a reader must see besides the seed's footnotes (an
//! unfinished run, dropped contexts, unreadable lines, `--serial-server`, early stops, a client
//! that ran late, the kernel's receive times, why each Failed cell failed, cells measured past
//! the KV capacity, cells whose GPUs did not hold their clocks, the run's own notes). Every
//! exporter prints the same list.

use crate::model::Report;
use llmib_core::{CellStatus, RunState};

impl Report {
    /// Notes a reader must see besides the seed's footnotes: an unfinished run, dropped contexts,
    /// unreadable lines, the run's own notes.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.info.state {
            RunState::Completed => {}
            RunState::Running => out.push(
                "This run had not finished when this report was written; missing cells show as Not run."
                    .to_string(),
            ),
            RunState::Interrupted => {
                out.push("This run was interrupted; cells after the stop show as Not run.".to_string())
            }
            RunState::Aborted => out.push(
                "This run was aborted after an error; cells after it show as Not run.".to_string(),
            ),
        }
        for d in &self.info.plan.dropped_contexts {
            out.push(format!("Context {} was not measured: {}", d.spec, d.reason));
        }
        for d in &self.info.plan.decode_dropped {
            out.push(format!("Context {}: {}", d.spec, d.reason));
        }
        if self.skipped_lines > 0 {
            out.push(format!(
                "{} line(s) of cells.jsonl could not be read (a write cut short) and are left out.",
                self.skipped_lines
            ));
        }
        if self.info.plan.settings.serial_server {
            out.push(
                "The server runs one request at a time (--serial-server): above 1 request at \
                 once, aggregate tok/s measures a queue, not concurrent decoding."
                    .to_string(),
            );
        }
        if self.info.plan.settings.respect_eos {
            out.push(self.early_stop_note());
        }
        out.extend(self.standard_note());
        out.extend(self.client_lag_note());
        out.extend(self.kernel_stamps_note());
        out.extend(self.failed_notes());
        out.extend(self.capacity_limited_note());
        out.extend(self.hardware_verdict_note());
        out.extend(self.info.notes.iter().cloned());
        out
    }

    /// A run of the standard matrix says which version, and what it fixes: its figures compare
    /// with other runs of the same version (`--standard`).
    fn standard_note(&self) -> Option<String> {
        let name = self.info.plan.settings.standard.as_deref()?;
        Some(match llmib_core::standard_matrix(name) {
            Ok(m) => format!(
                "This run follows the {} (--standard {name}): its cells compare with other runs of the same version; cells that do not fit this server are Over capacity or dropped, with their reason.",
                m.describe()
            ),
            Err(e) => format!(
                "This run says it follows a standard matrix this version of the tool does not know ({e})."
            ),
        })
    }

    /// The cells measured although predicted Over capacity (`--show-capacity-limited-values`).
    fn capacity_limited_note(&self) -> Option<String> {
        let cells: Vec<String> = self
            .cells
            .iter()
            .filter(|c| c.capacity_limited)
            .map(Self::cell_label)
            .collect();
        (!cells.is_empty()).then(|| {
            format!(
                "Measured although predicted over the KV capacity (--show-capacity-limited-values): {}. The server queues or preempts there; their figures are not those of cells that fit.",
                cells.join(", ")
            )
        })
    }

    /// Why each Failed cell failed (its first error, else its status reason): a table cell
    /// only says "Failed", and the reason was left in cells.jsonl.
    fn failed_notes(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter(|c| c.status == CellStatus::Failed)
            .map(|c| {
                let why = c
                    .first_error
                    .as_deref()
                    .or(c.status_reason.as_deref())
                    .unwrap_or("no reason recorded");
                format!("{} {} failed: {why}", c.phase.label(), Self::cell_label(c))
            })
            .collect()
    }

    /// With `--respect-eos`: which cells had requests that stopped before the max output.
    fn early_stop_note(&self) -> String {
        let early: Vec<String> = self
            .cells
            .iter()
            .filter_map(|c| {
                c.requests_stopped_early.map(|n| {
                    format!(
                        "{} {} × {} ({n})",
                        c.phase.label(),
                        Self::context_label(c),
                        c.concurrency
                    )
                })
            })
            .collect();
        let which = if early.is_empty() {
            "no request stopped early".to_string()
        } else {
            format!(
                "{} cell(s) had requests that stopped early: {}",
                early.len(),
                early.join(", ")
            )
        };
        format!(
            "Requests could end at the model's EOS (--respect-eos), so outputs are shorter \
             than the max output where the model stopped: {which}."
        )
    }

    /// The cells where the client itself ran late (None: none did).
    fn client_lag_note(&self) -> Option<String> {
        let late: Vec<String> = self
            .cells
            .iter()
            .filter(|c| c.client_lag.as_ref().is_some_and(|l| l.warning.is_some()))
            .map(|c| format!("{} × {}", Self::context_label(c), c.concurrency))
            .collect();
        (!late.is_empty()).then(|| {
        format!(
            "The client itself ran late in {} cell(s) ({}): one ready task in ten waited \
             over a tenth of a token gap (and 0.5 ms) for its turn, so their time-between-token figures \
             carry that error (cells.jsonl has each cell's delays under client_lag). Give \
             the client more CPU to measure them sharper.",
            late.len(),
            late.join(", ")
        )
    })
    }

    /// With the raw reader: how much the kernel's receive times corrected the decode cells'
    /// chunk instants, over every cell that recorded them (None: no cell did).
    fn kernel_stamps_note(&self) -> Option<String> {
        let stamps: Vec<&llmib_core::KernelStamps> = self
            .cells
            .iter()
            .filter_map(|c| c.client_lag.as_ref()?.kernel.as_ref())
            .collect();
        let total = llmib_core::KernelStamps::combined(stamps.iter().copied())?;
        let (mean_ms, max_ms) = (total.mean_correction_ms, total.max_correction_ms);
        let share = total.share() * 100.0;
        let mut note = format!(
            "Chunk instants are the kernel's receive times (the raw HTTP reader; {share:.1} % of \
             the body reads of {} decode cell(s)): they corrected the client's read instants by \
             {mean_ms:.2} ms on average, {max_ms:.2} ms at most (per cell: client_lag.kernel in \
             cells.jsonl).",
            stamps.len()
        );
        let short = stamps.iter().filter(|k| !k.covers()).count();
        if short > 0 {
            note.push_str(&format!(
                " In {short} cell(s) under {:.0} % of reads had one, so the client's lateness \
                 may still enter their time-between-token figures.",
                llmib_core::KERNEL_SHARE * 100.0
            ));
        }
        Some(note)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Report;
    use crate::model::tests::golden;
    use llmib_core::Phase;

    #[test]
    fn cells_where_the_client_ran_late_are_named_in_the_notes() {
        let mut run = golden();
        let mut delays: Vec<f64> = vec![0.1, 0.1, 5.0, 5.0, 5.0];
        let lag = llmib_core::client_lag(&mut delays, Some(5.2), None).expect("samples");
        assert!(lag.warning.is_some());
        let cell = run
            .cells
            .iter_mut()
            .find(|c| c.phase == Phase::Decode && c.concurrency == 64)
            .expect("a decode cell at 64");
        cell.client_lag = Some(lag);
        let label = Report::context_label(cell);
        let notes = Report::from_loaded(run).notes();
        let note = notes
            .iter()
            .find(|n| n.contains("ran late"))
            .expect("a note on the late client");
        assert!(
            note.contains(&format!("1 cell(s) ({label} × 64)")),
            "{note}"
        );
        assert!(
            !Report::from_loaded(golden())
                .notes()
                .iter()
                .any(|n| n.contains("ran late")),
            "no note without a warning"
        );
    }

    #[test]
    fn kernel_stamps_are_summed_over_the_cells_in_a_note() {
        let mut run = golden();
        let stamps = |pieces, kernel, mean, max| llmib_core::KernelStamps {
            pieces,
            kernel_pieces: kernel,
            mean_correction_ms: mean,
            max_correction_ms: max,
        };
        // 1000 reads corrected by 0.2 ms on average, 3000 by 0.6: 0.5 ms over the 4000.
        let both = [stamps(1000, 1000, 0.2, 1.5), stamps(3000, 3000, 0.6, 4.25)];
        let decode = run.cells.iter_mut().filter(|c| c.phase == Phase::Decode);
        for (cell, k) in decode.zip(both) {
            let mut delays = vec![0.1, 0.1, 5.0, 5.0, 5.0];
            let lag = llmib_core::client_lag(&mut delays, Some(5.2), Some(k)).expect("samples");
            assert_eq!(lag.warning, None, "every read kernel-stamped");
            cell.client_lag = Some(lag);
        }
        let notes = Report::from_loaded(run.clone()).notes();
        let note = notes
            .iter()
            .find(|n| n.starts_with("Chunk instants are the kernel's"))
            .expect("a note on the kernel stamps");
        assert!(
            note.contains("100.0 % of the body reads of 2 decode cell(s)"),
            "{note}"
        );
        assert!(
            note.contains("by 0.50 ms on average, 4.25 ms at most"),
            "{note}"
        );
        assert!(!note.contains("under 99 %"), "{note}");
        assert!(!notes.iter().any(|n| n.contains("ran late")), "{notes:?}");
        // A cell with too few: named, and its verdict is the probe's again.
        let cell = run
            .cells
            .iter_mut()
            .find(|c| c.client_lag.is_some())
            .expect("a cell with stamps");
        let mut delays = vec![0.1, 0.1, 5.0, 5.0, 5.0];
        cell.client_lag =
            llmib_core::client_lag(&mut delays, Some(5.2), Some(stamps(1000, 900, 0.2, 1.5)));
        let notes = Report::from_loaded(run).notes();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("In 1 cell(s) under 99 % of reads"))
        );
        assert!(notes.iter().any(|n| n.contains("ran late in 1 cell(s)")));
        assert!(
            !Report::from_loaded(golden())
                .notes()
                .iter()
                .any(|n| n.contains("kernel")),
            "no note without kernel stamps"
        );
    }
}
