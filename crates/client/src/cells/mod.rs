//! Running cells. The path of a run reads down this list and back out:
//! - `run` (the entry) → `matrix` (the planned cells in order; the run's `context`), which
//!   gives each cell its `inputs` (prompts built and warmed, requests with their limits);
//! - the cell kinds, each returning its row: `prefill`, `decode_cell`, `burst`, and open load
//!   (`load_section` per context, its rate cells in `open_loop` on the `pacer`; `varying`
//!   lengths and workloads);
//! - the decode window (`window`, its start and ramp in `ramp`, the run's warm-ups in `warm`,
//!   the lateness probe `lagprobe`), which measures each request through `wire::stream`;
//! - `images`: the images each request carries under `run --images`, and the rows' image
//!   tokens;
//! - `lora`: the adapter each request names under `run --lora`, and the rows' figures per
//!   adapter;
//! - `structured`: the rows' counts of answers checked against `run --response-format` or
//!   `--tools` (valid, invalid, cut);
//! - `outlet`: records finished and rows saved on the way out; `telemetry`: each cell's
//!   hardware and server series recorded around it; `shard`: a shard's timetable
//!   (`session_shard`: a session cell's part on a shard); `skip`: the dashboard's skip switch.
//!
//! A new cell kind is a file here: a function given its inputs that returns its row.
//!
//! May import: every lower room (`wire`, `server`, `prompts`, `progress`, `machine`). Nothing
//! imports it but the crate's surface.

pub(crate) mod burst;
pub(crate) mod context;
pub(crate) mod decode_cell;
pub(crate) mod images;
pub(crate) mod inject;
pub(crate) mod inputs;
pub(crate) mod lagprobe;
pub(crate) mod load_section;
pub(crate) mod lora;
pub(crate) mod matrix;
pub(crate) mod mixed_cell;
pub(crate) mod open_loop;
pub(crate) mod outlet;
pub(crate) mod pacer;
pub(crate) mod prefill;
pub(crate) mod probe;
pub(crate) mod ramp;
pub(crate) mod rate_cell;
pub(crate) mod run;
pub(crate) mod section;
pub(crate) mod session_agent;
pub(crate) mod session_cell;
pub(crate) mod session_replay;
pub(crate) mod session_section;
pub(crate) mod session_shard;
pub(crate) mod session_turns;
pub(crate) mod settle;
pub(crate) mod shard;
pub(crate) mod skip;
pub(crate) mod state;
pub(crate) mod structured;
pub(crate) mod telemetry;
pub(crate) mod varying;
pub(crate) mod warm;
pub(crate) mod window;
