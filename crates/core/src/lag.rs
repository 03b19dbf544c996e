//! The client's own lateness during a window, and what it means for the figures.
//!
//! A chunk is stamped when the client's task reads it, not when it reached the socket. When the
//! client's process is short of CPU (a loaded host, a server on the same cores, too many
//! streams for the client's threads) a woken stream waits for its turn, and its stamp is late
//! by that wait. Rates over many tokens (total and per-request tok/s) barely move, since the
//! error is one wait at each end of a long span; a single time between tokens moves by the whole
//! difference of two waits, and its median can shift by a large part of that. So the client
//! measures its own scheduling delay through the window (a probe that yields and times how long
//! it waits to run again) and says so when that delay is large against the TBT it measured.
//!
//! With the raw HTTP reader (the default on `http://`, `--http-reader auto|raw`) a chunk is
//! stamped with the kernel's receive time instead, which the client's lateness does not enter:
//! the window then records how many of its chunks had one and how far those moved the read
//! instants ([`KernelStamps`]), and the warning is kept for windows where too few chunks had
//! one ([`KERNEL_SHARE`]).

use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// The scheduling-delay samples of one window, summarised, and the verdict on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientLag {
    /// The client's scheduling delay, ms: how long a task that was ready waited to run.
    pub delay_ms: Summary,
    /// Why the cell's time-between-token figures may carry the client's lateness (`None`: the
    /// delay was small against them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// How the window's chunk instants were taken, where the raw reader stamped them with the
    /// kernel's receive time (`None`: the reqwest reader, every instant is the client's read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelStamps>,
}

/// The raw reader's body pieces over one window: how many had the kernel's receive time, and
/// how far those times moved the client's read instants (how late the reads were).
///
/// The pieces are those of the responses that ended between the window's streams starting
/// and their stop (every response whose chunks the window's records hold, its ramp included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KernelStamps {
    /// Body pieces read (a piece holds one or more chunks read together).
    pub pieces: u64,
    /// Pieces stamped with the kernel's receive time; the rest carry the read's instant.
    pub kernel_pieces: u64,
    /// Mean of (read instant − kernel receive time) over the kernel-stamped pieces, ms: the
    /// client's lateness the kernel's stamps took out of the chunk instants (0 without any).
    pub mean_correction_ms: f64,
    /// The largest such correction, ms.
    pub max_correction_ms: f64,
}

impl KernelStamps {
    /// The share of pieces with a kernel receive time (0 when none was read).
    pub fn share(&self) -> f64 {
        if self.pieces == 0 {
            0.0
        } else {
            self.kernel_pieces as f64 / self.pieces as f64
        }
    }

    /// Whether (nearly) every piece had a kernel receive time ([`KERNEL_SHARE`]).
    pub fn covers(&self) -> bool {
        self.pieces > 0 && self.share() >= KERNEL_SHARE
    }

    /// Several windows' stamps as one: the pieces added up, the mean over every kernel-stamped
    /// piece (each window's mean weighted by its count), the largest correction; `None` for
    /// no window.
    pub fn combined<'a>(all: impl IntoIterator<Item = &'a KernelStamps>) -> Option<KernelStamps> {
        let mut total: Option<KernelStamps> = None;
        let mut sum_ms = 0.0;
        for k in all {
            let t = total.get_or_insert(KernelStamps {
                pieces: 0,
                kernel_pieces: 0,
                mean_correction_ms: 0.0,
                max_correction_ms: 0.0,
            });
            t.pieces += k.pieces;
            t.kernel_pieces += k.kernel_pieces;
            t.max_correction_ms = t.max_correction_ms.max(k.max_correction_ms);
            sum_ms += k.mean_correction_ms * k.kernel_pieces as f64;
        }
        let mut t = total?;
        if t.kernel_pieces > 0 {
            t.mean_correction_ms = sum_ms / t.kernel_pieces as f64;
        }
        Some(t)
    }
}

