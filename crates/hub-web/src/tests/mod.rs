//! The server's tests, driven through the router (`tower::ServiceExt::oneshot`) against a fresh
//! store: SQLite in memory always, and PostgreSQL too when `LLMIB_TEST_POSTGRES_URL` names a
//! server (required under CI). Fixtures are the checked-in seed run, varied through JSON.

mod hostile;
mod load;
mod pages;
mod uploads;

use crate::router;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use llmib_hub::{Settings, Store};
use serde_json::{Value, json};
use tower::ServiceExt;

const SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/seed-run");

/// The seed run's run.json as JSON, to vary.
pub(crate) fn seed_run() -> Value {
    let text = std::fs::read_to_string(format!("{SEED}/run.json")).expect("seed run.json");
    serde_json::from_str(&text).expect("seed run.json parses")
}

/// The seed run's cells.jsonl.
pub(crate) fn seed_cells() -> String {
    std::fs::read_to_string(format!("{SEED}/cells.jsonl")).expect("seed cells.jsonl")
}

/// Run `i` of a small fleet: engines alternate sglang and vllm, models cycle over three, GPUs
/// over two; each run.json differs (its start time), so each is its own run.
pub(crate) fn varied(i: usize) -> Value {
    let mut run = seed_run();
    run["engine"]["name"] = json!(if i.is_multiple_of(2) {
        "sglang"
    } else {
        "vllm"
    });
    run["engine"]["kind"] = json!(if i.is_multiple_of(2) {
        "sglang"
    } else {
        "vllm"
    });
    run["model"]["served_model"] = json!(format!("org/model-{}", i % 3));
    run["hardware"]["gpu_name"] = json!(if i % 4 < 2 { "H100" } else { "B200" });
    run["started_at"] = json!(format!("2026-01-{:02}T10:00:00Z", 1 + i % 28));
    run["notes"] = json!([format!("fixture {i}")]);
    run
}

/// The upload body of `run` with the seed's cells.
pub(crate) fn body_of(run: &Value) -> String {
    upload_body(&[
        ("run.json", &run.to_string()),
        ("cells.jsonl", &seed_cells()),
    ])
}

/// An upload body of these files.
pub(crate) fn upload_body(files: &[(&str, &str)]) -> String {
    let map: serde_json::Map<String, Value> = files
        .iter()
        .map(|(n, t)| (n.to_string(), json!(t)))
        .collect();
    json!({ "files": map }).to_string()
}

/// A server over a fresh store, with a live token and a revoked one.
#[derive(Clone)]
pub(crate) struct Hub {
    pub(crate) router: Router,
    pub(crate) token: String,
    pub(crate) revoked: String,
}

/// Where a test's store lives.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// SQLite in memory.
    Sqlite,
    /// A fresh PostgreSQL database (its URL).
    Postgres(String),
}

impl Hub {
    /// Opens the store (outside any runtime: the PostgreSQL client must not run on one),
    /// creates the tokens and builds the router.
    pub(crate) fn open(backend: &Backend, settings: Settings) -> Hub {
        let mut store = match backend {
            Backend::Sqlite => Store::open_sqlite_in_memory(settings),
            Backend::Postgres(url) => Store::open(url, settings),
        }
        .expect("open store");
        let token = store.create_token("tests").expect("token").secret;
        let old = store.create_token("old").expect("token");
        store.revoke_token(old.id).expect("revoke");
        Hub {
            router: router(store),
            token,
            revoked: old.secret,
        }
    }

    /// One request; the status, headers and body.
    pub(crate) async fn call(&self, req: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let res = self.router.clone().oneshot(req).await.expect("infallible");
        let (parts, body) = res.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.expect("body");
        (parts.status, parts.headers, bytes.to_vec())
    }

    /// `GET uri` with the live token; the status and the body as text.
    pub(crate) async fn get(&self, uri: &str) -> (StatusCode, String) {
        let req = Request::get(uri)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .body(Body::empty())
            .expect("request");
        let (status, _, body) = self.call(req).await;
        (status, String::from_utf8(body).expect("utf-8 answer"))
    }

    /// `GET uri` (JSON twin) with the live token.
    pub(crate) async fn json(&self, uri: &str) -> (StatusCode, Value) {
        let (status, body) = self.get(uri).await;
        (status, serde_json::from_str(&body).expect("JSON answer"))
    }

    /// `POST /api/runs{query}` of `body` with `token`.
    pub(crate) async fn post(
        &self,
        body: String,
        token: Option<&str>,
        query: &str,
    ) -> (StatusCode, Value) {
        let mut req = Request::post(format!("/api/runs{query}"))
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let (status, _, body) = self
            .call(req.body(Body::from(body)).expect("request"))
            .await;
        (status, serde_json::from_slice(&body).expect("JSON answer"))
    }

    /// Uploads `run` (with the seed's cells) and returns its id.
    pub(crate) async fn upload(&self, run: &Value) -> i64 {
        let (status, v) = self.post(body_of(run), Some(&self.token), "").await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v["id"].as_i64().expect("id")
    }

    /// How many runs the hub holds.
    pub(crate) async fn total(&self) -> u64 {
        let (_, v) = self.json("/api/runs").await;
        v["total"].as_u64().expect("total")
    }
}

/// Runs `case` against every backend: SQLite always; PostgreSQL when the environment names a
/// server (a test without one fails under CI, skips elsewhere). Each case gets a fresh store;
/// the store is dropped outside the runtime (a PostgreSQL client must be).
pub(crate) fn each_backend<F, Fut>(tag: &str, settings: Settings, case: F)
where
    F: Fn(Hub) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut backends = vec![(Backend::Sqlite, None)];
    match llmib_hub::testing::fresh_postgres_url(tag).expect("test PostgreSQL server") {
        Some(url) => backends.push((Backend::Postgres(url.clone()), Some(url))),
        None if llmib_hub::testing::postgres_required() => {
            panic!("{}", llmib_hub::testing::postgres_missing_message(tag))
        }
        None => eprintln!("{}", llmib_hub::testing::postgres_missing_message(tag)),
    }
    for (backend, url) in backends {
        let hub = Hub::open(&backend, settings.clone());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(case(hub.clone()));
        drop(rt);
        drop(hub);
        if let Some(url) = url {
            llmib_hub::testing::drop_postgres_database(&url).expect("drop test database");
        }
    }
}
