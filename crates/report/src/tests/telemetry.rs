//! The Telemetry section on known answers: the golden run with hand-built series for one of
//! its decode cells, through the HTML and Markdown exporters; an older run without
//! `telemetry.jsonl` has no section.

use super::*;
use crate::exporter::Exporter;
use crate::html::HtmlExporter;
use crate::markdown::MarkdownExporter;
use llmib_core::{CpuReading, GpuReading, HwSample, HwSeries, Phase, ServerSample, ServerSeries};
use std::path::Path;

fn golden() -> Report {
    Report::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run"))
        .expect("golden run")
}

/// Two GPUs sampled every half second for 6 s: GPU 1 power capped from 2 s, in a hardware
/// slowdown at 5 s; the server's counter rising 400 tokens a second.
fn line(cell: llmib_core::CellKey, stage: &str) -> CellTelemetry {
    let mut hw = HwSeries::default();
    for k in 0..12u32 {
        let t = f64::from(k) * 0.5;
        let gpu = |i: u32, mhz: u32| GpuReading {
            index: i,
            sm_clock_mhz: Some(mhz),
            power_w: Some(690.0),
            power_limit_w: Some(700.0),
            temp_c: Some(70.0),
            util_pct: Some(99.0),
            ..GpuReading::default()
        };
        let slow = t >= 2.0;
        let s = HwSample {
            gpus: vec![gpu(0, 1980), gpu(1, if slow { 1500 } else { 1980 })],
            cpu: Some(CpuReading {
                util_pct: Some(20.0),
                ..CpuReading::default()
            }),
            gpu_source: "nvml".into(),
        };
        let r1 = match (slow, k) {
            (_, 10) => 0x8,
            (true, _) => 0x4,
            _ => 0,
        };
        hw.push(t, &s, &[Some(0), Some(r1)]);
    }
    let mut srv = ServerSeries::default();
    for k in 0..7u32 {
        srv.push(&ServerSample {
            t: f64::from(k),
            generation_tokens: Some(1000.0 + 400.0 * f64::from(k)),
            running: Some(4.0),
            waiting: Some(0.0),
            kv_usage: Some(0.4),
            ..ServerSample::default()
        });
    }
    let mut t = CellTelemetry::new(cell, "2026-01-01T00:00:00Z".into());
    t.dur = 6.2;
    t.ph = vec![
        (0.0, "prompts".into()),
        (0.5, stage.into()),
        (1.0, "window".into()),
        (5.8, "counting".into()),
    ];
    t.win = Some([1.4, 5.6]);
    t.hw = Some(hw);
    t.srv = Some(srv);
    t
}

fn with_telemetry(stage: &str) -> Report {
    let mut r = golden();
    let c = r
        .cells
        .iter_mut()
        .find(|c| c.phase == Phase::Decode && c.status.has_figures())
        .expect("a measured decode cell");
    c.hardware_verdict = Some(HardwareVerdict::PowerCapped);
    let key = c.key();
    r.telemetry = vec![line(key, stage)];
    r
}

