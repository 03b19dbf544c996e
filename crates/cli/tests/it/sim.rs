//! Simulator suite: see crates/sim.
