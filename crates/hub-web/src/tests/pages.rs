//! The pages and their JSON twins: the list's filters, sort and pages; a run's page, its JSON and
//! its files; compare; the model page; read access with and without a token; the headers.

use super::{Hub, each_backend, varied};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use llmib_hub::Settings;
use serde_json::json;

/// Uploads runs 0..n of the fleet; their ids in order.
async fn fleet(hub: &Hub, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(hub.upload(&varied(i)).await);
    }
    ids
}

#[test]
fn the_list_filters_sorts_and_pages() {
    each_backend("list", Settings::default(), |hub: Hub| async move {
        let ids = fleet(&hub, 5).await;
        let (status, v) = hub.json("/api/runs?engine=vllm").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["total"], json!(2));
        assert!(
            v["runs"]
                .as_array()
                .expect("runs")
                .iter()
                .all(|r| r["engine"] == "vllm")
        );
        let (_, v) = hub.json("/api/runs?gpu=B200&gpu_count=8&q=model-2").await;
        assert_eq!(v["total"], json!(1), "{v}");
        let (_, v) = hub
            .json("/api/runs?sort=engine&dir=desc&per_page=2&page=1")
            .await;
        assert_eq!(v["runs"][0]["engine"], json!("vllm"));
        assert_eq!(v["runs"].as_array().map(Vec::len), Some(2));
        let (_, v) = hub.json("/api/runs?per_page=2&page=3").await;
        assert_eq!(
            v["runs"][0]["id"],
            json!(ids[0]),
            "oldest upload on the last page"
        );
        // `Accept: application/json` on the page's own address is the twin too.
        let req = Request::get("/?model=org%2Fmodel-1")
            .header(header::ACCEPT, "application/json")
            .body(Body::empty())
            .expect("req");
        let (_, _, body) = hub.call(req).await;
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["total"], json!(2));
        // The page: sort links, a compare checkbox per row, pages that keep the filter.
        let (status, page) = hub.get("/?engine=sglang&per_page=1").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            page.contains("href=\"/?engine=sglang&amp;sort=model&amp;dir=asc\""),
            "{page}"
        );
        assert!(page.contains("name=\"ids\" value=\"") && page.contains("action=\"/compare\""));
        assert!(
            page.contains("engine=sglang&amp;sort=uploaded&amp;dir=desc&amp;per_page=1&amp;page=2"),
            "{page}"
        );
        assert!(page.contains("href=\"/model?name=org%2Fmodel-"), "{page}");
        for bad in [
            "/?sort=speed",
            "/?gpu_count=eight",
            "/?from=yesterday",
            "/?per_page=0",
            "/api/runs?dir=up",
        ] {
            let (status, body) = hub.get(bad).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        }
    });
}

#[test]
fn a_run_page_is_the_seed_page_with_its_files() {
    each_backend("run_page", Settings::default(), |hub: Hub| async move {
        let id = fleet(&hub, 1).await[0];
        let (status, page) = hub.get(&format!("/runs/{id}")).await;
        assert_eq!(status, StatusCode::OK);
        for section in [
            "id=\"title\"",
            "id=\"card-hardware\"",
            "id=\"decode-matrix\"",
            "id=\"all-measurements\"",
            "id=\"footnotes\"",
        ] {
            assert!(page.contains(section), "{section}");
        }
        assert!(page.contains(&format!("href=\"/runs/{id}/files/cells.jsonl\"")));
        let (status, v) = hub.json(&format!("/api/runs/{id}")).await;
        assert_eq!(status, StatusCode::OK);
        let files = v["files"].as_array().expect("files");
        assert_eq!(files.len(), 2);
        let cells = files
            .iter()
            .find(|f| f["name"] == "cells.jsonl")
            .expect("cells file");
        assert!(
            page.contains(cells["sha256"].as_str().expect("sha")),
            "the page shows the hash"
        );
        assert!(!v["cells"].as_array().expect("cells").is_empty());
        let req = Request::get(format!("/runs/{id}/files/cells.jsonl"))
            .body(Body::empty())
            .expect("req");
        let (status, headers, body) = hub.call(req).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "application/x-ndjson");
        assert!(
            headers[header::CONTENT_DISPOSITION]
                .to_str()
                .expect("ascii")
                .starts_with("attachment")
        );
        assert_eq!(body.len() as u64, cells["bytes"].as_u64().expect("bytes"));
        for (uri, status) in [
            ("/runs/999", StatusCode::NOT_FOUND),
            ("/api/runs/999", StatusCode::NOT_FOUND),
            ("/runs/abc", StatusCode::BAD_REQUEST),
            (
                &format!("/runs/{id}/files/requests.jsonl"),
                StatusCode::NOT_FOUND,
            ),
            ("/nowhere", StatusCode::NOT_FOUND),
        ] {
            assert_eq!(hub.get(uri).await.0, status, "{uri}");
        }
        let (_, v) = hub.json("/api/runs/999").await;
        assert!(
            v["error"].as_str().expect("line").contains("no run 999"),
            "{v}"
        );
    });
}

