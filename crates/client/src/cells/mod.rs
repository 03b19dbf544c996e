//! Running cells: the matrix (`run`, `matrix`), each kind of cell (prefill and burst in
//! `driver`, decode in `decode_cell`, open load in `load_section` and `open_loop`), the decode
//! window with its start and ramp (`window`, `ramp`, `warm`, `lagprobe`), varying lengths,
//! the pacer, and a shard's timetable. A new cell kind goes here.
//!
//! May import: every lower room (`wire`, `server`, `prompts`, `progress`, `machine`). Nothing
//! imports it but the crate's surface.

pub(crate) mod burst;
pub(crate) mod decode_cell;
pub(crate) mod driver;
pub(crate) mod lagprobe;
pub(crate) mod load_section;
pub(crate) mod matrix;
pub(crate) mod open_loop;
pub(crate) mod pacer;
pub(crate) mod ramp;
pub(crate) mod run;
pub(crate) mod shard;
pub(crate) mod skip;
pub(crate) mod varying;
pub(crate) mod warm;
pub(crate) mod window;
