//! Known answers for cost and energy per token: integrals of constant and ramping power, edges
//! that straddle samples, and each reason the samples do not back a figure.

use super::*;
use crate::cell::CellStatus;
use crate::figures::PrefillFigures;
use crate::telemetry::GpuSeries;

/// Samples every `step` seconds from `from` to `to` (inclusive), each GPU's power by `power(gpu,
/// t)`.
fn series(
    gpus: u32,
    from: f64,
    to: f64,
    step: f64,
    power: impl Fn(u32, f64) -> Option<f64>,
) -> HwSeries {
    let n = ((to - from) / step).round() as usize + 1;
    let t: Vec<f64> = (0..n).map(|k| from + k as f64 * step).collect();
    HwSeries {
        gpus: (0..gpus)
            .map(|i| GpuSeries {
                i,
                w: t.iter().map(|&x| power(i, x)).collect(),
                ..GpuSeries::default()
            })
            .collect(),
        t,
        src: "nvml".into(),
        ..HwSeries::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn constant_300_w_on_2_gpus_over_10_s_is_6000_j() {
    let hw = series(2, 0.0, 12.0, 0.5, |_, _| Some(300.0));
    let j = window_energy(Some(&hw), Some([1.0, 11.0]), Some(2)).expect("valid");
    assert!(close(j, 6000.0), "{j}");
    // The GPU count unknown: every GPU that reported power is summed.
    assert!(close(
        window_energy(Some(&hw), Some([1.0, 11.0]), None).expect("ok"),
        6000.0
    ));
    // The server uses one of the two: only the first by index counts.
    assert!(close(
        window_energy(Some(&hw), Some([1.0, 11.0]), Some(1)).expect("ok"),
        3000.0
    ));
}

#[test]
fn a_ramp_integrates_exactly_with_interpolated_edges() {
    // P = 100 + 10 t on one GPU; the window's edges fall between samples.
    let hw = series(1, 0.0, 12.0, 0.5, |_, t| Some(100.0 + 10.0 * t));
    let j = window_energy(Some(&hw), Some([1.25, 11.25]), Some(1)).expect("valid");
    let exact = 100.0 * 10.0 + 5.0 * (11.25f64.powi(2) - 1.25f64.powi(2));
    assert!(close(j, exact), "{j} vs {exact}");
    assert!(close(exact, 1625.0));
}

#[test]
fn edges_that_straddle_samples_are_interpolated_and_others_take_the_nearest() {
    let t = [0.0, 1.0, 2.0, 3.0];
    let p = [0.0, 100.0, 100.0, 0.0];
    // At 0.5 and 2.5 the power reads 50 (between 0 and 100): 37.5 + 100 + 37.5.
    assert!(close(trapezoid(&t, &p, 0.5, 2.5), 175.0));
    // A window wider than the samples holds each edge at its nearest sample.
    assert!(close(
        trapezoid(&[1.0, 2.0], &[100.0, 200.0], 0.0, 3.0),
        100.0 + 150.0 + 200.0
    ));
    // The first sample 0.3 s after the window opened: the edge takes its value.
    let hw = series(1, 0.3, 5.3, 0.5, |_, _| Some(200.0));
    let j = window_energy(Some(&hw), Some([0.0, 5.0]), Some(1)).expect("valid");
    assert!(close(j, 1000.0), "{j}");
    // Samples far outside the window do not enter it.
    let hw = series(1, 0.0, 20.0, 0.5, |_, t| {
        Some(if t < 5.0 { 1000.0 } else { 100.0 })
    });
    let j = window_energy(Some(&hw), Some([8.0, 12.0]), Some(1)).expect("valid");
    assert!(close(j, 400.0), "{j}");
}

#[test]
fn a_planted_gap_makes_power_invalid_with_its_reason() {
    let mut hw = series(1, 0.0, 12.0, 0.5, |_, _| Some(300.0));
    // Drop the samples strictly between 4 s and 7 s: a 3 s hole.
    let keep: Vec<usize> = (0..hw.t.len())
        .filter(|&k| hw.t[k] <= 4.0 || hw.t[k] >= 7.0)
        .collect();
    hw.t = keep.iter().map(|&k| hw.t[k]).collect();
    hw.gpus[0].w = keep.iter().map(|&k| hw.gpus[0].w[k]).collect();
    let e = window_energy(Some(&hw), Some([1.0, 11.0]), Some(1)).expect_err("invalid");
    assert_eq!(
        e,
        PowerInvalid::Gap {
            gap_s: 3.0,
            from: 4.0,
            to: 7.0
        }
    );
    assert_eq!(
        e.to_string(),
        "a gap of 3.00 s without power samples (from 4.00 s to 7.00 s; at most 2 s)"
    );
    // An edge held too long is a gap too: the first sample 2.5 s after the window opened.
    let late = series(1, 2.5, 12.0, 0.5, |_, _| Some(300.0));
    let e = window_energy(Some(&late), Some([0.0, 10.0]), Some(1)).expect_err("invalid");
    assert!(matches!(e, PowerInvalid::Gap { from: 0.0, .. }), "{e}");
}

#[test]
fn samples_sparser_than_one_a_second_are_invalid() {
    // Every 1.9 s: no gap over 2 s, but 11 samples in a 20 s window.
    let hw = series(1, 0.0, 22.8, 1.9, |_, _| Some(300.0));
    let e = window_energy(Some(&hw), Some([1.0, 21.0]), Some(1)).expect_err("invalid");
    assert!(
        matches!(
            e,
            PowerInvalid::TooSparse {
                samples: 11,
                needed: 19,
                ..
            }
        ),
        "{e}"
    );
    // A 1 Hz sampler passes: its phase may leave one sample out of a window.
    let hw = series(1, 0.5, 31.5, 1.0, |_, _| Some(300.0));
    assert!(close(
        window_energy(Some(&hw), Some([0.0, 30.0]), Some(1)).expect("ok"),
        9000.0
    ));
}

#[test]
fn a_gpu_missing_makes_power_invalid() {
    // The server uses 2 GPUs; only GPU 0 reports power.
    let hw = series(2, 0.0, 12.0, 0.5, |i, _| (i == 0).then_some(300.0));
    let e = window_energy(Some(&hw), Some([1.0, 11.0]), Some(2)).expect_err("invalid");
    assert_eq!(e, PowerInvalid::TooFewGpus { seen: 1, gpus: 2 });
    assert_eq!(
        e.to_string(),
        "power samples cover 1 of the server's 2 GPUs"
    );
    // GPU 1's power missing from one sample inside the window.
    let hw = series(2, 0.0, 12.0, 0.5, |i, t| {
        (i == 0 || t != 5.0).then_some(300.0)
    });
    let e = window_energy(Some(&hw), Some([1.0, 11.0]), Some(2)).expect_err("invalid");
    assert_eq!(e, PowerInvalid::MissingReading { gpu: 1, t: 5.0 });
    // ... but a missing reading outside what the window needs does not matter.
    assert!(window_energy(Some(&hw), Some([6.0, 11.0]), Some(2)).is_ok());
}

#[test]
fn no_samples_or_no_window_give_no_figure() {
    assert_eq!(
        window_energy(None, Some([0.0, 1.0]), None),
        Err(PowerInvalid::NoSamples)
    );
    let cpu_only = series(1, 0.0, 12.0, 0.5, |_, _| None);
    assert_eq!(
        window_energy(Some(&cpu_only), Some([1.0, 11.0]), None),
        Err(PowerInvalid::NoSamples)
    );
    assert_eq!(PowerInvalid::NoSamples.to_string(), "no GPU power samples");
    let hw = series(1, 0.0, 12.0, 0.5, |_, _| Some(300.0));
    assert_eq!(
        window_energy(Some(&hw), None, None),
        Err(PowerInvalid::NoWindow)
    );
    assert_eq!(
        window_energy(Some(&hw), Some([5.0, 5.0]), None),
        Err(PowerInvalid::NoWindow)
    );
}

#[test]
fn the_measured_span_is_the_window_or_the_measuring_stage() {
    let ph: Vec<PhaseMark> = [(0.0, "prompts"), (1.0, "open loop"), (9.5, "counting")]
        .iter()
        .map(|(t, s)| (*t, s.to_string()))
        .collect();
    assert_eq!(
        measured_span(Phase::Rate, None, &ph, 10.0),
        Some([1.0, 9.5])
    );
    assert_eq!(
        measured_span(Phase::Session, None, &ph, 10.0),
        Some([1.0, 9.5])
    );
    assert_eq!(
        measured_span(Phase::Decode, Some([2.0, 32.0]), &ph, 40.0),
        Some([2.0, 32.0])
    );
    assert_eq!(measured_span(Phase::Decode, None, &ph, 40.0), None);
    let pre = vec![(0.0, "prompt".to_string()), (0.4, "prefill".to_string())];
    assert_eq!(
        measured_span(Phase::Prefill, None, &pre, 3.0),
        Some([0.4, 3.0])
    );
    assert_eq!(measured_span(Phase::Burst, None, &pre, 3.0), None);
    assert_eq!(measured_span(Phase::Capacity, None, &ph, 3.0), None);
}

fn decode_row(tok_per_s: f64, output_tokens: u64) -> CellResult {
    let mut r = CellResult::empty(Phase::Decode, 8192, "8K", 8, CellStatus::Valid);
    r.total_tok_per_s = Some(tok_per_s);
    r.output_tokens = Some(output_tokens);
    r
}

#[test]
fn cost_and_energy_figures_of_a_decode_row() {
    let cost = CostSettings {
        gpu_hour_usd: Some(2.0),
        gpus: Some(4),
        ..CostSettings::default()
    };
    let row = decode_row(1000.0, 3000);
    let e = cell_economics(&row, &cost, Some([1.0, 11.0]), Ok(6000.0)).expect("figures");
    assert_eq!((e.gpus, e.gpus_source), (Some(4), Some(GpusSource::Given)));
    assert_eq!(e.output_tok_per_s_per_gpu, Some(250.0));
    assert_eq!(
        (e.usd_per_hour, e.price_source),
        (Some(8.0), Some(PriceSource::GpuHour))
    );
    assert!(close(
        e.usd_per_m_output_tokens.expect("ok"),
        8.0 / 3600.0 / 1000.0 * 1e6
    ));
    assert_eq!(e.usd_per_m_input_tokens, None);
    assert!(e.power_valid && e.power_reason.is_none());
    assert_eq!(e.joules_per_output_token, Some(2.0));
    assert_eq!(e.output_tokens_per_kwh, Some(1.8e6));
    // The node's price needs no GPU count; the detected count still divides the throughput.
    let node = CostSettings {
        node_hour_usd: Some(36.0),
        gpus_detected: Some(8),
        ..CostSettings::default()
    };
    let e = cell_economics(&row, &node, None, Err(PowerInvalid::NoSamples)).expect("ok");
    assert_eq!(e.usd_per_m_output_tokens, Some(10.0));
    assert_eq!(e.gpus_source, Some(GpusSource::Detected));
    assert_eq!(e.output_tok_per_s_per_gpu, Some(125.0));
    assert!(!e.power_valid && e.energy_j.is_none() && e.joules_per_output_token.is_none());
    assert_eq!(e.power_reason.as_deref(), Some("no GPU power samples"));
}

#[test]
fn unknown_price_or_gpus_leave_cost_null_with_the_reason() {
    let row = decode_row(1000.0, 3000);
    let e = cell_economics(&row, &CostSettings::default(), None, Ok(1.0)).expect("ok");
    assert_eq!(e.usd_per_m_output_tokens, None);
    assert_eq!(e.output_tok_per_s_per_gpu, None);
    assert_eq!(
        e.cost_reason.as_deref(),
        Some("no price given (--gpu-hour-usd or --node-hour-usd)")
    );
    let no_gpus = CostSettings {
        gpu_hour_usd: Some(2.0),
        ..CostSettings::default()
    };
    let e = cell_economics(&row, &no_gpus, None, Ok(1.0)).expect("ok");
    assert_eq!(
        e.cost_reason.as_deref(),
        Some("GPU count unknown (pass --gpus)")
    );
    // Rows without measured figures get none.
    let not_run = CellResult::empty(Phase::Decode, 8192, "8K", 8, CellStatus::NotRun);
    assert_eq!(cell_economics(&not_run, &no_gpus, None, Ok(1.0)), None);
}

#[test]
fn a_prefill_row_prices_and_weighs_its_prompt_tokens() {
    let row = CellResult::empty(Phase::Prefill, 10_000, "10K", 1, CellStatus::Valid).with_prefill(
        &PrefillFigures {
            prompt_tok_per_s: 20_000.0,
            ttft_ms: 500.0,
        },
    );
    let cost = CostSettings {
        node_hour_usd: Some(72.0),
        ..CostSettings::default()
    };
    let e = cell_economics(&row, &cost, Some([0.0, 0.5]), Ok(500.0)).expect("ok");
    assert_eq!(e.usd_per_m_input_tokens, Some(1.0));
    assert_eq!(e.usd_per_m_output_tokens, None);
    assert_eq!(e.joules_per_prompt_token, Some(0.05));
    assert_eq!(e.joules_per_output_token, None);
}

#[test]
fn rows_and_settings_saved_before_economics_still_load() {
    let row = decode_row(10.0, 100);
    let json = serde_json::to_string(&row).expect("ok");
    assert!(!json.contains("economics"));
    let back: CellResult = serde_json::from_str(&json).expect("ok");
    assert_eq!(back.economics, None);
    let s = crate::plan::Settings::default();
    let json = serde_json::to_string(&s).expect("ok");
    assert!(
        !json.contains("economics"),
        "empty cost settings are left out"
    );
    let with = crate::plan::Settings {
        economics: CostSettings {
            gpu_hour_usd: Some(2.5),
            gpus: Some(8),
            ..CostSettings::default()
        },
        ..s
    };
    let json = serde_json::to_value(&with).expect("ok");
    assert_eq!(
        json["economics"],
        serde_json::json!({"gpu_hour_usd": 2.5, "gpus": 8})
    );
    let back: crate::plan::Settings = serde_json::from_value(json).expect("ok");
    assert_eq!(back, with);
}
