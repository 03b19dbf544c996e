//! `POST /api/runs`: stored (201), refused for every reason the contract names (401, 409, 413,
//! 422) with one JSON line, and nothing stored on a refusal.

use super::{Hub, body_of, each_backend, seed_cells, seed_run, upload_body, varied};
use axum::http::StatusCode;
use llmib_hub::Settings;
use serde_json::json;

#[test]
fn an_upload_is_stored_once_and_replaced_only_when_asked() {
    each_backend(
        "upload_201_409",
        Settings::default(),
        |hub: Hub| async move {
            let (status, v) = hub.post(body_of(&varied(0)), Some(&hub.token), "").await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
            let id = v["id"].as_i64().expect("id");
            assert_eq!(v["url"], json!(format!("/runs/{id}")));
            assert_eq!(v["replaced"], json!(false));
            let (status, v) = hub.post(body_of(&varied(0)), Some(&hub.token), "").await;
            assert_eq!(status, StatusCode::CONFLICT, "{v}");
            let msg = v["error"].as_str().expect("error line");
            assert!(
                msg.contains("--replace") && msg.contains(&format!("run {id}")),
                "{msg}"
            );
            let (status, v) = hub
                .post(body_of(&varied(0)), Some(&hub.token), "?replace=true")
                .await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
            assert_eq!(
                (v["id"].as_i64(), v["replaced"].clone()),
                (Some(id), json!(true))
            );
            assert_eq!(hub.total().await, 1);
            let (status, _) = hub
                .post(body_of(&varied(0)), Some(&hub.token), "?replace=maybe")
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST);
        },
    );
}

#[test]
fn an_upload_without_a_live_token_is_refused() {
    each_backend("upload_401", Settings::default(), |hub: Hub| async move {
        let revoked = hub.revoked.clone();
        for token in [None, Some("llmib_0000"), Some(revoked.as_str())] {
            let (status, v) = hub.post(body_of(&varied(1)), token, "").await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}: {v}");
            let msg = v["error"].as_str().expect("error line");
            assert!(msg.contains("token") && !msg.contains('\n'), "{msg}");
        }
        assert_eq!(hub.total().await, 0, "nothing stored");
    });
}

#[test]
fn an_upload_over_the_limit_is_refused_naming_it() {
    let settings = Settings {
        max_upload_bytes: 20_000,
        ..Settings::default()
    };
    each_backend("upload_413", settings, |hub: Hub| async move {
        // Files over the store's limit, in a body the server still reads.
        let (status, v) = hub.post(body_of(&varied(2)), Some(&hub.token), "").await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        assert!(
            v["error"].as_str().expect("line").contains("20000 bytes"),
            "{v}"
        );
        // A body past the server's own body limit: refused while reading, the same way.
        let huge = "x".repeat(crate::upload::body_limit(20_000) + 10);
        let body = upload_body(&[("run.json", &huge), ("cells.jsonl", "")]);
        let (status, v) = hub.post(body, Some(&hub.token), "").await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        assert!(
            v["error"].as_str().expect("line").contains("20000 bytes"),
            "{v}"
        );
        assert_eq!(hub.total().await, 0);
    });
}

/// The cells of the seed with one over-capacity row given a 0 throughput instead of null: the
/// loaders read it, the published schema refuses it.
fn cells_the_schema_refuses() -> String {
    let mut done = false;
    seed_cells()
        .lines()
        .map(|line| {
            let mut row: serde_json::Value = serde_json::from_str(line).expect("row");
            if !done && row["status"] == "over_capacity" {
                row["total_tok_per_s"] = json!(0.0);
                done = true;
            }
            row.to_string() + "\n"
        })
        .collect()
}

#[test]
fn what_is_not_a_results_directory_is_refused() {
    each_backend("upload_422", Settings::default(), |hub: Hub| async move {
        let run = varied(3).to_string();
        let cells = seed_cells();
        let mut future = seed_run();
        future["schema_version"] = json!(99);
        let future = future.to_string();
        let torn_middle = format!("{{\"phase\": \"dec\n{cells}");
        let refused = cells_the_schema_refuses();
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "no cells.jsonl",
                upload_body(&[("run.json", &run)]),
                "no cells.jsonl",
            ),
            (
                "an unknown file",
                upload_body(&[
                    ("run.json", &run),
                    ("cells.jsonl", &cells),
                    ("notes.txt", "hi"),
                ]),
                "not a results file",
            ),
            (
                "a future schema",
                upload_body(&[("run.json", &future), ("cells.jsonl", &cells)]),
                "upgrade the hub",
            ),
            (
                "a malformed line",
                upload_body(&[("run.json", &run), ("cells.jsonl", &torn_middle)]),
                "cells.jsonl",
            ),
            (
                "run.json not JSON",
                upload_body(&[("run.json", "{"), ("cells.jsonl", &cells)]),
                "run.json",
            ),
            (
                "a schema violation",
                upload_body(&[("run.json", &run), ("cells.jsonl", &refused)]),
                "results schema at `/cells/",
            ),
            ("not the upload JSON", "[1, 2]".to_string(), "upload body"),
        ];
        for (what, body, says) in cases {
            let (status, v) = hub.post(body, Some(&hub.token), "").await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {v}");
            let msg = v["error"].as_str().expect("error line");
            assert!(msg.contains(says) && !msg.contains('\n'), "{what}: {msg}");
        }
        assert_eq!(hub.total().await, 0, "nothing stored");
    });
}
