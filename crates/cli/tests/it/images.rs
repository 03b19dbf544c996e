//! Images in requests end to end (`run --images`, docs/images.md) against the simulator, whose
//! rule is known: a W × H image costs `ceil(W / 28) · ceil(H / 28) + 2` prompt tokens.
//! - on chat (PNG), Messages and Responses (JPEG), with two sizes drawn per image: every row's
//!   image tokens are the rule's for each group's sizes (no request counted otherwise), its
//!   text part is exact (the prompt check passes at 0 tolerance), the prefill, decode and rate
//!   rows carry them, run.json keeps the format, and report.md's "Images" table shows them;
//! - `--api completions --images 1` stops in one line before anything is sent;
//! - docs/images.md's commands, run as written (`--api auto` picks chat for images).

use crate::common::*;
use crate::e2e::Bench;
use crate::first_use::{doc_commands, run_doc_pair};
use llmib_sim::SimConfig;
use serde_json::Value;

fn sim() -> Sim {
    let cfg = SimConfig {
        stamp_chunks: true,
        ..llmib_sim::builtin_profile("tiny-vllm").expect("profile")
    };
    Sim::start(cfg)
}

/// The simulator's image tokens for a group label (`56x28+100x30`).
fn rule(label: &str) -> i64 {
    label
        .split('+')
        .map(|s| {
            let (w, h) = s.split_once('x').expect("WxH");
            let side = |v: &str| v.parse::<i64>().expect("a side");
            (side(w) + 27) / 28 * ((side(h) + 27) / 28) + 2
        })
        .sum()
}

/// A row's images: two per request, every group counted by the rule, none otherwise, the
/// text part exact. Returns how many requests its groups hold.
fn check_row(what: &str, row: &Value) -> u64 {
    assert_eq!(row["status"], "valid", "{what}: {row:#}");
    let im = &row["images"];
    assert_eq!(im["per_request"], 2, "{what}: {row:#}");
    assert_eq!(im["counted_by"], "server usage", "{what}: {im:#}");
    let groups = im["groups"].as_array().expect("groups");
    assert!(!groups.is_empty(), "{what}: {im:#}");
    let mut requests = 0;
    for g in groups {
        let label = g["sizes"].as_str().expect("sizes");
        assert_eq!(
            g["image_tokens"].as_i64(),
            Some(rule(label)),
            "{what}: {g:#}"
        );
        assert_eq!(g["differing"], 0, "{what}: {g:#}");
        requests += g["requests"].as_u64().expect("requests");
    }
    let sent: u64 = im["sizes"]
        .as_object()
        .expect("sizes")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert!(sent >= 2 * requests, "{what}: {im:#}");
    let t = &im["image_tokens"];
    let rules: Vec<i64> = groups
        .iter()
        .filter_map(|g| g["sizes"].as_str())
        .map(rule)
        .collect();
    let (lo, hi) = (rules.iter().min(), rules.iter().max());
    assert_eq!(t["min"].as_f64(), lo.map(|x| *x as f64), "{what}: {t:#}");
    assert_eq!(t["max"].as_f64(), hi.map(|x| *x as f64), "{what}: {t:#}");
    let pc = &row["prompt_check"];
    assert_eq!(pc["mismatched"], 0, "{what}: {pc:#}");
    requests
}

#[test]
fn image_tokens_follow_the_simulators_rule_on_every_api() {
    let _serial = timing_lock();
    for (api, format) in [("chat", "png"), ("messages", "jpeg"), ("responses", "jpeg")] {
        let s = sim();
        let ran = Bench::run(&s.url)
            .set("--api", api)
            .set("--images", "2")
            .set("--image-format", format)
            .set("--image-size", "56x28,100x30")
            .small("512", "2", "1s", "8")
            .set("--prefill-contexts", "512")
            .set("--request-rate", "8")
            .set("--format", "md")
            .out(&format!("images-{api}"))
            .go();
        let (dir, o) = (&ran.dir, &ran.output);
        assert!(o.status.success(), "{api}: {}", text(o));
        let rows = cells(dir);
        let mut counted = 0;
        for (phase, n) in [("prefill", 1), ("decode", 2), ("rate", 1)] {
            let row = rows
                .iter()
                .find(|r| {
                    r["phase"] == phase
                        && r["context_tokens"] == 512
                        && (phase == "rate" || r["concurrency"] == n)
                })
                .unwrap_or_else(|| panic!("{api}: no {phase} row in {rows:#?}"));
            counted += check_row(&format!("{api} {phase}"), row);
        }
        assert!(counted >= 3, "{api}: {counted}");
        let saved = &run_json(dir)["plan"]["settings"]["images"];
        assert_eq!(saved["per_request"], 2, "{saved:#}");
        assert_eq!(saved["format"], format, "{saved:#}");
        assert_eq!(
            saved["sizes"],
            serde_json::json!(["56x28", "100x30"]),
            "{saved:#}"
        );
        let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
        assert!(md.contains("## Images"), "{api}: {md}");
        // Every group of the decode row has its line: images per request, sizes, tokens.
        let decode = cell(&rows, "decode", 512, 2);
        for g in decode["images"]["groups"].as_array().expect("groups") {
            let (label, tokens) = (g["sizes"].as_str().expect("sizes"), &g["image_tokens"]);
            let want = format!("| Sustained decode 512 × 2 | 2 | {label} |");
            let line = md
                .lines()
                .find(|l| l.starts_with(&want))
                .unwrap_or_else(|| panic!("{api}: no `{want}` line in {md}"));
            assert!(
                line.ends_with(&format!("| {tokens} | 0 | server usage |")),
                "{line}"
            );
        }
    }
}

/// Completions has no image part: one line saying which APIs do, exit 1, nothing sent.
#[test]
fn images_on_completions_are_refused_before_anything_is_sent() {
    let s = sim();
    let ran = Bench::run(&s.url)
        .set("--api", "completions")
        .set("--images", "1")
        .set("--contexts", "512")
        .out("images-completions")
        .go();
    let (dir, line) = (&ran.dir, ran.refusal());
    assert!(
        line.contains("use --api chat, messages or responses"),
        "{line}"
    );
    let h = s.handle();
    assert!(
        h.take_arrival_stamps().is_empty(),
        "nothing reached the server"
    );
    assert!(cells(dir).is_empty());
}

#[test]
fn the_images_docs_commands_run() {
    let _serial = exclusive();
    let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/images.md"));
    let cmds = doc_commands(doc);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    let dir = out_dir("images-docs");
    let o = run_doc_pair(&cmds[0], &cmds[1], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "decode", 512, 2);
    assert_eq!(row["status"], "valid", "{row:#}");
    // One 512x512 image at the docs' `image_patch=32`: 16 · 16 + 2.
    let g = &row["images"]["groups"][0];
    assert_eq!(g["sizes"], "512x512", "{row:#}");
    assert_eq!(g["image_tokens"], 258, "{row:#}");
    assert_eq!(run_json(&dir)["plan"]["settings"]["api"], "chat");
}
