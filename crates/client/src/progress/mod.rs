//! What a run tells the displays while it works: the typed progress protocol (`events`) and
//! the live atomics a window and an open-loop cell publish (`live`, with the latency histograms of
//! `latency`). A dashboard is fed by
//! these alone.
//!
//! May import: `server` (the gauges a live window shows) and `wire`. Never `cells`.

pub(crate) mod events;
pub(crate) mod latency;
pub(crate) mod live;
