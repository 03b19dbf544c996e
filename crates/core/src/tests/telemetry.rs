use super::*;
use crate::cell::Phase;
use crate::hw::{NvmlRaw, parse_clock_event_reasons, parse_nvidia_smi, parse_nvidia_smi_events};

/// Recorded `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv,noheader,nounits` of three
/// H100s: one power capped, one hot, one idle whose driver does not report the field.
const SMI: &str = include_str!("fixtures/nvidia-smi-clock-events-h100x3.csv");
/// NVML raw values of two H100s, three samples: free, power capped, then GPU 1 in a hardware
/// and thermal slowdown (72 = 0x48).
const NVML: &str = include_str!("fixtures/nvml-clock-events-h100x2.json");

fn key() -> CellKey {
    CellKey {
        phase: Phase::Decode,
        context_tokens: 8192,
        concurrency: 4,
        rate_mrps: 0,
    }
}

#[test]
fn the_clock_event_bits_are_nvmls() {
    // nvml.h: nvmlClocksEventReason* (nvml-wrapper-sys bindings).
    assert_eq!(ClockEvents::GPU_IDLE, 0x1);
    assert_eq!(ClockEvents::SW_POWER_CAP, 0x4);
    assert_eq!(ClockEvents::HW_SLOWDOWN, 0x8);
    assert_eq!(ClockEvents::SW_THERMAL, 0x20);
    assert_eq!(ClockEvents::HW_THERMAL, 0x40);
    assert_eq!(ClockEvents::HW_POWER_BRAKE, 0x80);
    let class = |b: u64| ClockEvents(b).class();
    assert_eq!(class(0), HardwareVerdict::Ok);
    assert_eq!(class(0x1), HardwareVerdict::Ok, "idle is no slowdown");
    assert_eq!(
        class(0x2),
        HardwareVerdict::Ok,
        "a clock setting is the user's"
    );
    assert_eq!(class(0x4), HardwareVerdict::PowerCapped);
    assert_eq!(class(0x20), HardwareVerdict::Thermal);
    assert_eq!(class(0x40), HardwareVerdict::Thermal);
    assert_eq!(class(0x8), HardwareVerdict::HardwareSlowdown);
    assert_eq!(class(0x80), HardwareVerdict::HardwareSlowdown);
    assert_eq!(class(0x4 | 0x20), HardwareVerdict::Thermal, "worst first");
    assert_eq!(class(0x4 | 0x48), HardwareVerdict::HardwareSlowdown);
}

#[test]
fn nvidia_smi_reasons_are_read_as_hex_bitmasks() {
    assert_eq!(parse_clock_event_reasons("0x0000000000000004"), Some(4));
    assert_eq!(
        parse_clock_event_reasons(" 0x0000000000000060 "),
        Some(0x60)
    );
    assert_eq!(parse_clock_event_reasons("0X80"), Some(0x80));
    assert_eq!(parse_clock_event_reasons("[N/A]"), None);
    assert_eq!(parse_clock_event_reasons("[Not Supported]"), None);
    assert_eq!(
        parse_clock_event_reasons("4"),
        None,
        "not nvidia-smi's form"
    );
    assert_eq!(parse_clock_event_reasons("0xZZ"), None);

    let g = parse_nvidia_smi_events(SMI).expect("fixture parses");
    let reasons: Vec<Option<u64>> = g.iter().map(|(_, r)| *r).collect();
    assert_eq!(reasons, [Some(0x4), Some(0x60), None]);
    assert_eq!(g[1].0.sm_clock_mhz, Some(1410));
    assert_eq!(g[1].0.temp_c, Some(88.0));
    // The same readings without the reasons, and the 11-field answer of an older query.
    assert_eq!(parse_nvidia_smi(SMI).expect("parses").len(), 3);
    let old = "0, NVIDIA H200, 97, 41, 131072, 143771, 612.48, 700.00, 61, 1980, 3201\n";
    let g = parse_nvidia_smi_events(old).expect("11 fields parse");
    assert_eq!(g[0].1, None);
    assert_eq!(g[0].0.sm_clock_mhz, Some(1980));
}