#[test]
fn compare_takes_two_to_six_runs() {
    each_backend("compare", Settings::default(), |hub: Hub| async move {
        let ids = fleet(&hub, 7).await;
        let (status, page) = hub
            .get(&format!("/compare?ids={}&ids={}", ids[0], ids[1]))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(page.contains(&format!("run {} · org", ids[0])), "{page}");
        assert!(page.contains(&format!("href=\"/runs/{}\"", ids[1])));
        let (status, v) = hub
            .json(&format!("/api/compare?ids={},{}", ids[0], ids[1]))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["runs"].as_array().map(Vec::len), Some(2));
        let row = &v["rows"][0]["entries"];
        assert_eq!(row[0]["verdict"]["kind"], json!("baseline"));
        let all: Vec<String> = ids.iter().map(i64::to_string).collect();
        for query in [
            format!("ids={}", ids[0]),
            format!("ids={}", all.join(",")),
            "ids=x,y".into(),
            String::new(),
        ] {
            let (status, page) = hub.get(&format!("/compare?{query}")).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {page}");
        }
        let (_, page) = hub.get(&format!("/compare?ids={}", all.join(","))).await;
        assert!(page.contains("2 to 6"), "{page}");
        let (status, _) = hub.get(&format!("/compare?ids={}&ids=999", ids[0])).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    });
}

#[test]
fn the_model_page_ranks_standard_runs_apart() {
    each_backend("model", Settings::default(), |hub: Hub| async move {
        let mut standard = varied(0);
        standard["plan"]["settings"]["standard"] = json!("v1");
        standard["notes"] = json!(["standard"]);
        let std_id = hub.upload(&standard).await;
        let free_id = hub.upload(&varied(3)).await;
        let (status, v) = hub.json("/api/model?name=org%2Fmodel-0").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            v["standard"]
                .as_array()
                .expect("std")
                .iter()
                .all(|r| r["run_id"] == json!(std_id))
        );
        assert!(
            v["free_form"]
                .as_array()
                .expect("free")
                .iter()
                .any(|r| r["run_id"] == json!(free_id))
        );
        let peak = &v["standard"][0];
        assert!(
            peak["peak_decode_tok_per_s"].is_number() && peak["decode_c1_tok_per_s"].is_number(),
            "{peak}"
        );
        let (status, page) = hub.get("/model?name=org%2Fmodel-0").await;
        assert_eq!(status, StatusCode::OK);
        let (std_at, free_at) = (
            page.find("Standard matrix runs").expect("std"),
            page.find("Free-form runs").expect("free"),
        );
        assert!(std_at < free_at);
        assert!(page.contains("standard v1"));
        assert_eq!(hub.get("/model").await.0, StatusCode::BAD_REQUEST);
        let (_, list) = hub.get("/").await;
        assert!(
            list.contains("<span class=\"badge\">standard v1</span>"),
            "the list badges it"
        );
    });
}

#[test]
fn reading_needs_a_token_only_when_set() {
    each_backend("read_open", Settings::default(), |hub: Hub| async move {
        let req = Request::get("/").body(Body::empty()).expect("req");
        assert_eq!(hub.call(req).await.0, StatusCode::OK);
    });
    let closed = Settings {
        read_needs_token: true,
        ..Settings::default()
    };
    each_backend("read_token", closed, |hub: Hub| async move {
        let bare = |uri: &str| Request::get(uri).body(Body::empty()).expect("req");
        let (status, _, body) = hub.call(bare("/")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(String::from_utf8_lossy(&body).contains("log in at"));
        let (status, _, body) = hub.call(bare("/api/runs")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(
            serde_json::from_slice::<serde_json::Value>(&body).expect("json")["error"].is_string()
        );
        assert_eq!(hub.get("/").await.0, StatusCode::OK, "a bearer token reads");
        let cookie = Request::get("/")
            .header(
                header::COOKIE,
                format!("a=b; llmib_hub_token={}", hub.token),
            )
            .body(Body::empty())
            .expect("req");
        assert_eq!(hub.call(cookie).await.0, StatusCode::OK, "the cookie reads");
        let revoked = Request::get("/")
            .header(header::AUTHORIZATION, format!("Bearer {}", hub.revoked))
            .body(Body::empty())
            .expect("req");
        assert_eq!(hub.call(revoked).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(hub.call(bare("/healthz")).await.0, StatusCode::OK);
        assert_eq!(hub.call(bare("/login")).await.0, StatusCode::OK);
        let login = |token: &str| {
            Request::post("/login")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={token}")))
                .expect("req")
        };
        let (status, headers, _) = hub.call(login(&hub.token)).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        let set = headers[header::SET_COOKIE].to_str().expect("ascii");
        assert!(
            set.starts_with(&format!("llmib_hub_token={}", hub.token)) && set.contains("HttpOnly")
        );
        assert_eq!(
            hub.call(login(&hub.revoked)).await.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            hub.call(login("x%3Cscript%3E")).await.0,
            StatusCode::UNAUTHORIZED
        );
    });
}

#[test]
fn every_answer_carries_the_security_headers() {
    each_backend("headers", Settings::default(), |hub: Hub| async move {
        let id = fleet(&hub, 1).await[0];
        for uri in [
            "/",
            "/api/runs",
            &format!("/runs/{id}"),
            "/nowhere",
            "/healthz",
        ] {
            let (_, headers, _) = hub
                .call(Request::get(uri).body(Body::empty()).expect("req"))
                .await;
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                crate::headers::CSP,
                "{uri}"
            );
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
        }
        let (_, _, body) = hub
            .call(Request::get("/healthz").body(Body::empty()).expect("req"))
            .await;
        assert_eq!(body, b"ok");
    });
}
