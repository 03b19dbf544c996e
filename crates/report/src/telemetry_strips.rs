//! What each strip of a telemetry small multiple shows, from a cell's series: the values in
//! their units, one line per GPU (a single slowed GPU must stand out, not be averaged away),
//! the clock events as runs of samples, the server's counters as rates between reads. A strip
//! whose source has no value in the cell is left out; `telemetry_chart` lays them out.

use llmib_core::{CellTelemetry, ClockEvents, GpuSeries, HardwareVerdict, HwSeries, column_at};

/// One line: its name (tooltip), CSS class and (seconds, value) points.
pub(crate) struct LineData {
    pub name: String,
    pub class: &'static str,
    pub points: Vec<(f64, f64)>,
}

/// A run of samples with one clock event class, seconds from the cell's start.
pub(crate) struct EventData {
    pub from: f64,
    pub to: f64,
    pub class: &'static str,
    pub title: String,
}

/// One strip before layout.
pub(crate) struct StripData {
    pub key: &'static str,
    pub title: &'static str,
    pub unit: &'static str,
    /// The y axis reaches at least this (100 for percentages).
    pub floor_top: Option<f64>,
    pub lines: Vec<LineData>,
    pub events: Vec<EventData>,
    /// The clock events strip: no values, so no y ticks.
    pub events_only: bool,
}

impl StripData {
    fn new(key: &'static str, title: &'static str, unit: &'static str) -> Self {
        StripData {
            key,
            title,
            unit,
            floor_top: None,
            lines: Vec::new(),
            events: Vec::new(),
            events_only: false,
        }
    }

    fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty()) || self.events_only
    }
}

/// A GPU figure at sample `k`.
type GpuPick = fn(&GpuSeries, usize) -> Option<f64>;

/// The strips of a cell, top to bottom: the GPUs, their clock events, the CPU, the server.
pub(crate) fn strips(t: &CellTelemetry) -> Vec<StripData> {
    let mut out = Vec::new();
    if let Some(hw) = &t.hw {
        let gpu: [(
            &'static str,
            &'static str,
            &'static str,
            Option<f64>,
            GpuPick,
        ); 4] = [
            ("sm", "SM clock", "MHz", None, |g, k| column_at(&g.sm, k)),
            ("power", "Power", "% of limit", Some(100.0), |g, k| {
                g.power_pct(k)
            }),
            ("util", "GPU utilisation", "%", Some(100.0), |g, k| {
                column_at(&g.u, k)
            }),
            ("temp", "GPU temperature", "°C", None, |g, k| {
                column_at(&g.c, k)
            }),
        ];
        for (key, title, unit, floor, pick) in gpu {
            let mut s = StripData::new(key, title, unit);
            s.floor_top = floor;
            s.lines = hw
                .gpus
                .iter()
                .map(|g| LineData {
                    name: format!("GPU {}: {title}", g.i),
                    class: "gpu",
                    points: points(&hw.t, |k| pick(g, k)),
                })
                .collect();
            out.push(s);
        }
        out.extend(clock_events(hw));
        let mut cpu = StripData::new("cpu", "Client CPU utilisation", "%");
        cpu.floor_top = Some(100.0);
        cpu.lines = vec![LineData {
            name: "this machine's CPU".into(),
            class: "cpu",
            points: points(&hw.t, |k| column_at(&hw.cpu.u, k)),
        }];
        out.push(cpu);
    }
    if let Some(srv) = &t.srv {
        out.extend(server_strips(srv));
    }
    out.retain(StripData::has_data);
    out
}

/// `(t[k], value(k))` for every sample with a value.
fn points(t: &[f64], value: impl Fn(usize) -> Option<f64>) -> Vec<(f64, f64)> {
    t.iter()
        .enumerate()
        .filter_map(|(k, t)| Some((*t, value(k)?)))
        .collect()
}

/// The clock events strip, where any GPU reported its reasons: runs of samples in which the
/// GPUs' ORed reasons show a power cap, a thermal or a hardware slowdown.
fn clock_events(hw: &HwSeries) -> Option<StripData> {
    let masks: Vec<Option<u64>> = (0..hw.t.len()).map(|k| hw.reasons_at(k)).collect();
    if masks.iter().all(Option::is_none) {
        return None;
    }
    let mut s = StripData::new("events", "Clock events", "");
    s.events_only = true;
    let mut k = 0;
    while k < masks.len() {
        let class = masks[k].map_or(HardwareVerdict::Ok, |m| ClockEvents(m).class());
        let mut end = k + 1;
        while end < masks.len()
            && masks[end].map_or(HardwareVerdict::Ok, |m| ClockEvents(m).class()) == class
        {
            end += 1;
        }
        if class != HardwareVerdict::Ok {
            // A run lasts until the next sample (or half a second past the last).
            let to = hw.t.get(end).copied().unwrap_or(hw.t[end - 1] + 0.5);
            let bits = masks[k..end].iter().flatten().fold(0, |a, b| a | b);
            s.events.push(EventData {
                from: hw.t[k],
                to,
                class: event_class(class),
                title: format!(
                    "{}: {:.1}–{:.1} s (reasons 0x{bits:x})",
                    class.label(),
                    hw.t[k],
                    to
                ),
            });
        }
        k = end;
    }
    Some(s)
}

fn event_class(v: HardwareVerdict) -> &'static str {
    match v {
        HardwareVerdict::PowerCapped => "ev-power",
        HardwareVerdict::Thermal => "ev-thermal",
        HardwareVerdict::HardwareSlowdown | HardwareVerdict::Ok => "ev-hw",
    }
}

/// The server's strips: generation tok/s from its counter, running and waiting, KV cache use,
/// preemptions per second and speculative acceptance where the engine reports them.
fn server_strips(srv: &llmib_core::ServerSeries) -> Vec<StripData> {
    let line = |name: &str, class, points| LineData {
        name: name.into(),
        class,
        points,
    };
    let mut gen_strip = StripData::new("gen", "Server generation", "tok/s");
    gen_strip.lines = vec![line(
        "generated tokens per second",
        "s1",
        srv.rate(&srv.gen_tokens),
    )];
    let mut req = StripData::new("requests", "Server requests", "running, waiting");
    req.lines = vec![
        line("running", "s1", points(&srv.t, |k| column_at(&srv.run, k))),
        line("waiting", "s2", points(&srv.t, |k| column_at(&srv.wait, k))),
    ];
    let pct = |c: &[Option<f64>]| points(&srv.t, |k| column_at(c, k).map(|v| v * 100.0));
    let mut kv = StripData::new("kv", "KV cache", "% used");
    kv.floor_top = Some(100.0);
    kv.lines = vec![line("KV cache used", "s1", pct(&srv.kv))];
    let mut pre = StripData::new("preempt", "Preemptions", "/s");
    pre.lines = vec![line("preemptions per second", "s2", srv.rate(&srv.pre))];
    let mut acc = StripData::new("spec", "Speculative acceptance", "%");
    acc.floor_top = Some(100.0);
    acc.lines = vec![line("draft tokens accepted", "s1", pct(&srv.acc))];
    vec![gen_strip, req, kv, pre, acc]
}