#[test]
fn every_query_asks_the_same_eleven_fields_first() {
    let base: Vec<&str> = crate::hw::NVIDIA_SMI_QUERIES[2].split(',').collect();
    assert_eq!(base.len(), 11);
    for q in crate::hw::NVIDIA_SMI_QUERIES {
        assert_eq!(q.split(',').take(11).collect::<Vec<_>>(), base);
    }
    assert!(crate::hw::NVIDIA_SMI_QUERIES[0].ends_with(",clocks_event_reasons.active"));
    assert!(crate::hw::NVIDIA_SMI_QUERIES[1].ends_with(",clocks_throttle_reasons.active"));
}

#[test]
fn verdict_kats() {
    let v = |s: &[Option<u64>]| hardware_verdict(s);
    let n = |b: u64, k: usize| vec![Some(b); k];
    let mix = |parts: &[(u64, usize)]| -> Vec<Option<u64>> {
        parts.iter().flat_map(|(b, k)| n(*b, *k)).collect()
    };
    assert_eq!(v(&[]), None, "no GPU sample");
    assert_eq!(v(&[None, None]), None, "no sample reported reasons");
    assert_eq!(v(&n(0, 60)), Some(HardwareVerdict::Ok));
    assert_eq!(v(&n(0x1, 60)), Some(HardwareVerdict::Ok), "idle");
    // 10 % of 60 = 6 samples: 5 are not enough, 6 are.
    assert_eq!(v(&mix(&[(0x4, 5), (0, 55)])), Some(HardwareVerdict::Ok));
    assert_eq!(
        v(&mix(&[(0x4, 6), (0, 54)])),
        Some(HardwareVerdict::PowerCapped)
    );
    // One sample is never enough, even of few.
    assert_eq!(v(&mix(&[(0x8, 1), (0, 3)])), Some(HardwareVerdict::Ok));
    assert_eq!(
        v(&mix(&[(0x8, 2), (0, 3)])),
        Some(HardwareVerdict::HardwareSlowdown)
    );
    assert_eq!(v(&n(0x20, 10)), Some(HardwareVerdict::Thermal));
    assert_eq!(v(&n(0x40, 10)), Some(HardwareVerdict::Thermal));
    assert_eq!(v(&n(0x80, 10)), Some(HardwareVerdict::HardwareSlowdown));
    // Power capped all along, a hardware slowdown in 20 %: the worse one is the verdict.
    assert_eq!(
        v(&mix(&[(0x4, 16), (0x4 | 0x8, 4)])),
        Some(HardwareVerdict::HardwareSlowdown)
    );
    // A class counts across mixed masks: thermal in 3 of 20 (with other bits).
    assert_eq!(
        v(&mix(&[(0x24, 1), (0x60, 2), (0x0, 17)])),
        Some(HardwareVerdict::Thermal)
    );
    // Unknown samples do not dilute the known ones.
    let mut s = n(0x4, 2);
    s.extend(vec![None; 100]);
    assert_eq!(v(&s), Some(HardwareVerdict::PowerCapped));
    assert_eq!(
        HardwareVerdict::HardwareSlowdown.label(),
        "hardware slowdown"
    );
    assert_eq!(
        serde_json::to_string(&HardwareVerdict::PowerCapped).expect("json"),
        "\"power_capped\""
    );
}

/// A series of the NVML fixture's samples, one every half second.
fn nvml_series() -> HwSeries {
    let samples: Vec<Vec<NvmlRaw>> = serde_json::from_str(NVML).expect("fixture parses");
    let mut hw = HwSeries::default();
    for (k, raw) in samples.iter().enumerate() {
        let s = HwSample {
            gpus: raw.iter().map(GpuReading::from).collect(),
            cpu: Some(CpuReading {
                util_pct: Some(12.345),
                freq_mhz: Some(3100),
                temp_c: None,
            }),
            gpu_source: "nvml".into(),
        };
        let reasons: Vec<Option<u64>> = raw.iter().map(|r| r.clocks_event_reasons).collect();
        hw.push(k as f64 * 0.5, &s, &reasons);
    }
    hw
}

