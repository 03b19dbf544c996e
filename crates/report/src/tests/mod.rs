//! Tests over whole reports (the golden seed run, compare, the JSON schema). They live inside
//! the crate, not in `tests/`, so that the workspace builds one integration-test binary only.

mod compare;
mod diagnostics;
mod golden;
pub(crate) mod load;
mod percentiles;
pub(crate) mod schema;
mod sessions;
mod shards;
mod spec_positions;
mod workload;
