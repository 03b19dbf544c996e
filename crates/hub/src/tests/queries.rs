//! Queries: list filters, free-text search, sorts and pages; compare cells; a model's
//! headlines; the list's query plans use indexes; and (ignored) the 10,000-run load check.

use super::{Db, databases, files_of, seed_run};
use crate::{Dialect, ListFilter, Page, SortKey, Store, UploadFiles};
use serde_json::Value;

/// A small run (three cells) varied by `i`: models, engines, GPUs and dates cycle.
pub(super) fn varied(i: usize) -> UploadFiles {
    let mut run = seed_run();
    run["model"]["served_model"] = format!("org/model-{}", i % 50).into();
    run["engine"]["name"] = ["sglang", "vllm", "llama.cpp"][i % 3].into();
    run["engine"]["version"] = format!("0.{}.0", i % 7).into();
    run["engine"]["quantization"] = ["FP8", "BF16"][i % 2].into();
    run["hardware"]["gpu_name"] = ["H100", "H200", "RTX PRO 6000"][i % 3].into();
    run["hardware"]["gpu_count"] = (1 << (i % 4)).into();
    run["started_at"] = format!("2026-{:02}-{:02}T10:00:00Z", 1 + i % 12, 1 + i % 28).into();
    run["notes"] = Value::from(vec![format!("run {i}")]);
    if i.is_multiple_of(5) {
        run["plan"]["settings"]["standard"] = "v1".into();
    }
    let cells = [
        (r#"prefill"#, 1, Some(9000.0 + i as f64), None),
        (r#"decode"#, 1, None, Some(100.0 + (i % 13) as f64)),
        (r#"decode"#, 8, None, Some(600.0 + (i % 17) as f64)),
    ];
    let mut lines = String::new();
    for (phase, n, prompt, total) in cells {
        let row = serde_json::json!({"phase": phase, "context_tokens": 8192, "context_label": "8K",
            "concurrency": n, "status": "valid", "prompt_tok_per_s": prompt,
            "total_tok_per_s": total, "per_request_tok_per_s": null, "ttft_ms_p50": 10.0,
            "tbt_ms_p50": null, "avg_active_requests": null, "completed_requests": 1,
            "output_tokens": null, "measured_s": null, "token_count_source": null,
            "server_generation_tokens": null, "ttft_ms": null, "tbt_ms": null,
            "per_request_tok_per_s_summary": null, "requests_sent": null,
            "requests_without_token": null, "errors": {}, "first_error": null, "queue": null,
            "prompt_check": null, "status_reason": null, "started_at": null,
            "finished_at": null});
        lines.push_str(&row.to_string());
        lines.push('\n');
    }
    let mut f = UploadFiles::new();
    f.add("run.json", serde_json::to_vec(&run).expect("json"));
    f.add("cells.jsonl", lines.into_bytes());
    f
}

/// A store on `db` holding `n` varied runs.
pub(super) fn filled(db: &Db, n: usize) -> Store {
    let (mut s, token) = db.store();
    for i in 0..n {
        s.upload(varied(i), Some(&token), false).expect("upload");
    }
    s
}

#[test]
fn filters_search_sort_and_pages() {
    for db in databases("filters") {
        filters_search_sort_and_pages_on(&db);
    }
}

fn filters_search_sort_and_pages_on(db: &Db) {
    let s = filled(db, 60);
    let all = s
        .list(&ListFilter::default(), &Page::default())
        .expect("list");
    assert_eq!((all.total, all.runs.len()), (60, 50));
    let f = ListFilter {
        engine: Some("vllm".into()),
        gpu_count: Some(2),
        ..Default::default()
    };
    let page = s.list(&f, &Page::default()).expect("list");
    assert!(page.total > 0);
    assert!(
        page.runs
            .iter()
            .all(|r| r.engine.as_deref() == Some("vllm") && r.gpu_count == Some(2))
    );
    let text = ListFilter {
        text: Some("model-7 H2".into()),
        ..Default::default()
    };
    let found = s.list(&text, &Page::default()).expect("search");
    assert!(found.total > 0);
    assert!(
        found
            .runs
            .iter()
            .all(|r| r.model == "org/model-7" && r.gpu_name.as_deref() == Some("H200"))
    );
    let standard = ListFilter {
        standard: Some("v1".into()),
        ..Default::default()
    };
    let v1 = s.list(&standard, &Page::default()).expect("standard");
    assert_eq!(v1.total, 12);
    assert!(v1.runs.iter().all(|r| r.standard.as_deref() == Some("v1")));
    let dates = ListFilter {
        started_from: Some("2026-03-01".into()),
        started_to: Some("2026-03-31".into()),
        ..Default::default()
    };
    let march = s.list(&dates, &Page::default()).expect("dates");
    assert!(march.total > 0);
    assert!(march.runs.iter().all(|r| {
        r.started_at
            .as_deref()
            .is_some_and(|d| d.starts_with("2026-03"))
    }));
    let by_decode = Page {
        sort: SortKey::BestDecode,
        descending: true,
        offset: 0,
        limit: 10,
    };
    let top = s
        .list(&ListFilter::default(), &by_decode)
        .expect("sorted")
        .runs;
    assert!(
        top.windows(2)
            .all(|w| w[0].best_decode_tok_per_s >= w[1].best_decode_tok_per_s)
    );
    let second = Page {
        offset: 10,
        ..by_decode
    };
    let next = s
        .list(&ListFilter::default(), &second)
        .expect("page 2")
        .runs;
    assert!(next.iter().all(|r| !top.iter().any(|t| t.id == r.id)));
}

#[test]
fn free_text_that_looks_like_query_syntax_is_just_words() {
    for db in databases("free_text") {
        let s = filled(&db, 3);
        let hostile = [
            "\"",
            "model-1 OR",
            "NEAR(",
            "*",
            "col:x",
            "-",
            "a'b",
            "'",
            "''",
            "\\",
            "x&y",
            "x | y",
            "!x",
            "a:b",
            "(x)",
            "o'brien:*&|!<->",
            "model-1:* | !sglang",
        ];
        for q in hostile {
            let f = ListFilter {
                text: Some(q.into()),
                ..Default::default()
            };
            s.list(&f, &Page::default())
                .unwrap_or_else(|e| panic!("{:?}: {q:?} is query syntax: {e}", db.dialect));
        }
        // Punctuation splits words as the index does: `model-1:* | !zzz` asks for runs with
        // the words model, 1 and zzz, not for an OR or a NOT.
        let found = |q: &str| {
            let f = ListFilter {
                text: Some(q.into()),
                ..Default::default()
            };
            s.list(&f, &Page::default()).expect("search").total
        };
        assert_eq!(found("model-1:* | !zzz"), 0, "{:?}", db.dialect);
        assert_eq!(found("model-1:* | !sglang"), 1, "{:?}", db.dialect);
        assert_eq!(found("model-1 vllm"), 1, "{:?}", db.dialect);
        assert_eq!(found("llama"), 1, "{:?}: a prefix of llama.cpp", db.dialect);
        assert_eq!(found("cpp"), 1, "{:?}: the part after the dot", db.dialect);
        assert_eq!(
            found("'model'"),
            3,
            "{:?}: quotes are no syntax",
            db.dialect
        );
        assert_eq!(
            found("odel"),
            0,
            "{:?}: a word's start, not its middle",
            db.dialect
        );
    }
}

#[test]
fn compare_cells_and_model_headlines() {
    for db in databases("compare") {
        compare_cells_and_model_headlines_on(&db);
    }
}

fn compare_cells_and_model_headlines_on(db: &Db) {
    let s = filled(db, 6);
    let cells = s.cells_of(&[1, 2, 999]).expect("cells");
    assert_eq!(cells.len(), 6);
    assert!(cells[..3].iter().all(|c| c.run_id == 1));
    let heads = s.headlines("org/model-1").expect("headlines");
    assert_eq!(heads.len(), 1);
    let h = &heads[0];
    assert_eq!((h.context_tokens, h.peak_concurrency), (8192, Some(8)));
    assert_eq!(h.decode_c1_tok_per_s, Some(101.0));
    assert_eq!(h.peak_decode_tok_per_s, Some(601.0));
    assert_eq!(h.prefill_tok_per_s, Some(9001.0));
}

#[test]
fn the_seed_runs_headlines_rank_contexts_by_peak_decode() {
    for db in databases("seed_headlines") {
        seed_headlines_on(&db);
    }
}

fn seed_headlines_on(db: &Db) {
    let (mut s, token) = db.store();
    s.upload(files_of(&seed_run()), Some(&token), false)
        .expect("upload");
    let heads = s.headlines("zai-org/GLM-5.3-Flash").expect("headlines");
    assert!(!heads.is_empty());
    let peaks: Vec<f64> = heads
        .iter()
        .filter_map(|h| h.peak_decode_tok_per_s)
        .collect();
    assert!(peaks.windows(2).all(|w| w[0] >= w[1]));
}

/// `EXPLAIN QUERY PLAN` of the list query, one line per step.
fn plan_of(s: &Store, f: &ListFilter, page: &Page) -> Vec<String> {
    let (sql, params) = crate::query::list_sql(f, page, Dialect::Sqlite);
    s.db()
        .query(&format!("EXPLAIN QUERY PLAN {sql}"), &params)
        .expect("explain")
        .iter()
        .map(|r| r.text(3).expect("detail"))
        .collect()
}

/// Each filter of the list and the index it must use.
fn sqlite_cases() -> Vec<(ListFilter, &'static str)> {
    vec![
        (
            ListFilter {
                model: Some("org/model-1".into()),
                ..Default::default()
            },
            "runs_model",
        ),
        (
            ListFilter {
                engine: Some("vllm".into()),
                ..Default::default()
            },
            "runs_engine",
        ),
        (
            ListFilter {
                gpu_name: Some("H100".into()),
                ..Default::default()
            },
            "runs_gpu",
        ),
        (
            ListFilter {
                tool_version: Some("0.6.2".into()),
                ..Default::default()
            },
            "runs_tool",
        ),
        (
            ListFilter {
                standard: Some("v1".into()),
                ..Default::default()
            },
            "runs_standard",
        ),
        (
            ListFilter {
                quantization: Some("FP8".into()),
                ..Default::default()
            },
            "runs_quantization",
        ),
        (ListFilter::default(), "runs_uploaded"),
    ]
}

#[test]
fn the_list_query_reads_indexes_not_the_table() {
    let sqlite = super::sqlite_only("plan_sqlite");
    let s = filled(&sqlite, 30);
    s.db().batch("ANALYZE").expect("analyze");
    let cases = sqlite_cases();
    for (f, index) in cases {
        let plan = plan_of(&s, &f, &Page::default());
        let text = plan.join(" | ");
        assert!(
            text.contains(&format!("USING INDEX {index}")),
            "{f:?}: {text}"
        );
        assert!(
            !text.contains("TEMP B-TREE"),
            "{f:?} sorts without the index: {text}"
        );
        assert!(
            plan.iter()
                .all(|l| !l.starts_with("SCAN runs") || l.contains("INDEX")),
            "{text}"
        );
    }
    let sorted = Page {
        sort: SortKey::BestDecode,
        ..Page::default()
    };
    let text = plan_of(&s, &ListFilter::default(), &sorted).join(" | ");
    assert!(text.contains("USING INDEX runs_best_decode"), "{text}");
    let search = ListFilter {
        text: Some("model".into()),
        ..Default::default()
    };
    let text = plan_of(&s, &search, &Page::default()).join(" | ");
    assert!(
        text.contains("VIRTUAL TABLE INDEX"),
        "free text reads the FTS index: {text}"
    );
}

/// The issue's load check: list and compare with 10,000 stored runs. Timing is printed, not
/// asserted (a timed assertion flakes on a busy machine): run with
/// `cargo test -p llmib-hub --release -- --ignored --nocapture load`.
#[test]
#[ignore = "load check: prints timings; run on demand"]
fn load_check_10000_runs() {
    for db in databases("load") {
        println!("on {:?}:", db.dialect);
        load_check_on(&db);
    }
}

fn load_check_on(db: &Db) {
    let t = std::time::Instant::now();
    let s = filled(db, 10_000);
    println!("inserted 10000 runs in {:?}", t.elapsed());
    let f = ListFilter {
        model: Some("org/model-7".into()),
        ..Default::default()
    };
    let sorts = [
        SortKey::UploadedAt,
        SortKey::BestDecode,
        SortKey::Gpu,
        SortKey::StartedAt,
    ];
    for sort in sorts {
        let page = Page {
            sort,
            ..Page::default()
        };
        let t = std::time::Instant::now();
        let out = s.list(&f, &page).expect("list");
        println!(
            "list model filter, {sort:?}: {} of {} in {:?}",
            out.runs.len(),
            out.total,
            t.elapsed()
        );
        let t = std::time::Instant::now();
        let out = s.list(&ListFilter::default(), &page).expect("list");
        println!(
            "list unfiltered, {sort:?}: {} of {} in {:?}",
            out.runs.len(),
            out.total,
            t.elapsed()
        );
    }
    let t = std::time::Instant::now();
    let out = s
        .list(
            &ListFilter {
                text: Some("vllm H200".into()),
                ..Default::default()
            },
            &Page::default(),
        )
        .expect("search");
    println!("free text: {} in {:?}", out.total, t.elapsed());
    let t = std::time::Instant::now();
    let cells = s.cells_of(&[17, 4242, 9999]).expect("compare");
    println!("compare 3 runs: {} cells in {:?}", cells.len(), t.elapsed());
    let t = std::time::Instant::now();
    let heads = s.headlines("org/model-7").expect("headlines");
    println!("model page: {} headlines in {:?}", heads.len(), t.elapsed());
}

/// `varied(i)` as model `org/cap`, following `standard`, with `extra` cell lines appended.
fn capacity_run(i: usize, standard: Option<&str>, extra: &str) -> UploadFiles {
    let files = varied(i);
    let mut run: Value = serde_json::from_slice(&files.files()[0].1).expect("run.json");
    run["model"]["served_model"] = "org/cap".into();
    run["plan"]["settings"]["standard"] = standard.map_or(Value::Null, Value::from);
    let mut cells = files.files()[1].1.clone();
    cells.extend_from_slice(extra.as_bytes());
    let mut out = UploadFiles::new();
    out.add("run.json", serde_json::to_vec(&run).expect("json"));
    out.add("cells.jsonl", cells);
    out
}

#[test]
fn headlines_carry_capacity_and_rank_standard_runs_first() {
    let capacity = serde_json::json!({"phase": "capacity", "context_tokens": 8192,
        "context_label": "8K", "concurrency": 0, "status": "valid", "prompt_tok_per_s": null,
        "total_tok_per_s": null, "per_request_tok_per_s": null, "ttft_ms_p50": null,
        "tbt_ms_p50": null, "avg_active_requests": null, "completed_requests": 0,
        "output_tokens": null, "measured_s": null, "token_count_source": null,
        "server_generation_tokens": null, "ttft_ms": null, "tbt_ms": null,
        "per_request_tok_per_s_summary": null, "requests_sent": null,
        "requests_without_token": null, "errors": {}, "first_error": null, "queue": null,
        "prompt_check": null, "status_reason": null, "started_at": null, "finished_at": null,
        "capacity_request_rate": 12.5, "capacity_concurrency": 4});
    for db in databases("capacity") {
        let (mut s, token) = db.store();
        // A free-form run with the higher peak and a capacity row; a standard run without.
        let free = s
            .upload(
                capacity_run(12, None, &format!("{capacity}\n")),
                Some(&token),
                false,
            )
            .expect("free-form run");
        let standard = s
            .upload(capacity_run(1, Some("v1"), ""), Some(&token), false)
            .expect("standard run");
        let heads = s.headlines("org/cap").expect("headlines");
        let ids: Vec<_> = heads.iter().map(|h| h.run_id).collect();
        assert_eq!(
            ids,
            [standard, free],
            "{:?}: standard runs first",
            db.dialect
        );
        assert_eq!(heads[0].standard.as_deref(), Some("v1"));
        assert_eq!(heads[0].capacity_request_rate, None);
        assert_eq!(heads[1].standard, None);
        assert_eq!(heads[1].peak_decode_tok_per_s, Some(612.0));
        assert_eq!(heads[1].capacity_request_rate, Some(12.5));
        assert_eq!(heads[1].capacity_concurrency, Some(4));
        let cells = s.cells_of(&[free]).expect("cells");
        assert_eq!(cells.last().and_then(|c| c.capacity_concurrency), Some(4));
    }
}