#[test]
fn an_nvml_series_gives_columns_and_a_verdict() {
    let hw = nvml_series();
    assert_eq!(hw.t, [0.0, 0.5, 1.0]);
    assert_eq!(hw.src, "nvml");
    assert_eq!(hw.gpus.len(), 2);
    let g1 = &hw.gpus[1];
    assert_eq!(g1.sm, [Some(1980.0), Some(1740.0), Some(990.0)]);
    assert_eq!(
        g1.w,
        [Some(699.9), Some(700.0), None],
        "a failed call is null"
    );
    assert_eq!(g1.tx, [Some(1.0), Some(1.0), None]);
    assert_eq!(g1.r, [Some(0), Some(4), Some(72)]);
    assert_eq!(hw.gpus[0].power_pct(1).map(|p| p.round()), Some(100.0));
    assert_eq!(g1.power_pct(2), None);
    assert_eq!(hw.reasons_at(2), Some(4 | 72));
    assert_eq!(hw.cpu.u, [Some(12.3); 3]);
    // Two of three samples power capped; one with a hardware slowdown is not enough.
    assert_eq!(hw.verdict(None), Some(HardwareVerdict::PowerCapped));
    // Inside the window (the last two samples) the slowdown is one sample of two: still one.
    assert_eq!(
        hw.verdict(Some([0.4, 1.1])),
        Some(HardwareVerdict::PowerCapped)
    );
    // The first sample alone: nothing.
    assert_eq!(hw.verdict(Some([0.0, 0.1])), Some(HardwareVerdict::Ok));
    // A span with no sample falls back to all of them.
    assert_eq!(
        hw.verdict(Some([5.0, 6.0])),
        Some(HardwareVerdict::PowerCapped)
    );
    // No GPU: no verdict.
    let mut cpu_only = HwSeries::default();
    cpu_only.push(0.0, &HwSample::default(), &[]);
    assert_eq!(cpu_only.verdict(None), None);
}

#[test]
fn a_gpu_missing_from_some_samples_is_padded_with_nulls() {
    let raw: Vec<Vec<NvmlRaw>> = serde_json::from_str(NVML).expect("fixture parses");
    let one = HwSample {
        gpus: vec![GpuReading::from(&raw[0][0])],
        ..HwSample::default()
    };
    let two = HwSample {
        gpus: raw[0].iter().map(GpuReading::from).collect(),
        ..HwSample::default()
    };
    let mut hw = HwSeries::default();
    hw.push(0.0, &one, &[]);
    hw.push(0.5, &two, &[Some(0), Some(0)]);
    hw.push(1.0, &one, &[Some(4)]);
    assert_eq!(hw.gpus[1].sm, [None, Some(1980.0), None]);
    assert_eq!(hw.gpus[1].r, [None, Some(0), None]);
    assert_eq!(hw.gpus[0].r, [None, Some(0), Some(4)]);
    assert!(hw.cpu.is_empty());
}

fn server_sample(t: f64, gen_tokens: f64) -> ServerSample {
    ServerSample {
        t,
        generation_tokens: Some(gen_tokens),
        prompt_tokens: Some(8192.0),
        running: Some(4.0),
        waiting: Some(0.0),
        kv_usage: Some(0.123_456),
        ..ServerSample::default()
    }
}