#[test]
fn a_cell_with_telemetry_gets_its_small_multiple() {
    let r = with_telemetry("warm-up");
    let v = view(&r).expect("a section");
    assert_eq!(v.cells.len(), 1);
    let f = &v.cells[0];
    assert_eq!(f.verdict, Some("power capped"));
    let keys: Vec<&str> = f.strips.iter().map(|s| s.key).collect();
    assert_eq!(
        keys,
        [
            "sm", "power", "util", "temp", "events", "cpu", "gen", "requests", "kv"
        ],
        "no preemption or speculative strip where the server reports neither"
    );
    // One line per GPU.
    assert_eq!(f.strips[0].lines.len(), 2);
    // Stages: prompts and warm-up (prep), the ramp to the window's opening, the window.
    let bands: Vec<&str> = f.bands.iter().map(|b| b.class).collect();
    assert_eq!(bands, ["prep", "prep", "ramp", "meas"]);
    assert!(f.bands[3].title.starts_with("measured window: 1.40–5.60 s"));
    // Clock events: the power cap from 2 s, the slowdown at 5 s, the cap again after it.
    let ev: Vec<(&str, &str)> = f.strips[4]
        .events
        .iter()
        .map(|e| (e.class, e.title.as_str()))
        .collect();
    assert_eq!(ev.len(), 3, "{ev:?}");
    assert_eq!(ev[0].0, "ev-power");
    assert!(
        ev[0].1.starts_with("power capped: 2.0–5.0 s (reasons 0x4)"),
        "{ev:?}"
    );
    assert_eq!(ev[1].0, "ev-hw");
    // The generation strip is the counter's rate: 400 tok/s throughout.
    assert!(f.strips[6].lines[0].points.split(' ').count() == 6);

    let html = HtmlExporter.render(&r).expect("html");
    assert!(html.contains("<section class=\"panel\" id=\"telemetry\">"));
    assert!(html.contains("id=\"telemetry-0\""));
    assert!(html.contains("data-strip=\"events\""));
    assert!(html.contains("class=\"ev ev-power\""));
    assert!(html.contains("class=\"band meas\""));
    assert!(html.contains("GPU clocks: power capped"));
    assert!(html.contains("cells.jsonl, telemetry.jsonl)"));
    let note = "The GPUs did not hold their clocks in";
    assert!(html.contains(note));
    let md = MarkdownExporter.render(&r).expect("markdown");
    assert!(md.contains(note), "the notes are every exporter's");
}

#[test]
fn text_from_the_file_is_escaped() {
    let r = with_telemetry("<script>alert(1)</script>");
    let html = HtmlExporter.render(&r).expect("html");
    assert!(!html.contains("<script>alert(1)"));
    assert!(html.contains("prep\" x=") && html.contains("&lt;script&gt;alert(1)"));
}

#[test]
fn a_run_without_telemetry_has_no_section() {
    let r = golden();
    assert!(
        r.telemetry.is_empty(),
        "the seed run has no telemetry.jsonl"
    );
    assert!(view(&r).is_none());
    let html = HtmlExporter.render(&r).expect("html");
    assert!(!html.contains("id=\"telemetry\""));
    assert!(html.contains("(run.json, cells.jsonl)."));
    assert!(r.hardware_verdict_note().is_none());
    // A line for a cell the run has no row for, or without series, draws nothing.
    let mut r = golden();
    let mut bare = line(r.cells[0].key(), "warm-up");
    bare.hw = None;
    bare.srv = None;
    r.telemetry = vec![bare];
    assert!(view(&r).is_none());
}

#[test]
fn the_report_reads_telemetry_jsonl_beside_the_cells() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let dir = std::env::temp_dir().join(format!("llmib-report-telemetry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    for f in ["run.json", "cells.jsonl"] {
        std::fs::copy(src.join(f), dir.join(f)).expect("copy");
    }
    let key = with_telemetry("warm-up").telemetry[0].cell;
    let rd = llmib_core::RunDir::open(&dir).expect("open");
    rd.append_telemetry(&line(key, "warm-up")).expect("append");
    let r = Report::load(&dir).expect("load");
    assert_eq!(r.telemetry.len(), 1);
    assert!(view(&r).is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A standard-matrix run says which version it follows and what that fixes; a free-form run
/// says nothing of it.
#[test]
fn a_standard_run_names_its_version_in_the_notes() {
    let mut r = golden();
    let md = MarkdownExporter.render(&r).expect("markdown");
    assert!(
        !md.contains("standard matrix"),
        "the golden run is free-form"
    );
    r.info.plan.settings.standard = Some("v1".into());
    let md = MarkdownExporter.render(&r).expect("markdown");
    assert!(
        md.contains("This run follows the standard matrix v1: contexts 0, 64K, 128K"),
        "{md}"
    );
}
