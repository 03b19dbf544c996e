//! The compare and eval pages in a real headless browser (split from report.rs, the golden
//! page's checks, whose helpers these share).

use crate::common::*;
use crate::report::*;

#[test]
fn browser_compare_page_is_clean() {
    let Some(chrome) = chromium() else { return };
    let work = out_dir("report-browser-compare");
    let a = llmib_report::Report::load(&seed_dir()).expect("golden run");
    let mut b = a.clone();
    for c in &mut b.cells {
        if let Some(v) = c.total_tok_per_s.as_mut() {
            *v *= 1.25;
        }
    }
    b.info.model.served_model = "<script>alert(1)</script>".to_string();
    let cmp =
        llmib_report::Comparison::new(vec![("a".into(), a), ("b".into(), b)]).expect("comparison");
    let html = cmp.to_html().expect("html");
    let page = artifacts().join("compare.html");
    std::fs::write(&page, &html).expect("write");
    let (dom, stderr) = run_chromium(&chrome, &work, &page, &["--dump-dom"]);
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert!(dom.contains("×1.25"));
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    screenshot(&chrome, &work, &page, "compare.png", "1280,1400", false);
}

#[test]
fn browser_eval_page_is_clean() {
    use llmib_core::{Accuracy, Category, EvalSummary, ItemScore, Profile};
    let Some(chrome) = chromium() else { return };
    let work = out_dir("report-browser-eval");
    let item = |id: &str, c: Category| ItemScore {
        id: id.to_string(),
        expected: "B".into(),
        parsed: (c == Category::Wrong).then(|| "<img src=x onerror=alert(2)>".into()),
        category: c,
        subject: Some("law".into()),
        completion_tokens: Some(40),
        finish_reason: Some("stop".into()),
        error: None,
    };
    let items = vec![
        item("q-1", Category::Correct),
        item("q-2", Category::Correct),
        item("q-3", Category::Correct),
        item("<script>alert(1)</script>", Category::Wrong),
    ];
    let summary = EvalSummary {
        profile: Profile::MmluPro,
        model: "\"><svg onload=alert(3)>".into(),
        url: "http://127.0.0.1:1".into(),
        accuracy: Accuracy::of(&items),
        categories: Default::default(),
        by_subject: [("law".to_string(), Accuracy::of(&items))]
            .into_iter()
            .collect(),
        tok_per_s: 321.0,
        wall_s: 1.0,
        concurrency: 4,
        dataset: Default::default(),
    };
    let view = llmib_report::AccuracyView::new(&summary, &items);
    let page = artifacts().join("eval.html");
    std::fs::write(&page, view.html().expect("html")).expect("write");
    let (dom, stderr) = run_chromium(&chrome, &work, &page, &["--dump-dom"]);
    assert!(dom.contains("75.0%"), "the accuracy is shown: {dom}");
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert!(dom.contains("&lt;img src=x onerror=alert(2)&gt;"), "{dom}");
    assert!(!dom.contains("<svg"), "{dom}");
    for id in [
        "card-accuracy",
        "card-categories",
        "card-dataset",
        "subjects",
        "misses",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "section {id}");
    }
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    screenshot(&chrome, &work, &page, "eval.png", "1280,1000", false);
}
