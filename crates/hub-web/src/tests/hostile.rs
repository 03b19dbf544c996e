//! Hostile strings in every field a page shows (model id, engine, version, quantization, GPU,
//! OS, launch command, tool version, standard, a context label, a query value, a file name) stay
//! text on every page: no markup of the data reaches the page unescaped.

use super::{Hub, each_backend, seed_cells, upload_body, varied};
use axum::http::StatusCode;
use llmib_hub::Settings;
use serde_json::{Value, json};

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";

fn hostile_run(i: usize) -> Value {
    let mut run = varied(i);
    run["model"]["served_model"] = json!(format!("org/{SCRIPT}"));
    run["engine"]["name"] = json!(format!("eng{IMG}"));
    run["engine"]["version"] = json!(format!("1.0{SCRIPT}"));
    run["engine"]["quantization"] = json!(format!("FP8{IMG}"));
    run["hardware"]["gpu_name"] = json!(format!("GPU{SCRIPT}{i}"));
    run["hardware"]["os"] = json!(IMG);
    run["launch_command"] = json!(format!("serve --name '{IMG}' {SCRIPT}"));
    run["tool"]["version"] = json!(format!("0.6{IMG}"));
    run["plan"]["settings"]["standard"] = json!(format!("v1{SCRIPT}"));
    run
}

/// The seed's cells with the 8K context labelled with markup.
fn hostile_cells() -> String {
    seed_cells()
        .lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).expect("row");
            if row["context_label"] == "8K" {
                row["context_label"] = json!(format!("8K{IMG}"));
            }
            row.to_string() + "\n"
        })
        .collect()
}

fn assert_inert(what: &str, page: &str) {
    for live in ["<script>alert", "<img", "onerror=alert(1)>"] {
        assert!(
            !page.contains(live),
            "{what}: `{live}` reached the page unescaped"
        );
    }
}

#[test]
fn hostile_strings_stay_text_on_every_page() {
    each_backend("hostile", Settings::default(), |hub: Hub| async move {
        let cells = hostile_cells();
        let mut ids = Vec::new();
        for i in 0..2 {
            let body = upload_body(&[
                ("run.json", &hostile_run(i).to_string()),
                ("cells.jsonl", &cells),
            ]);
            let (status, v) = hub.post(body, Some(&hub.token), "").await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
            ids.push(v["id"].as_i64().expect("id"));
        }
        let model = super::super::params::encode(&[("name", &format!("org/{SCRIPT}"))]);
        let pages = [
            "/".to_string(),
            format!(
                "/?{}",
                super::super::params::encode(&[("model", &format!("org/{SCRIPT}")), ("q", IMG)])
            ),
            format!("/runs/{}", ids[0]),
            format!("/compare?ids={}&ids={}", ids[0], ids[1]),
            format!("/model?{model}"),
            format!("/runs/{}/files/%3Cscript%3Ealert(1)%3C%2Fscript%3E", ids[0]),
            "/?sort=%3Cscript%3Ealert(1)%3C%2Fscript%3E".to_string(),
            "/compare?ids=%3Cimg%20src%3Dx%3E".to_string(),
        ];
        for uri in &pages {
            let (status, page) = hub.get(uri).await;
            assert!(
                status.is_success() || status.is_client_error(),
                "{uri}: {status}"
            );
            assert_inert(uri, &page);
        }
        let (_, list) = hub.get("/").await;
        assert!(list.contains("&lt;script&gt;alert(1)"), "shown as text");
        let (_, run) = hub.get(&format!("/runs/{}", ids[0])).await;
        assert!(run.contains("&lt;script&gt;alert(1)"), "shown as text");
        let (_, model_page) = hub.get(&format!("/model?{model}")).await;
        assert!(
            model_page.contains("standard v1&lt;script&gt;"),
            "{model_page}"
        );
    });
}
