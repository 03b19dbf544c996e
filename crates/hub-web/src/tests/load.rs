//! The load check (ignored: it fills a store with 10,000 runs, about a minute): list, compare and
//! model pages answered through the router, median times printed, not asserted (timed unit
//! tests flake on a shared machine). The figures go to docs/benchmarks.md.
//!
//! `cargo test -p llmib-hub-web --release -- --ignored --nocapture load_check_pages`

use super::{Hub, seed_cells};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use llmib_hub::{Settings, Store, UploadFiles};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 10_000;
const SAMPLES: usize = 21;

/// A store of `RUNS` runs: 4 engines, 50 models, 5 GPUs; three cells each (a prefill and two
/// decode rows), so the upload's checks stay fast.
fn filled() -> (Store, String) {
    let mut store = Store::open_sqlite_in_memory(Settings::default()).expect("store");
    let token = store.create_token("load").expect("token").secret;
    let cells: String = seed_cells()
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    let base = super::seed_run();
    for i in 0..RUNS {
        let mut run = base.clone();
        run["engine"]["name"] = json!(["sglang", "vllm", "trtllm", "llama.cpp"][i % 4]);
        run["model"]["served_model"] = json!(format!("org/model-{}", i % 50));
        run["hardware"]["gpu_name"] = json!(["H100", "H200", "B200", "MI300X", "L40S"][i % 5]);
        run["notes"] = json!([format!("load {i}")]);
        let mut files = UploadFiles::new();
        files.add("run.json", run.to_string().into_bytes());
        files.add("cells.jsonl", cells.clone().into_bytes());
        store.upload(files, Some(&token), false).expect("upload");
    }
    (store, token)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
#[ignore = "fills 10,000 runs; run by hand for docs/benchmarks.md"]
fn load_check_pages() {
    let started = Instant::now();
    let (store, token) = filled();
    let fill = started.elapsed();
    let hub = Hub {
        router: crate::router(store),
        token: token.clone(),
        revoked: String::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    println!("filled {RUNS} runs in {:.1} s", fill.as_secs_f64());
    let cases = [
        ("list, unfiltered", "/".to_string()),
        ("list, engine=vllm", "/?engine=vllm".to_string()),
        (
            "list, free text \"model-7 H200\"",
            "/?q=model-7+H200".to_string(),
        ),
        (
            "list JSON, sort=decode",
            "/api/runs?sort=decode".to_string(),
        ),
        (
            "compare of 3 runs",
            "/compare?ids=10&ids=5000&ids=9990".to_string(),
        ),
        (
            "model page (200 runs)",
            "/model?name=org%2Fmodel-7".to_string(),
        ),
    ];
    rt.block_on(async {
        for (what, uri) in &cases {
            let mut times = Vec::new();
            for _ in 0..SAMPLES {
                let req = Request::get(uri.as_str())
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .body(Body::empty())
                    .expect("req");
                let t = Instant::now();
                let (status, _, body) = hub.call(req).await;
                times.push(t.elapsed());
                assert_eq!(
                    status,
                    StatusCode::OK,
                    "{uri}: {}",
                    String::from_utf8_lossy(&body)
                );
            }
            println!(
                "{what:<34} median {:>8.2} ms over {SAMPLES}",
                median(times).as_secs_f64() * 1e3
            );
        }
    });
    drop(rt);
}
