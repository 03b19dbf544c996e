//! The Startup diagnostics section: rendered (collapsed, escaped) when the run recorded them,
//! absent when it did not, and valid against the results schema. The record is built from the
//! core crate's recorded outputs, as the runner builds it.

use crate::{Format, Report};
use llmib_core::{DiagInputs, Diagnostics, ProbeError};
use std::path::Path;

const FIXTURES: &str = "../core/src/tests/fixtures";

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(FIXTURES)
        .join(name);
    std::fs::read_to_string(p).expect("fixture")
}

fn diagnostics() -> Diagnostics {
    let mut env = vec![
        ("NCCL_P2P_DISABLE".to_owned(), "0".to_owned()),
        (
            "VLLM_API_KEY".to_owned(),
            "sk-local-0123456789abcdef".to_owned(),
        ),
        (
            "SGLANG_NOTE".to_owned(),
            "<script>alert(1)</script>".to_owned(),
        ),
    ];
    env.push(("PATH".to_owned(), "/usr/bin".to_owned()));
    Diagnostics::from_inputs(DiagInputs {
        env,
        uname: Ok("Linux 6.8.0-45-generic x86_64".into()),
        nvidia_smi: Ok(fixture("nvidia-smi-header.txt")),
        proc_version: Ok(fixture("nvidia-version.txt")),
        topology: Ok(fixture("nvidia-smi-topo-rtxpro6000x4.txt")),
        proc_params: Ok(fixture("nvidia-params-p2p.txt")),
        sys_registry_dwords: Err(ProbeError::NotFound),
    })
}

fn report(with: bool) -> Report {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let mut r = Report::load(&dir).expect("golden");
    r.info.diagnostics = with.then(diagnostics);
    r
}

fn render(r: &Report, f: Format) -> String {
    f.exporter().render(r).expect("renders")
}

#[test]
fn the_page_shows_the_diagnostics_collapsed_and_escaped() {
    let html = render(&report(true), Format::Html);
    let section = &html[html
        .find(r#"<section class="panel" id="diagnostics">"#)
        .expect("section")..];
    let section = &section[..section.find("</section>").expect("end")];
    assert!(section.contains("<h2>Startup diagnostics</h2>"));
    // Collapsed: a <details> without `open`.
    assert!(section.contains(r#"<details class="mini" id="diagnostics-details">"#));
    for text in [
        "Linux 6.8.0-45-generic",
        "x86_64",
        "580.95.05",
        "13.0",
        "on (ForceP2P=0x11, RMForceP2PType=1, RMPcieP2PType=2",
        "&#x2f;proc&#x2f;driver&#x2f;nvidia&#x2f;params",
        "NCCL_P2P_DISABLE",
        r#"<code id="diagnostics-topology">"#,
        "GPU0\t X \tNODE",
        "&lt;script&gt;alert(1)&lt;&#x2f;script&gt;",
    ] {
        assert!(section.contains(text), "{text} missing from {section}");
    }
    assert!(!section.contains("<script>alert"), "unescaped");
    assert!(!html.contains("sk-local-0123456789abcdef"), "secret leaked");
    assert!(!html.contains(">PATH<"), "only the listed prefixes");
}

#[test]
fn the_markdown_has_the_section_and_a_run_without_has_neither() {
    let md = render(&report(true), Format::Markdown);
    assert!(md.contains("\n## Startup diagnostics\n"));
    assert!(md.contains("| NVIDIA driver | 580.95.05 | nvidia-smi |"));
    assert!(md.contains("```text\n\tGPU0\tGPU1"));
    assert!(md.contains("\\<script\\>"));
    let plain = report(false);
    assert!(!render(&plain, Format::Html).contains("id=\"diagnostics\""));
    assert!(!render(&plain, Format::Markdown).contains("Startup diagnostics"));
    assert!(!render(&plain, Format::Json).contains("\"diagnostics\""));
}

#[test]
fn missing_facts_say_why() {
    let mut r = report(true);
    let d = r.info.diagnostics.as_mut().expect("diagnostics");
    d.topology = llmib_core::Probed::missing("nvidia-smi topo -m: not found");
    let md = render(&r, Format::Markdown);
    assert!(
        md.contains("| GPU topology | unknown: nvidia-smi topo -m: not found | — |"),
        "{md}"
    );
    assert!(!md.contains("### GPU topology"));
}

#[test]
fn results_json_carries_them_and_validates() {
    let text = render(&report(true), Format::Json);
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let d = &doc["run"]["diagnostics"];
    assert_eq!(d["p2p_override"]["value"]["on"], true);
    assert_eq!(d["driver_version"]["source"], "nvidia-smi");
    let errs = super::schema::errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let mut broken = doc.clone();
    broken["run"]["diagnostics"]["p2p_override"]["value"]["on"] = serde_json::json!("yes");
    assert!(!super::schema::errors(&broken).is_empty(), "on as text");
}
