//! The capacity search of a context (METHOD.md, "Open-loop rate cells"): the largest request
//! rate whose cell holds the SLO, found by bracketing (doubling up from a start rate, or halving
//! down) and then bisecting until the bracket is within a stated precision. One pure step
//! function: the driver measures the rate it names, appends the point and asks again, so every
//! measured point is kept and the decision is tested without a server.
//!
//! A server need not be monotone (a cell can hold at a rate above one that failed, by noise):
//! the bracket is the smallest failing rate and the largest holding rate below it, so the answer
//! is never a rate above one that failed.

/// One measured rate cell: its rate and whether it held the SLO.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatePoint {
    /// Requests per second asked for.
    pub rate: f64,
    /// Whether the cell held every limit of the SLO.
    pub holds: bool,
}

/// The search's bounds and precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchBounds {
    /// The first rate measured (the sweep's synchronous rate is a good start).
    pub start: f64,
    /// Stop when (failing − holding) / holding is at most this (0.05 = 5 %).
    pub precision: f64,
    /// Never measure above this rate (the client's pacing limit, or the user's).
    pub ceiling: f64,
    /// Never measure below this rate: under it, "no rate meets the SLO".
    pub floor: f64,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SearchStep {
    /// Measure a cell at this rate, then ask again with it appended.
    Measure(f64),
    /// The search is over.
    Done(Capacity),
}

/// The answer of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Capacity {
    /// The largest holding rate, within the precision of the smallest failing one above it.
    Found {
        /// The largest rate that held.
        rate: f64,
        /// The smallest rate above it that failed.
        failed_at: f64,
    },
    /// Every rate up to the ceiling held: capacity is at least the ceiling.
    AtLeast {
        /// The largest rate measured (the ceiling).
        rate: f64,
    },
    /// Even the floor failed: no rate meets the SLO.
    None,
}

/// The next step of the search over the points measured so far.
pub fn next_step(points: &[RatePoint], b: SearchBounds) -> SearchStep {
    let failed = points
        .iter()
        .filter(|p| !p.holds)
        .map(|p| p.rate)
        .min_by(f64::total_cmp);
    let held = points
        .iter()
        .filter(|p| p.holds && failed.is_none_or(|f| p.rate < f))
        .map(|p| p.rate)
        .max_by(f64::total_cmp);
    match (held, failed) {
        // Everything so far held: double, up to the ceiling.
        (Some(h), None) if h >= b.ceiling => SearchStep::Done(Capacity::AtLeast { rate: h }),
        (Some(h), None) => SearchStep::Measure((h * 2.0).min(b.ceiling)),
        // Nothing held below the lowest failure: halve, down to the floor.
        (None, Some(f)) if f <= b.floor => SearchStep::Done(Capacity::None),
        (None, Some(f)) => SearchStep::Measure((f / 2.0).max(b.floor)),
        (Some(h), Some(f)) if (f - h) / h <= b.precision => SearchStep::Done(Capacity::Found {
            rate: h,
            failed_at: f,
        }),
        (Some(h), Some(f)) => SearchStep::Measure((h + f) / 2.0),
        // Nothing measured yet (any point is either held or failed).
        (None, None) => SearchStep::Measure(b.start.clamp(b.floor, b.ceiling)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: SearchBounds = SearchBounds {
        start: 10.0,
        precision: 0.05,
        ceiling: 1000.0,
        floor: 0.1,
    };

    /// Runs the search against a server whose cells hold iff `holds(rate)`; returns the
    /// answer and every rate measured.
    fn search(holds: impl Fn(f64) -> bool, b: SearchBounds) -> (Capacity, Vec<f64>) {
        let mut points = Vec::new();
        for _ in 0..100 {
            match next_step(&points, b) {
                SearchStep::Measure(rate) => points.push(RatePoint {
                    rate,
                    holds: holds(rate),
                }),
                SearchStep::Done(c) => return (c, points.iter().map(|p| p.rate).collect()),
            }
        }
        panic!("the search did not end: {points:?}");
    }

    #[test]
    fn brackets_up_then_bisects_to_the_precision() {
        let (c, rates) = search(|r| r <= 37.0, BOUNDS);
        let Capacity::Found { rate, failed_at } = c else {
            panic!("{c:?}")
        };
        assert!(rate <= 37.0 && failed_at > 37.0, "{rate} {failed_at}");
        assert!((failed_at - rate) / rate <= 0.05);
        // 10, 20, 40 bracket it; then bisection: 30, 35, 37.5 (fails), 36.25 (holds), and
        // 36.25 → 37.5 is within 5 %.
        assert_eq!(rates, vec![10.0, 20.0, 40.0, 30.0, 35.0, 37.5, 36.25]);
        assert_eq!(
            c,
            Capacity::Found {
                rate: 36.25,
                failed_at: 37.5
            }
        );
    }

    #[test]
    fn brackets_down_when_the_start_fails() {
        let (c, rates) = search(|r| r <= 1.3, BOUNDS);
        let Capacity::Found { rate, failed_at } = c else {
            panic!("{c:?}")
        };
        assert!(rate <= 1.3 && failed_at > 1.3 && (failed_at - rate) / rate <= 0.05);
        assert_eq!(&rates[..4], &[10.0, 5.0, 2.5, 1.25]);
    }

    #[test]
    fn no_rate_meets_the_slo_when_the_floor_fails() {
        let (c, rates) = search(|_| false, BOUNDS);
        assert_eq!(c, Capacity::None);
        assert_eq!(rates.last(), Some(&0.1), "the floor itself was measured");
    }

    #[test]
    fn a_server_that_holds_everything_stops_at_the_ceiling() {
        let (c, rates) = search(|_| true, BOUNDS);
        assert_eq!(c, Capacity::AtLeast { rate: 1000.0 });
        assert_eq!(
            rates,
            vec![10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1000.0]
        );
    }

    #[test]
    fn a_noisy_hold_above_a_failure_is_never_the_answer() {
        // Holds below 20 and, by noise, at exactly 40: the answer stays under the failure at 30.
        let (c, _) = search(|r| r < 20.0 || r == 40.0, BOUNDS);
        let Capacity::Found { rate, failed_at } = c else {
            panic!("{c:?}")
        };
        assert!(rate < 20.0 && failed_at >= 20.0, "{rate} {failed_at}");
    }

    #[test]
    fn a_start_outside_the_bounds_is_clamped() {
        let b = SearchBounds {
            start: 5000.0,
            ..BOUNDS
        };
        assert_eq!(next_step(&[], b), SearchStep::Measure(1000.0));
    }
}
