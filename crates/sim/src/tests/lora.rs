//! LoRA adapters over raw HTTP: `/v1/models` lists them beside the base model as vLLM and
//! SGLang do, a request names one as its engine does (vLLM: the name; SGLang: `base:name`),
//! an unknown one is refused in the engine's shape, the arrival log says which adapter served
//! each request, and a decode step pays `lora_switch_ms` per distinct adapter in its batch.

use serde_json::{Value, json};

use super::raw::{exchange, post};
use crate::{Flavor, PassStamp, SimConfig};

fn config(flavor: Flavor) -> SimConfig {
    SimConfig {
        flavor,
        lora_adapters: vec!["sql".into(), "chat".into()],
        stamp_chunks: true,
        ..SimConfig::default()
    }
}

fn completion(model: &str, max_tokens: u32) -> Value {
    json!({"model": model, "prompt": "Say hi", "max_tokens": max_tokens, "ignore_eos": true})
}

#[tokio::test]
async fn models_list_the_adapters_after_the_base_model() {
    for flavor in [Flavor::Vllm, Flavor::Sglang] {
        let sim = crate::spawn(config(flavor)).await.expect("starts");
        let (status, body) = exchange(sim.addr(), "GET", "/v1/models", None).await;
        sim.shutdown().await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_str(&body).expect("JSON");
        let data = v["data"].as_array().expect("a list");
        let ids: Vec<&str> = data.iter().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["sim/tiny", "sql", "chat"], "{flavor:?}");
        assert_eq!(data[0]["parent"], Value::Null);
        assert_eq!(data[0]["max_model_len"], 4096);
        for card in &data[1..] {
            assert_eq!(card["parent"], "sim/tiny", "{card}");
            assert_eq!(card["root"], card["id"], "{card}");
            assert_eq!(card["max_model_len"], Value::Null, "{card}");
            assert_eq!(card["object"], "model");
            let perm = card.get("permission").is_some();
            assert_eq!(perm, flavor == Flavor::Vllm, "{card}");
        }
    }
}

#[tokio::test]
async fn vllm_serves_an_adapter_by_name_and_refuses_an_unknown_one() {
    let sim = crate::spawn(config(Flavor::Vllm)).await.expect("starts");
    let addr = sim.addr();
    let a = post(addr, "/v1/completions", &completion("chat", 2)).await;
    let a: Value = serde_json::from_str(&a).expect("JSON");
    assert_eq!(a["model"], "chat", "vLLM answers with the adapter's name");
    let base = post(addr, "/v1/completions", &completion("sim/tiny", 2)).await;
    let base: Value = serde_json::from_str(&base).expect("JSON");
    assert_eq!(base["model"], "sim/tiny");
    let (status, body) = exchange(
        addr,
        "POST",
        "/v1/completions",
        Some(&completion("nope", 2).to_string()),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        r#"{"error":{"message":"The model `nope` does not exist.","type":"NotFoundError","param":null,"code":404}}"#
    );
    let arrivals = sim.take_arrival_stamps();
    sim.shutdown().await;
    let served: Vec<Option<&str>> = arrivals.iter().map(|a| a.adapter.as_deref()).collect();
    assert_eq!(
        served,
        [Some("chat"), None],
        "the refused one never arrived"
    );
}

#[tokio::test]
async fn sglang_serves_base_colon_adapter_and_a_bare_name_on_the_base_model() {
    let sim = crate::spawn(config(Flavor::Sglang)).await.expect("starts");
    let addr = sim.addr();
    let a = post(addr, "/v1/completions", &completion("sim/tiny:sql", 2)).await;
    let a: Value = serde_json::from_str(&a).expect("JSON");
    assert_eq!(
        a["model"], "sim/tiny:sql",
        "SGLang echoes the model as sent"
    );
    post(addr, "/v1/completions", &completion("sql", 2)).await;
    let (status, body) = exchange(
        addr,
        "POST",
        "/v1/completions",
        Some(&completion("sim/tiny:nope", 2).to_string()),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("LoRA adapter `nope` is not loaded"), "{body}");
    let arrivals = sim.take_arrival_stamps();
    sim.shutdown().await;
    let served: Vec<Option<&str>> = arrivals.iter().map(|a| a.adapter.as_deref()).collect();
    assert_eq!(served, [Some("sql"), None]);
}

/// The median time between two decode steps of a two-request batch, and the adapters the
/// steps held, when the two requests name `models` (step 4 ms at any batch, 20 ms per adapter).
async fn two_stream_steps(models: [&str; 2]) -> (f64, Vec<u32>) {
    let cfg = SimConfig {
        decode_step_ms: vec![(1, 4.0)],
        lora_switch_ms: 20.0,
        ..config(Flavor::Vllm)
    };
    let sim = crate::spawn(cfg).await.expect("starts");
    let addr = sim.addr();
    let reqs = models.map(|m| completion(m, 12));
    futures_util::future::join_all(reqs.iter().map(|b| post(addr, "/v1/completions", b))).await;
    let passes = sim.take_pass_stamps();
    sim.shutdown().await;
    let both: Vec<&PassStamp> = passes.iter().filter(|p| p.decode_batch == 2).collect();
    assert!(both.len() >= 8, "{passes:?}");
    let mut gaps: Vec<f64> = passes
        .windows(2)
        .filter(|w| w[0].decode_batch == 2 && w[1].decode_batch == 2)
        .map(|w| w[1].end.duration_since(w[0].end).as_secs_f64() * 1e3)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let adapters = both.iter().map(|p| p.lora_adapters).collect();
    (gaps[gaps.len() / 2], adapters)
}

/// The rule's known answers: 4 + 2 × 20 = 44 ms with two adapters in the batch, 4 + 20 = 24 ms
/// with one, 4 ms with the base model only. The tolerance (−10 %, +40 %) is the host's: a
/// loaded 2-core machine wakes the scheduler late now and then, never early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decode_step_pays_per_distinct_adapter_in_its_batch() {
    for (models, want_adapters, want_ms) in [
        (["sql", "chat"], 2, 44.0),
        (["sql", "sql"], 1, 24.0),
        (["sim/tiny", "sim/tiny"], 0, 4.0),
    ] {
        let (gap, adapters) = two_stream_steps(models).await;
        assert!(
            adapters.iter().all(|&a| a == want_adapters),
            "{models:?}: {adapters:?}"
        );
        let (lo, hi) = (want_ms * 0.9, want_ms * 1.4 + 1.0);
        assert!(
            (lo..=hi).contains(&gap),
            "{models:?}: median step {gap:.2} ms, expected {want_ms} ms"
        );
    }
}