#[test]
fn server_counters_give_rates_and_absent_metrics_stay_null() {
    let mut s = ServerSeries::default();
    s.push(&server_sample(0.004, 1000.0));
    s.push(&server_sample(1.004, 1400.0));
    s.push(&ServerSample {
        t: 2.0,
        running: Some(f64::NAN),
        ..ServerSample::default()
    });
    s.push(&server_sample(3.004, 2200.0));
    s.push(&server_sample(4.004, 100.0));
    assert_eq!(s.t, [0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(s.kv[0], Some(0.1235));
    assert_eq!(s.run[2], None, "NaN is no reading");
    assert!(
        s.pre.iter().all(Option::is_none),
        "never 0 for a missing metric"
    );
    // Gaps and a counter reset give no point.
    assert_eq!(s.rate(&s.gen_tokens), [(0.5, 400.0)]);
    let mut later = ServerSeries::default();
    later.push(&server_sample(0.0, 0.0));
    later.push(&server_sample(0.5, 100.0));
    assert_eq!(later.rate(&later.gen_tokens), [(0.25, 200.0)]);
}

#[test]
fn a_line_is_compact_and_reads_back() {
    let mut srv = ServerSeries::default();
    srv.push(&server_sample(0.0, 1000.0));
    srv.push(&server_sample(1.0, 1400.0));
    let line = CellTelemetry {
        cell: key(),
        t0: "2026-01-01T00:00:00Z".into(),
        dur: 12.5,
        ph: vec![(0.0, "prompts".into()), (1.25, "window".into())],
        win: Some([2.0, 12.0]),
        hw: Some(nvml_series()),
        srv: Some(srv),
    };
    let text = serde_json::to_string(&line).expect("json");
    // Whole numbers without a decimal point, absent columns left out, short keys.
    assert!(text.contains("\"gen\":[1000,1400]"), "{text}");
    assert!(text.contains("\"sm\":[1980,1755,1770]"), "{text}");
    assert!(text.contains("\"t\":[0,0.5,1]"), "{text}");
    assert!(text.contains("\"w\":[699.9,700,null]"), "{text}");
    assert!(text.contains("\"r\":[0,4,72]"), "{text}");
    assert!(!text.contains("\"pre\""), "{text}");
    assert!(!text.contains("\"acc\""), "{text}");
    assert!(!text.contains("\"c\":[null"), "{text}");
    assert!(text.len() < 1500, "{} bytes: {text}", text.len());
    let back: CellTelemetry = serde_json::from_str(&text).expect("reads back");
    // A column left out reads back empty (all null), so the line is written the same again.
    assert_eq!(serde_json::to_string(&back).expect("json"), text);
    assert_eq!(
        back.hw,
        line.hw.as_ref().map(|h| HwSeries {
            cpu: CpuSeries {
                c: vec![],
                ..h.cpu.clone()
            },
            ..h.clone()
        })
    );
    assert!(back.has_series());
    assert_eq!(column_at(&back.srv.as_ref().expect("srv").pre, 1), None);
    // An older reader's minimum: the cell and t0.
    let bare: CellTelemetry = serde_json::from_str(
        r#"{"cell":{"phase":"decode","context_tokens":8192,"concurrency":4},"t0":"x","dur":1}"#,
    )
    .expect("minimal line");
    assert!(!bare.has_series());
}

#[test]
fn the_store_keeps_the_last_line_per_cell() {
    let root = std::env::temp_dir().join(format!("llmib-telemetry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let rd = crate::store::RunDir::create(&root).expect("dir");
    assert_eq!(rd.load_telemetry().expect("none yet"), (vec![], 0));
    let mut a = CellTelemetry::new(key(), "first".into());
    let mut b = a.clone();
    b.cell.concurrency = 8;
    rd.append_telemetry(&a).expect("append");
    rd.append_telemetry(&b).expect("append");
    a.t0 = "resumed".into();
    rd.append_telemetry(&a).expect("append");
    let path = root.join(crate::store::TELEMETRY_FILE);
    let mut text = std::fs::read_to_string(&path).expect("file");
    text.push_str("{\"cell\": torn");
    std::fs::write(&path, text).expect("write");
    let (lines, bad) = rd.load_telemetry().expect("load");
    assert_eq!(bad, 1);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].t0, "resumed");
    assert_eq!(lines[1].cell.concurrency, 8);
    let _ = std::fs::remove_dir_all(&root);
}
