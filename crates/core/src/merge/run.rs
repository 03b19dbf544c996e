//! A sharded run merged whole: every shard's results read from its directory, checked to be
//! every shard of one plan, then every cell merged in the plan's order by
//! [`super::merge_cell`] into the rows and `run.json` of one run.

use super::{DecodeMergeInputs, ShardPart, merge_cell};
use crate::cell::{CellKey, CellResult, CellStatus, Phase};
use crate::plan::{Plan, PlannedCell, plan_hash};
use crate::record::RequestRecord;
use crate::run::{RunInfo, RunState};
use crate::shard::{MergeError, ShardIdentity, check_shards};
use crate::timetable::ShardSchedule;
use crate::verdict::bare_result;
use std::collections::BTreeMap;

/// One shard's results, as read from its directory.
#[derive(Debug, Clone)]
pub struct ShardResults {
    /// The directory (named in messages).
    pub dir: String,
    /// Its `run.json`.
    pub info: RunInfo,
    /// Its rows (`cells.jsonl`).
    pub cells: Vec<CellResult>,
    /// Its records by cell (`requests.jsonl`), on its own clock.
    pub requests: BTreeMap<CellKey, Vec<RequestRecord>>,
    /// Its rate cells' schedules (`schedules.jsonl`).
    pub schedules: Vec<ShardSchedule>,
}

impl ShardResults {
    /// What [`crate::check_shards`] knows of it: directory, shard and plan identity.
    pub fn identity(&self) -> ShardIdentity {
        ShardIdentity {
            dir: self.dir.clone(),
            shard: self.info.plan.settings.shard,
            plan_hash: plan_hash(&self.info.plan),
        }
    }

    fn index(&self) -> u32 {
        self.info.plan.settings.shard.map_or(0, |s| s.index)
    }
}

/// One merged row with the records it was computed from (common clock, global indices).
#[derive(Debug, Clone)]
pub struct MergedCell {
    /// The row.
    pub row: CellResult,
    /// Its records.
    pub records: Vec<RequestRecord>,
}

/// A merged run: its `run.json` and its rows in the plan's order.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// Shard 0's `run.json`, unsharded, its timetable kept, with a note of the merge.
    pub info: RunInfo,
    /// Every row: the plan's cells in order, then the rate cells as shard 0's rows list them.
    pub cells: Vec<MergedCell>,
}

/// The cells of a merged run in order: the plan's (prefill and decode), then every other row
/// of shard 0 (the rate cells, which the plan does not list) in the order it wrote them.
fn merge_order(plan: &Plan, rows: &[CellResult]) -> Vec<PlannedCell> {
    let mut cells = plan.cells.clone();
    for r in rows {
        if !cells.iter().any(|c| c.key == r.key()) {
            cells.push(PlannedCell {
                key: r.key(),
                label: r.context_label.clone(),
                over_capacity: r.status == CellStatus::OverCapacity,
            });
        }
    }
    cells
}

/// Shard 0's `run.json` for the merged run: not a shard any more, the timetable kept, the
/// merge noted; finished only when every shard finished, over the shards' whole span.
fn merged_info(ordered: &[&ShardResults]) -> Option<RunInfo> {
    let mut info = ordered.first()?.info.clone();
    info.plan.settings.shard = None;
    info.notes
        .push(format!("merged from {} shards", ordered.len()));
    info.state = ordered
        .iter()
        .map(|s| s.info.state)
        .find(|s| *s != RunState::Completed)
        .unwrap_or(RunState::Completed);
    info.started_at = ordered
        .iter()
        .map(|s| s.info.started_at.clone())
        .min()
        .unwrap_or(info.started_at);
    info.finished_at = ordered
        .iter()
        .map(|s| s.info.finished_at.clone())
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().max());
    Some(info)
}

/// Merges every shard's results into one run: [`crate::check_shards`] first (every shard of
/// one plan, each once), then every cell by [`merge_cell`]. A shard that wrote no row for a
/// cell counts as Not run there.
pub fn merge_shards(shards: &[ShardResults]) -> Result<MergedRun, MergeError> {
    let ids: Vec<ShardIdentity> = shards.iter().map(ShardResults::identity).collect();
    check_shards(&ids)?;
    let mut ordered: Vec<&ShardResults> = shards.iter().collect();
    ordered.sort_by_key(|s| s.index());
    let info = merged_info(&ordered).ok_or(MergeError::Empty)?;
    let zero = ordered[0];
    let plan = &zero.info.plan;
    let mut warm: BTreeMap<u64, f64> = BTreeMap::new();
    let mut cells = Vec::new();
    for cell in merge_order(plan, &zero.cells) {
        let rows: Vec<CellResult> = ordered
            .iter()
            .map(|s| {
                s.cells
                    .iter()
                    .rev()
                    .find(|r| r.key() == cell.key)
                    .cloned()
                    .unwrap_or_else(|| {
                        let why = format!("shard {} wrote no row for this cell", s.index());
                        bare_result(&cell, CellStatus::NotRun, Some(why))
                    })
            })
            .collect();
        let parts: Vec<ShardPart<'_>> = ordered
            .iter()
            .zip(&rows)
            .map(|(s, row)| ShardPart {
                index: s.index(),
                row,
                records: s.requests.get(&cell.key).map_or(&[], Vec::as_slice),
                schedule: s.schedules.iter().rev().find(|x| x.cell == cell.key),
            })
            .collect();
        let inputs = DecodeMergeInputs {
            plan,
            warm_ttft_ms: warm.get(&cell.key.context_tokens).copied(),
        };
        let (row, records) = merge_cell(&cell, inputs, &parts);
        // As a one-machine run does: a context's N = 1 median TTFT is its warm TTFT.
        if cell.key.phase == Phase::Decode
            && cell.key.concurrency == 1
            && row.status == CellStatus::Valid
            && let Some(t) = &row.ttft_ms
        {
            warm.entry(cell.key.context_tokens).or_insert(t.p50);
        }
        cells.push(MergedCell { row, records });
    }
    Ok(MergedRun { info, cells })
}