/// The share of the TBT median above which the client's p90 delay is worth a warning: when one
/// stamp in ten is late by a tenth of a gap or more, the gaps on either side of it move by as
/// much, and the TBT tail (and, on a noisy host, the median by a part of it) with them. Bursts
/// of chunks from one server step are read one after another, so some delay is normal at high
/// concurrency; a tenth of a gap is where it starts to show in the figures.
pub const WARN_SHARE_OF_TBT: f64 = 0.10;

/// Below this p90 delay (ms) no warning is given whatever the TBT: a sub-millisecond wait is
/// below what a TBT is read to.
pub const WARN_FLOOR_MS: f64 = 0.5;

/// The share of a window's pieces that must carry the kernel's receive time for its TBT to be
/// free of the client's lateness. A gap moves when either of its two instants is a late read,
/// so with at most 1 % of instants read-stamped at most 2 % of gaps move: too few to shift the
/// TBT median or p90 (the figures the warning is about), only the tail beyond the p98. Below
/// it, the read-stamped instants are the ones a busy client delays (a stamp is missing when
/// the kernel's message was not there), so the probe's verdict stands.
pub const KERNEL_SHARE: f64 = 0.99;

/// Time between the client-lag probe's samples while the window's chunk instants are the
/// client's reads (no raw reader, or a piece without the kernel's receive time came since the
/// last sample): 100 samples a second, enough for the p90 the verdict reads over any window.
pub const PROBE_EVERY_MS: u64 = 10;

/// Time between the probe's samples while the raw reader stamps every piece with the kernel's
/// receive time: the verdict then does not read the probe (`lag_verdict`) and its samples
/// only say how late the client ran (`delay_ms`), for which 4 a second (the gauges' pace: 40
/// in a 10 s window) are enough. Each sample wakes the client's runtime (a timer, a yield, a
/// wake of its I/O driver): the overhead bench put 100 a second at 8.9 ms of CPU per second on
/// an idle runtime, the largest of the client's fixed costs (issue 44), 10 a second at 1.5.
pub const PROBE_EVERY_COVERED_MS: u64 = 250;

/// The probe's period until its next sample, from the raw reader's count of pieces read
/// without a kernel time at the previous sample and now (`unstamped`; `None`: no raw reader,
/// every instant is a read's): the slow period while that count did not move, the fast one
/// as soon as it did. A window whose pieces all carry a kernel time is judged without the
/// probe; one where some do not is judged by its samples, fast from the first sample after the
/// first such piece (at most one slow period later).
pub fn probe_period_ms(unstamped: Option<(u64, u64)>) -> u64 {
    match unstamped {
        Some((before, now)) if now == before => PROBE_EVERY_COVERED_MS,
        _ => PROBE_EVERY_MS,
    }
}

/// Summarises `samples_ms` (the probe's delays) and judges them against the cell's TBT median
/// and how its chunk instants were taken (`kernel`: see `lag_verdict`); `None` without
/// samples.
pub fn client_lag(
    samples_ms: &mut Vec<f64>,
    tbt_p50_ms: Option<f64>,
    kernel: Option<KernelStamps>,
) -> Option<ClientLag> {
    let delay_ms = Summary::of_vec(samples_ms)?;
    let warning = lag_verdict(delay_ms.p90, tbt_p50_ms, kernel.as_ref());
    Some(ClientLag {
        delay_ms,
        warning,
        kernel,
    })
}

/// The warning for a window: none when (nearly) every chunk instant was the kernel's receive
/// time ([`KernelStamps::covers`]: the client's lateness did not enter them, however late it
/// ran); otherwise [`lag_warning`]'s, which, where a kernel stamp source was there but too few
/// chunks had one, says what share did. Without kernel stamps (`None`) it is [`lag_warning`].
pub fn lag_verdict(
    p90_ms: f64,
    tbt_p50_ms: Option<f64>,
    kernel: Option<&KernelStamps>,
) -> Option<String> {
    match kernel {
        None => lag_warning(p90_ms, tbt_p50_ms),
        Some(k) if k.covers() => None,
        Some(k) => lag_warning(p90_ms, tbt_p50_ms).map(|w| {
            format!(
                "{w} (only {:.1} % of its body reads, {} of {}, had the kernel's receive time; \
                 the rest carry the client's read instant)",
                k.share() * 100.0,
                k.kernel_pieces,
                k.pieces
            )
        }),
    }
}

