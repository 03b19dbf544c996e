//! Which merge a cell gets, by its phase: apart from merge.rs so that the session cells'
//! merge (`session.rs`, which uses merge.rs's parts) and the others' are chosen in one place
//! without the two files importing each other.

use super::session::merge_session_cell;
use super::{
    DecodeMergeInputs, ShardPart, first, merge_copied_row, merge_decode_cell, merge_rate_cell,
};
use crate::cell::{CellResult, CellStatus, Phase};
use crate::plan::PlannedCell;
use crate::record::RequestRecord;

/// The merged row of one cell, by its phase: decode, rate and session cells are recomputed
/// from the union, every other row (prefill, Over capacity on shard 0) is copied.
pub fn merge_cell(
    cell: &PlannedCell,
    inputs: DecodeMergeInputs<'_>,
    parts: &[ShardPart<'_>],
) -> (CellResult, Vec<RequestRecord>) {
    let over = first(parts).is_some_and(|p| p.row.status == CellStatus::OverCapacity);
    match cell.key.phase {
        Phase::Decode if !over => merge_decode_cell(cell, inputs, parts),
        Phase::Rate if !over => merge_rate_cell(cell, inputs.plan, parts),
        Phase::Session if !over => merge_session_cell(cell, inputs.plan, parts),
        _ => merge_copied_row(cell, parts),
    }
}
