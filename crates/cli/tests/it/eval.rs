//! `eval` end to end against simulators that answer this project's fixture questions with a
//! set accuracy (`answer_accuracy`, decided from each item id), then `compare` of two runs:
//! accuracies, the flipped items and the McNemar p-value are what the item ids decide.

use crate::common::*;
use crate::e2e::Bench;
use crate::llamacpp::{LlamaServer, llama};
use crate::run::exact_sim;
use llmib_sim::answers::answers_correctly;
use serde_json::Value;
use std::path::Path;

/// Fixture datasets: GSM8K-style numbers and MMLU-Pro-style letters, each question carrying the
/// simulator's `⟦sim:ID:ANSWER⟧` marker.
pub(crate) fn write_fixtures(dir: &Path) -> (Vec<String>, Vec<String>) {
    std::fs::create_dir_all(dir).expect("dataset dir");
    let mut gsm = String::new();
    let mut gsm_ids = Vec::new();
    for i in 0..40u32 {
        let id = format!("gsm-{i}");
        let answer = 10 + i;
        gsm.push_str(&format!(
            "{{\"id\":\"{id}\",\"question\":\"Tom has {i} apples and buys 10 more. How many? \u{27e6}sim:{id}:{answer}\u{27e7}\",\"answer\":\"{answer}\"}}\n"
        ));
        gsm_ids.push(id);
    }
    std::fs::write(dir.join("gsm8k.jsonl"), gsm).expect("gsm8k.jsonl");
    let mut mc = String::new();
    let mut mc_ids = Vec::new();
    for i in 0..12u32 {
        let id = format!("mmlu-{i}");
        let letter = (b'A' + (i % 4) as u8) as char;
        let subject = if i % 2 == 0 { "law" } else { "physics" };
        mc.push_str(&format!(
            "{{\"id\":\"{id}\",\"question\":\"Which one? \u{27e6}sim:{id}:{letter}\u{27e7}\",\"options\":[\"w\",\"x\",\"y\",\"z\"],\"answer\":\"{letter}\",\"category\":\"{subject}\"}}\n"
        ));
        mc_ids.push(id);
    }
    std::fs::write(dir.join("mmlu-pro.jsonl"), mc).expect("mmlu-pro.jsonl");
    (gsm_ids, mc_ids)
}

fn eval(url: &str, data: &Path, profile: &str, out: &Path, max_output: &str) -> serde_json::Value {
    let s = Bench::eval(url, profile)
        .set("--dataset-dir", data.display().to_string())
        .set("--concurrency", "4")
        .set("--max-output", max_output)
        .out_at(out)
        .ok()
        .file("eval.json");
    serde_json::from_str(&s).expect("eval.json is JSON")
}