/// The warning for a p90 scheduling delay of `p90_ms` against a TBT median of `tbt_p50_ms`:
/// given when the delay passes both [`WARN_FLOOR_MS`] and [`WARN_SHARE_OF_TBT`] of the TBT (a
/// cell without a TBT is judged by the floor alone).
pub fn lag_warning(p90_ms: f64, tbt_p50_ms: Option<f64>) -> Option<String> {
    let tbt = tbt_p50_ms.filter(|t| t.is_finite() && *t > 0.0);
    let limit = tbt.map_or(WARN_FLOOR_MS, |t| {
        (t * WARN_SHARE_OF_TBT).max(WARN_FLOOR_MS)
    });
    if !p90_ms.is_finite() || p90_ms <= limit {
        return None;
    }
    let against = match tbt {
        Some(t) => format!(
            " against a TBT median of {t:.2} ms ({:.0} %)",
            p90_ms / t * 100.0
        ),
        None => String::new(),
    };
    Some(format!(
        "the client ran late: one ready task in ten waited {p90_ms:.2} ms or more (p90) for its turn{against}, \
         so its time-between-token figures carry that error (rates over whole requests much less); \
         give the client more CPU (fewer other jobs, or run it on another host)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_delays_against_the_tbt_give_no_warning() {
        // 2 ms against 24 ms is 8.3 %: under the 10 % share.
        assert_eq!(lag_warning(2.0, Some(24.0)), None);
        // Against 4 ms the floor of 0.5 ms decides (10 % would be 0.4 ms).
        assert_eq!(lag_warning(0.45, Some(4.0)), None);
        assert_eq!(lag_warning(0.45, None), None);
    }

    #[test]
    fn large_delays_warn_and_say_by_how_much() {
        let w = lag_warning(3.6, Some(24.0)).expect("a warning");
        assert!(w.contains("3.60 ms or more (p90)"), "{w}");
        assert!(w.contains("24.00 ms (15 %)"), "{w}");
        assert!(
            lag_warning(0.6, Some(4.0)).is_some(),
            "over the floor and the share"
        );
        assert!(lag_warning(0.6, None).is_some());
        assert_eq!(lag_warning(f64::NAN, Some(5.0)), None);
    }

    #[test]
    fn the_summary_keeps_the_distribution_and_judges_its_p90() {
        // 85 short waits and 15 of 9 ms: the p90 is 9 ms, 37 % of a 24 ms gap.
        let mut v: Vec<f64> = (0..100).map(|i| if i < 85 { 0.1 } else { 9.0 }).collect();
        let l = client_lag(&mut v, Some(24.0), None).expect("samples");
        assert_eq!(l.delay_ms.n, 100);
        assert!((l.delay_ms.p50 - 0.1).abs() < 1e-9);
        assert!((l.delay_ms.p90 - 9.0).abs() < 1e-9, "{:?}", l.delay_ms);
        assert!(l.warning.is_some());
        // 95 short waits: the p90 is short, the 9 ms tail alone is no warning.
        let mut v: Vec<f64> = (0..100).map(|i| if i < 95 { 0.1 } else { 9.0 }).collect();
        assert_eq!(
            client_lag(&mut v, Some(24.0), None)
                .expect("samples")
                .warning,
            None
        );
        assert_eq!(client_lag(&mut Vec::new(), Some(24.0), None), None);
    }

    /// A window of `pieces` pieces, `kernel` of them kernel-stamped.
    fn stamps(pieces: u64, kernel: u64) -> KernelStamps {
        KernelStamps {
            pieces,
            kernel_pieces: kernel,
            mean_correction_ms: 1.5,
            max_correction_ms: 12.0,
        }
    }

    /// 85 short waits and 15 of 9 ms: a p90 of 9 ms, a warning against a 24 ms TBT.
    fn late_samples() -> Vec<f64> {
        (0..100).map(|i| if i < 85 { 0.1 } else { 9.0 }).collect()
    }

    #[test]
    fn windows_combine_by_their_reads() {
        assert_eq!(KernelStamps::combined([]), None);
        let a = KernelStamps {
            pieces: 100,
            kernel_pieces: 100,
            mean_correction_ms: 1.0,
            max_correction_ms: 4.0,
        };
        let b = KernelStamps {
            pieces: 400,
            kernel_pieces: 300,
            mean_correction_ms: 3.0,
            max_correction_ms: 2.0,
        };
        let c = KernelStamps::combined([&a, &b]).expect("two windows");
        assert_eq!((c.pieces, c.kernel_pieces), (500, 400));
        // (100 × 1 + 300 × 3) / 400.
        assert!((c.mean_correction_ms - 2.5).abs() < 1e-12, "{c:?}");
        assert_eq!(c.max_correction_ms, 4.0);
        assert!((c.share() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn kernel_instants_on_every_chunk_take_the_warning_away() {
        let l =
            client_lag(&mut late_samples(), Some(24.0), Some(stamps(1000, 1000))).expect("samples");
        assert_eq!(l.warning, None);
        assert_eq!(l.kernel, Some(stamps(1000, 1000)));
        // The delay is still recorded: the client did run late, it only no longer shows.
        assert!((l.delay_ms.p90 - 9.0).abs() < 1e-9);
        // 99 % is enough (990 of 1000), 98.9 % is not.
        assert_eq!(lag_verdict(9.0, Some(24.0), Some(&stamps(1000, 990))), None);
        assert!(lag_verdict(9.0, Some(24.0), Some(&stamps(1000, 989))).is_some());
    }

    #[test]
    fn too_few_kernel_instants_keep_the_warning_and_say_the_share() {
        let l =
            client_lag(&mut late_samples(), Some(24.0), Some(stamps(1000, 900))).expect("samples");
        let w = l.warning.expect("a warning");
        assert!(w.starts_with("the client ran late"), "{w}");
        assert!(w.contains("9.00 ms or more (p90)"), "{w}");
        assert!(
            w.contains("(only 90.0 % of its body reads, 900 of 1000, had the kernel's"),
            "{w}"
        );
        // A stamp source that gave none (or read nothing): 0 %, the warning stands.
        let w = lag_verdict(9.0, Some(24.0), Some(&stamps(0, 0))).expect("a warning");
        assert!(w.contains("only 0.0 % of its body reads, 0 of 0,"), "{w}");
        // A small delay is no warning whatever the stamps.
        assert_eq!(lag_verdict(2.0, Some(24.0), Some(&stamps(1000, 900))), None);
    }

    #[test]
    fn the_probe_slows_only_while_every_piece_has_a_kernel_time() {
        // No raw reader: every instant is a read's.
        assert_eq!(probe_period_ms(None), PROBE_EVERY_MS);
        // The raw reader, no piece without a kernel time since the last sample.
        assert_eq!(probe_period_ms(Some((0, 0))), PROBE_EVERY_COVERED_MS);
        assert_eq!(probe_period_ms(Some((7, 7))), PROBE_EVERY_COVERED_MS);
        // One piece read without one: fast again from this sample.
        assert_eq!(probe_period_ms(Some((7, 8))), PROBE_EVERY_MS);
        assert_eq!(PROBE_EVERY_MS, 10);
        assert_eq!(PROBE_EVERY_COVERED_MS, 250);
    }

    #[test]
    fn without_kernel_stamps_the_verdict_is_the_probe_alone() {
        for (p90, tbt) in [
            (9.0, Some(24.0)),
            (2.0, Some(24.0)),
            (0.6, None),
            (0.45, None),
        ] {
            assert_eq!(lag_verdict(p90, tbt, None), lag_warning(p90, tbt));
        }
        let l = client_lag(&mut late_samples(), Some(24.0), None).expect("samples");
        assert_eq!(l.warning, lag_warning(9.0, Some(24.0)));
        assert_eq!(l.kernel, None);
        // Serialised without the field, and an old row (no `kernel`) still loads.
        let json = serde_json::to_string(&l).expect("json");
        assert!(!json.contains("kernel"), "{json}");
        let back: ClientLag = serde_json::from_str(&json).expect("loads");
        assert_eq!(back, l);
    }
}
