//! A cell's hardware verdict: whether the GPUs held their clocks while it was measured, read
//! from NVML's clock event reasons (`nvmlDeviceGetCurrentClocksEventReasons`, formerly
//! `…ThrottleReasons`; `nvidia-smi`'s `clocks_event_reasons.active`). The bits are NVML's
//! (`nvml.h`, `nvmlClocksEventReason*`), checked against the `nvml-wrapper-sys` bindings.
//!
//! The rule (docs/method-notes.md, "Telemetry"): a sample shows a reason when any GPU reports
//! it; a reason class counts when at least [`VERDICT_MIN_FRACTION`] of the samples that
//! report reasons show it, and at least [`VERDICT_MIN_SAMPLES`] of them (one reading taken
//! during a clock change is no throttled cell). Of the classes that count, the most severe
//! is the verdict: a hardware slowdown, then thermal, then a power cap.

use serde::{Deserialize, Serialize};

/// NVML's clock event reasons bitmask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockEvents(pub u64);

impl ClockEvents {
    /// Nothing runs on the GPU (not a slowdown: an idle GPU lowers its clocks).
    pub const GPU_IDLE: u64 = 0x1;
    /// The clocks are held by the applications clocks setting.
    pub const APPLICATIONS_CLOCKS: u64 = 0x2;
    /// Software power scaling is lowering the clocks (the board is at its power limit).
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Hardware slowdown (clocks cut by 2× or more): temperature, an external power brake,
    /// or power draw too high.
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Held down by another GPU of its sync boost group.
    pub const SYNC_BOOST: u64 = 0x10;
    /// Software thermal slowdown: the GPU or its memory is above its operating temperature.
    pub const SW_THERMAL: u64 = 0x20;
    /// Hardware thermal slowdown: the GPU is too hot (clocks cut by 2× or more).
    pub const HW_THERMAL: u64 = 0x40;
    /// Hardware power brake: an external power brake assertion (the power supply).
    pub const HW_POWER_BRAKE: u64 = 0x80;
    /// Held by the display clock setting.
    pub const DISPLAY_CLOCKS: u64 = 0x100;

    /// The most severe verdict class this mask shows (`Ok` for none, idle, or the clock
    /// settings a user chose).
    pub fn class(self) -> HardwareVerdict {
        let b = self.0;
        if b & (Self::HW_SLOWDOWN | Self::HW_POWER_BRAKE) != 0 {
            HardwareVerdict::HardwareSlowdown
        } else if b & (Self::SW_THERMAL | Self::HW_THERMAL) != 0 {
            HardwareVerdict::Thermal
        } else if b & Self::SW_POWER_CAP != 0 {
            HardwareVerdict::PowerCapped
        } else {
            HardwareVerdict::Ok
        }
    }

    /// Whether the mask shows `class` (among others).
    pub fn shows(self, class: HardwareVerdict) -> bool {
        let b = self.0;
        match class {
            HardwareVerdict::Ok => true,
            HardwareVerdict::PowerCapped => b & Self::SW_POWER_CAP != 0,
            HardwareVerdict::Thermal => b & (Self::SW_THERMAL | Self::HW_THERMAL) != 0,
            HardwareVerdict::HardwareSlowdown => {
                b & (Self::HW_SLOWDOWN | Self::HW_POWER_BRAKE) != 0
            }
        }
    }
}

/// Whether the GPUs held their clocks through a cell (a row's `hardware_verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HardwareVerdict {
    /// No slowdown reason held for long.
    Ok,
    /// The boards were at their power limit: software power capping lowered the clocks.
    PowerCapped,
    /// A GPU (or its memory) was too hot: thermal slowdown, software or hardware.
    Thermal,
    /// A hardware slowdown or power brake cut the clocks by 2× or more.
    HardwareSlowdown,
}

impl HardwareVerdict {
    /// In words, as the report prints it.
    pub fn label(self) -> &'static str {
        match self {
            HardwareVerdict::Ok => "ok",
            HardwareVerdict::PowerCapped => "power capped",
            HardwareVerdict::Thermal => "thermal",
            HardwareVerdict::HardwareSlowdown => "hardware slowdown",
        }
    }
}

/// The share of a cell's samples that must show a reason class for it to count.
pub const VERDICT_MIN_FRACTION: f64 = 0.10;

/// The fewest samples that must show a reason class for it to count.
pub const VERDICT_MIN_SAMPLES: usize = 2;

/// The verdict of a cell from its samples' clock event reasons, each the OR over its GPUs
/// (`None`: no GPU reported reasons in that sample). `None` when no sample reported any
/// (no GPU, or a source without the field): then nothing is known either way.
pub fn hardware_verdict(samples: &[Option<u64>]) -> Option<HardwareVerdict> {
    let known: Vec<ClockEvents> = samples.iter().flatten().map(|b| ClockEvents(*b)).collect();
    if known.is_empty() {
        return None;
    }
    let needed =
        ((known.len() as f64 * VERDICT_MIN_FRACTION).ceil() as usize).max(VERDICT_MIN_SAMPLES);
    let worst_first = [
        HardwareVerdict::HardwareSlowdown,
        HardwareVerdict::Thermal,
        HardwareVerdict::PowerCapped,
    ];
    let verdict = worst_first
        .into_iter()
        .find(|class| known.iter().filter(|m| m.shows(*class)).count() >= needed)
        .unwrap_or(HardwareVerdict::Ok);
    Some(verdict)
}