#[test]
fn eval_scores_fixture_items_and_compare_pairs_two_runs() {
    let _serial = timing_lock();
    let base = out_dir("eval");
    let _ = std::fs::remove_dir_all(&base);
    let data = base.join("data");
    let (gsm_ids, mc_ids) = write_fixtures(&data);
    let sim_at = |p: f64| {
        let mut cfg = exact_sim();
        cfg.answer_accuracy = Some(p);
        Sim::start(cfg)
    };
    let (a, b) = (sim_at(0.80), sim_at(0.74));
    let want = |ids: &[String], p: f64| ids.iter().filter(|id| answers_correctly(id, p)).count();

    let ea = eval(&a.url, &data, "gsm8k", &base.join("a"), "64");
    let eb = eval(&b.url, &data, "gsm8k", &base.join("b"), "64");
    assert_eq!(ea["accuracy"]["n"], 40);
    assert_eq!(ea["accuracy"]["correct"], want(&gsm_ids, 0.80), "{ea:#}");
    assert_eq!(eb["accuracy"]["correct"], want(&gsm_ids, 0.74), "{eb:#}");
    let w = &ea["accuracy"]["wilson_95"];
    let (lo, hi) = (w[0].as_f64().unwrap_or(-1.0), w[1].as_f64().unwrap_or(-1.0));
    let acc = num(&ea["accuracy"], "accuracy");
    assert!(lo < acc && acc < hi, "{lo} < {acc} < {hi}");
    let k = want(&gsm_ids, 0.80) as u64;
    let (wl, wh) = llmib_core::wilson_95(k, 40).expect("interval");
    assert!((lo - wl).abs() < 1e-12 && (hi - wh).abs() < 1e-12);
    assert!(k > 20 && k < 40, "the fixture ids spread: {k}");
    let md = std::fs::read_to_string(base.join("a").join("eval.md")).expect("eval.md");
    assert!(
        md.contains("# Accuracy: gsm8k") && md.contains("## Not correct"),
        "{md}"
    );
    let html = std::fs::read_to_string(base.join("a").join("eval.html")).expect("eval.html");
    let shown = format!("{:.1}%", acc * 100.0);
    assert!(
        html.contains(&shown) && html.contains("id=\"misses\""),
        "{html}"
    );
    // `report` on an eval directory writes its pages again from its results.
    std::fs::remove_file(base.join("a").join("eval.html")).expect("remove");
    let o = run_bin(&["report", base.join("a").to_str().unwrap_or_default()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("eval.html"), "{}", text(&o));
    let again = std::fs::read_to_string(base.join("a").join("eval.html")).expect("rewritten");
    assert!(again.contains(&shown));
    // Every wrong answer is a wrong number, not an unparseable one.
    assert_eq!(
        ea["categories"]["unparseable"],
        serde_json::Value::Null,
        "{ea:#}"
    );

    let o = run_bin(&[
        "compare",
        base.join("a").to_str().unwrap_or_default(),
        base.join("b").to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let flips = gsm_ids
        .iter()
        .filter(|id| answers_correctly(id, 0.80) && !answers_correctly(id, 0.74))
        .count() as u64;
    let p = llmib_eval::mcnemar_exact(flips, 0);
    assert!(
        out.contains(&format!("{flips} right in A only, 0 right in B only")),
        "{out}"
    );
    assert!(out.contains(&format!("p = {p:.4}")), "{out}");

    // Letters, per subject; and a limit too short for the answer line: truncated, not wrong.
    let em = eval(&a.url, &data, "mmlu-pro", &base.join("mc"), "64");
    assert_eq!(em["accuracy"]["correct"], want(&mc_ids, 0.80), "{em:#}");
    assert_eq!(em["by_subject"]["law"]["n"], 6, "{em:#}");
    let et = eval(&a.url, &data, "mmlu-pro", &base.join("cut"), "8");
    assert_eq!(et["categories"]["truncated"], 12, "{et:#}");
}

/// A tiny eval against llama.cpp: the generated tiny model answers nonsense, so this checks the
/// plumbing (chat requests, temperature 0, natural stops, usage) and that every item lands in
/// one scoring category, with the limit's cuts counted as truncated.
/// `eval.json` keeps the server's URL as `run.json` does: without its user and password (one
/// function strips both), and no file of the run holds the password.
#[test]
fn eval_json_keeps_no_url_credentials() {
    let _serial = timing_lock();
    let base = out_dir("eval-credentials");
    let _ = std::fs::remove_dir_all(&base);
    let data = base.join("data");
    write_fixtures(&data);
    let sim = Sim::start(exact_sim());
    let with_userinfo = sim.url.replacen("http://", "http://reader:pa55w0rd@", 1);
    let out = base.join("run");
    let e = eval(&with_userinfo, &data, "mmlu-pro", &out, "64");
    assert_eq!(e["url"], sim.url.as_str(), "{e:#}");
    for f in ["eval.json", "eval.md", "eval.html", "items.jsonl"] {
        let body = std::fs::read_to_string(out.join(f)).expect("a result file");
        assert!(!body.contains("pa55w0rd"), "the password in {f}");
        assert!(!body.contains("reader@"), "the user in {f}");
    }
}

#[test]
fn llamacpp_tiny_eval_scores_every_item() {
    let Some(paths) = llama() else { return };
    let _serial = exclusive();
    let server = LlamaServer::start(paths, "eval", 2, 1024, None);
    let base = out_dir("llamacpp-eval");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("dir");
    let lines: String = (0..4)
        .map(|i| {
            format!(
                "{{\"id\":\"q{i}\",\"question\":\"What is {i} + 1?\",\"answer\":\"{}\"}}\n",
                i + 1
            )
        })
        .collect();
    std::fs::write(base.join("gsm8k.jsonl"), lines).expect("dataset");
    let out = base.join("run");
    let v: Value = serde_json::from_str(
        &Bench::eval(&server.url, "gsm8k")
            .set("--dataset-dir", base.display().to_string())
            .set("--concurrency", "2")
            .set("--max-output", "16")
            .out_at(&out)
            .ok()
            .file("eval.json"),
    )
    .expect("JSON");
    assert_eq!(v["accuracy"]["n"], 4, "{v:#}");
    let total: u64 = v["categories"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    assert_eq!(total, 4, "every item in one category: {v:#}");
    let items = std::fs::read_to_string(out.join("items.jsonl")).expect("items");
    for line in items.lines() {
        let it: Value = serde_json::from_str(line).expect("item");
        assert!(it["finish_reason"].is_string(), "{it}");
        assert!(it["completion_tokens"].as_u64().unwrap_or(0) >= 1, "{it}");
        if it["finish_reason"] == "length" && it["category"] != "correct" {
            assert_eq!(it["category"], "truncated", "{it}");
        }
    }

    // The long-answer task on the same server: the search, the counts and the built-in
    // pattern's verdict (the tiny model never states the result) go through a real engine.
    let out = base.join("tokens");
    let v: Value = serde_json::from_str(
        &Bench::eval(&server.url, "long-answer")
            .set("--levels", "1,2")
            .set("--patience", "1")
            .set("--min-results", "2")
            .set("--max-output", "16")
            .out_at(&out)
            .ok()
            .file("tokens.json"),
    )
    .expect("JSON");
    let st = &v["stats"];
    let n = st["results"].as_u64().unwrap_or(0);
    assert!(n >= 2, "{v:#}");
    assert_eq!(st["errors"], 0, "{v:#}");
    assert!(num(&st["completion_tokens"], "max") <= 16.0, "{v:#}");
    assert!(num(&st["completion_tokens"], "min") >= 1.0, "{v:#}");
    assert_eq!(
        st["correct"][1].as_u64(),
        Some(n),
        "every answer judged: {v:#}"
    );
    assert!(
        v["levels"].as_array().is_some_and(|l| !l.is_empty()),
        "{v:#}"
    );
    let chosen = v["chosen"].as_u64().unwrap_or(0);
    assert!(chosen == 1 || chosen == 2, "{v:#}");
}

/// Completion-token statistics against a simulator whose aggregate rate doubles from 1 to 2
/// requests at once and halves again at 4: the search must stop after 4 (patience 1) and choose
/// 2, then fill `--min-results` there; every answer ends with the pattern's line.
#[test]
fn long_answer_search_chooses_the_fastest_level_and_counts_tokens() {
    let _serial = timing_lock();
    let base = out_dir("long-answer");
    let _ = std::fs::remove_dir_all(&base);
    let mut cfg = exact_sim();
    cfg.answer_accuracy = Some(1.0);
    cfg.answer_words = 20;
    cfg.decode_step_ms = vec![(1, 10.0), (2, 10.0), (4, 40.0)];
    let sim = Sim::start(cfg);
    let task = |out: &Path, max_output: &str| {
        run_bin(&[
            "eval",
            "--url",
            &sim.url,
            "--prompt",
            "Count to a few thousand, then say so. \u{27e6}sim:task-1:5050\u{27e7}",
            "--answer-regex",
            r"#### 5050$",
            "--levels",
            "1,2,4,8",
            "--min-gain",
            "0.1",
            "--patience",
            "1",
            "--min-results",
            "5",
            "--max-output",
            max_output,
            "--output",
            out.to_str().unwrap_or_default(),
        ])
    };
    let out = base.join("full");
    let o = task(&out, "256");
    assert!(o.status.success(), "{}", text(&o));
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tokens.json")).expect("tokens.json"),
    )
    .expect("JSON");
    let probed: Vec<u64> = s["levels"]
        .as_array()
        .expect("levels")
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(probed, vec![1, 2, 4], "{s:#}");
    assert_eq!(s["chosen"], 2, "{s:#}");
    let rate = |i: usize| num(&s["levels"][i], "tok_per_s");
    assert!(rate(1) > 1.5 * rate(0) && rate(2) < 0.75 * rate(1), "{s:#}");
    // 1 + 2 + 4 from the search, then two batches of 2 to reach 5 at the chosen level.
    let st = &s["stats"];
    assert_eq!(st["results"], 11, "{s:#}");
    assert_eq!(st["correct"], serde_json::json!([11, 11]), "{s:#}");
    assert_eq!(st["max_token_hits"], 0);
    let t = &st["completion_tokens"];
    assert!(
        num(t, "min") > 20.0 && num(t, "min") == num(t, "max"),
        "{t}"
    );
    assert_eq!(
        st["ttft_ms"]["n"], 6,
        "TTFT at the chosen level only: {s:#}"
    );
    assert_eq!(s["completion_token_source"], "server usage");
    let lines = std::fs::read_to_string(out.join("tasks.jsonl")).expect("tasks.jsonl");
    assert_eq!(lines.lines().count(), 11);
    let md = std::fs::read_to_string(out.join("tokens.md")).expect("tokens.md");
    assert!(
        md.contains("## Concurrency search") && md.contains("11/11"),
        "{md}"
    );

    // A limit below the answer: every request hits it, and no final line matches.
    let out = base.join("cut");
    let o = task(&out, "8");
    assert!(o.status.success(), "{}", text(&o));
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tokens.json")).expect("tokens.json"),
    )
    .expect("JSON");
    let n = s["stats"]["results"].as_u64().expect("results");
    assert_eq!(s["stats"]["max_token_hits"].as_u64(), Some(n), "{s:#}");
    assert_eq!(s["stats"]["correct"], serde_json::json!([0, n]), "{s:#}");
    assert_eq!(num(&s["stats"]["completion_tokens"], "max"), 8.0);
}
