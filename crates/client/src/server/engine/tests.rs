//! Probe, gauges and tokenizer tests against a tiny HTTP responder that serves recorded (or
//! source-derived) engine answers from `fixtures/transcripts/<engine>/` on 127.0.0.1:0.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use llmib_core::EngineKind;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

const SG_MODELS: &str = include_str!("../../../fixtures/transcripts/sglang/v1_models.json");
pub(super) const SG_INFO: &str =
    include_str!("../../../fixtures/transcripts/sglang/get_server_info.json");
const SG_METRICS: &str = include_str!("../../../fixtures/transcripts/sglang/metrics.txt");
const SG_TOK: &str = include_str!("../../../fixtures/transcripts/sglang/tokenize.json");
const SG_DETOK: &str = include_str!("../../../fixtures/transcripts/sglang/detokenize.json");
const VL_MODELS: &str = include_str!("../../../fixtures/transcripts/vllm/v1_models.json");
const VL_VERSION: &str = include_str!("../../../fixtures/transcripts/vllm/version.json");
const VL_METRICS: &str = include_str!("../../../fixtures/transcripts/vllm/metrics.txt");
const VL_TOK: &str = include_str!("../../../fixtures/transcripts/vllm/tokenize.json");
const VL_DETOK: &str = include_str!("../../../fixtures/transcripts/vllm/detokenize.json");
const TGI_INFO: &str = include_str!("../../../fixtures/transcripts/tgi/info.json");
const TGI_METRICS: &str = include_str!("../../../fixtures/transcripts/tgi/metrics.txt");
const TGI_TOK: &str = include_str!("../../../fixtures/transcripts/tgi/tokenize.json");
const TGI_MODELS: &str = include_str!("../../../fixtures/transcripts/tgi/v1_models.json");
const TRT_VERSION: &str = include_str!("../../../fixtures/transcripts/trtllm/version.json");
const TRT_MODELS: &str = include_str!("../../../fixtures/transcripts/trtllm/v1_models.json");
const TRT_METRICS: &str = include_str!("../../../fixtures/transcripts/trtllm/metrics.json");
const OL_VERSION: &str = include_str!("../../../fixtures/transcripts/ollama/api_version.json");
const OL_MODELS: &str = include_str!("../../../fixtures/transcripts/ollama/v1_models.json");
const OL_SHOW: &str = include_str!("../../../fixtures/transcripts/ollama/api_show.json");
const OL_PS: &str = include_str!("../../../fixtures/transcripts/ollama/api_ps.json");
const GEN_MODELS: &str = include_str!("../../../fixtures/transcripts/generic/v1_models.json");

const LC_PROPS: &str = include_str!("../../../fixtures/transcripts/llamacpp/props.json");
const LC_MODELS: &str = include_str!("../../../fixtures/transcripts/llamacpp/models.json");
const LC_METRICS: &str = include_str!("../../../fixtures/transcripts/llamacpp/metrics_queued.txt");
const LC_TOK: &str =
    include_str!("../../../fixtures/transcripts/llamacpp/tokenize_add_special.json");
const LC_DETOK: &str = include_str!("../../../fixtures/transcripts/llamacpp/detokenize.json");

/// One canned answer: method, path (query ignored), status, body.
type Route = (&'static str, &'static str, u16, String);

/// Requests the responder saw: request line, headers and body, lower-cased header names.
type Seen = Arc<Mutex<Vec<String>>>;

async fn serve(routes: Vec<Route>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let routes = Arc::new(routes);
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let routes = routes.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                // Read headers, then Content-Length bytes of body.
                let (head_end, len) = loop {
                    let Ok(n) = sock.read(&mut tmp).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (i + 4, len);
                    }
                };
                while buf.len() < head_end + len {
                    let Ok(n) = sock.read(&mut tmp).await else {
                        return;
                    };
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                }
                let text = String::from_utf8_lossy(&buf).into_owned();
                let mut first = text.split_whitespace();
                let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
                let path = target.split('?').next().unwrap_or("");
                log.lock().expect("lock").push(text.clone());
                let (status, body) = routes
                    .iter()
                    .find(|(m, p, _, _)| *m == method && *p == path)
                    .map(|(_, _, s, b)| (*s, b.clone()))
                    .unwrap_or((404, r#"{"detail":"Not Found"}"#.to_owned()));
                let resp = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, seen)
}

fn ok(method: &'static str, path: &'static str, body: &str) -> Route {
    (method, path, 200, body.to_owned())
}

fn opts(url: &str) -> ProbeOptions {
    ProbeOptions {
        timeout: Duration::from_secs(3),
        ..ProbeOptions::new(url)
    }
}

fn sglang_routes() -> Vec<Route> {
    vec![
        ok("GET", "/v1/models", SG_MODELS),
        ok("GET", "/get_server_info", SG_INFO),
        ok("GET", "/metrics", SG_METRICS),
        ok("POST", "/tokenize", SG_TOK),
        ok("POST", "/detokenize", SG_DETOK),
    ]
}

/// URL credentials and a key: the key goes as Bearer and the URL's Basic auth does not replace
/// it (it used to: the server saw only Basic and answered 401); a note says so.
#[tokio::test]
async fn a_key_is_sent_as_bearer_even_with_credentials_in_the_url() {
    let (url, seen) = serve(sglang_routes()).await;
    let with_creds = url.replacen("http://", "http://user:pw@", 1);
    let mut o = opts(&format!("{with_creds}/v1"));
    o.api_key = Some("sk-test".into());
    let p = Engine::probe(&o).await.expect("probe");
    assert_eq!(
        p.engine.base_url(),
        url,
        "credentials dropped from the base URL"
    );
    assert!(
        p.notes.iter().any(|n| n.contains("dropped")),
        "{:?}",
        p.notes
    );
    let log = seen.lock().expect("lock").join("\n").to_ascii_lowercase();
    assert!(log.contains("authorization: bearer sk-test"), "{log}");
    assert!(!log.contains("authorization: basic"), "{log}");
    // Nor in a Debug print, with the raw reader's request head (which carries it) set up.
    let mut e = p.engine;
    e.set_http_reader(crate::wire::body::HttpReader::Raw, Duration::from_secs(1))
        .expect("raw reader");
    let shown = format!("{e:?}");
    assert!(!shown.contains("sk-test"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

const SEED_COMMAND: &str = "sglang serve --model-path zai-org/GLM-5.3-Flash --served-model-name zai-org/GLM-5.3-Flash --trust-remote-code --tp 8 --reasoning-parser glm45 --tool-call-parser glm47 --context-length 1048576 --mem-fraction-static 0.76 --enable-metrics --host 0.0.0.0 --port 8000 --api-key <redacted> --kv-cache-dtype fp8_e4m3 --dsa-prefill-backend flashinfer_sparse_mla --dsa-decode-backend flashinfer_sparse_mla --linear-attn-backend triton --attention-backend dsa --fp8-gemm-backend cutlass --moe-runner-backend triton --speculative-algorithm DFLASH --speculative-draft-model-path incoai/GLM-5.3-Flash-DFlash2 --speculative-draft-attention-backend fa4";

#[tokio::test]
async fn sglang_probe_reads_the_seed_metadata() {
    let (url, seen) = serve(sglang_routes()).await;
    let mut o = opts(&format!("{url}/v1/"));
    o.api_key = Some("sk-test".into());
    let p = Engine::probe(&o).await.expect("probe");
    let e = &p.engine;
    assert_eq!(e.kind(), EngineKind::Sglang);
    assert_eq!(e.base_url(), url);
    assert_eq!(e.completions_url(), format!("{url}/v1/completions"));
    assert_eq!(e.model().served_model, "zai-org/GLM-5.3-Flash");
    let i = e.info();
    assert_eq!(
        i.version.as_deref(),
        Some("0.5.6.post3.dev11345+g028ac64f7")
    );
    assert_eq!(i.commit.as_deref(), Some("028ac64f7"));
    assert_eq!(i.quantization.as_deref(), Some("FP8"));
    assert_eq!(i.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
    assert_eq!(i.backend.as_deref(), Some("cuda"));
    assert_eq!(i.speculative_algorithm.as_deref(), Some("DFLASH"));
    assert_eq!(i.tp_size, Some(8));
    let kv = i.kv_capacity_tokens.clone().expect("kv");
    assert_eq!(
        (kv.value, kv.source.as_str()),
        (2_400_000, "sglang /get_server_info max_total_num_tokens")
    );
    assert_eq!(i.context_length.as_ref().map(|c| c.value), Some(1_048_576));
    assert_eq!(i.capabilities.queue_gauge, Some(true));
    assert_eq!(i.capabilities.generation_counter, Some(true));
    assert_eq!(i.capabilities.cached_tokens, Some(true));
    let cache = (e.prefix_caching(), e.cached_prompt_block_tokens());
    assert_eq!(cache, (Some(true), Some(1)));
    assert_eq!(
        e.launch_command(),
        Some(format!("{SEED_COMMAND} --enable-cache-report").as_str())
    );
    // Secrets from server_args never reach the metadata.
    let extra = serde_json::to_string(&i.extra).expect("json");
    assert!(
        !extra.contains("sk-live") && !extra.contains("hf_abc"),
        "{extra}"
    );
    assert!(extra.contains("<redacted>"));
    // The key was sent, and /health (a generation on SGLang) never was.
    let log = seen.lock().expect("lock").join("\n").to_ascii_lowercase();
    assert!(log.contains("authorization: bearer sk-test"));
    assert!(!log.contains("get /health"));

    let g = e.gauges().await.expect("gauges");
    assert_eq!((g.running, g.waiting), (Some(8.0), Some(1.0)));
    assert_eq!(g.generation_tokens_total, Some(98304.0));
    assert_eq!(g.cached_prompt_tokens_total, Some(1_048_576.0));
    assert_eq!(e.tokenize("The quick", true).await.expect("tok").len(), 5);
    assert_eq!(
        e.detokenize(&[1, 2]).await.expect("detok"),
        "The quick brown fox"
    );
    let log = seen.lock().expect("lock").join("\n");
    assert!(
        log.contains(r#""add_special_tokens":true"#) && log.contains(r#""prompt":"The quick""#)
    );
}

#[tokio::test]
async fn vllm_probe_capacity_from_cache_config_info() {
    let (url, _) = serve(vec![
        ok("GET", "/v1/models", VL_MODELS),
        ok("GET", "/version", VL_VERSION),
        ok("GET", "/metrics", VL_METRICS),
        ok("POST", "/tokenize", VL_TOK),
        ok("POST", "/detokenize", VL_DETOK),
    ])
    .await;
    let p = Engine::probe(&opts(&url)).await.expect("probe");
    let e = &p.engine;
    assert_eq!(e.kind(), EngineKind::Vllm);
    let i = e.info();
    assert_eq!(i.version.as_deref(), Some("0.32.0"));
    let kv = i.kv_capacity_tokens.clone().expect("kv");
    assert_eq!(
        (kv.value, kv.source.as_str()),
        (1_048_576, "vllm:cache_config_info kv_cache_size_tokens")
    );
    assert_eq!(i.context_length.as_ref().map(|c| c.value), Some(4096));
    assert_eq!(i.kv_cache_dtype.as_deref(), Some("auto"));
    let cache = (e.prefix_caching(), e.cached_prompt_block_tokens());
    assert_eq!(cache, (Some(true), Some(128)));
    assert_eq!(e.model().model_path.as_deref(), Some("/models/tiny-llama"));
    assert_eq!(e.launch_command(), None);
    let g = e.gauges().await.expect("gauges");
    assert_eq!(
        (g.running, g.waiting, g.generation_tokens_total),
        (Some(4.0), Some(3.0), Some(5120.0))
    );
    assert_eq!(
        e.tokenize("x", false).await.expect("tok"),
        vec![1, 450, 4996, 17354, 1701]
    );
    assert_eq!(
        e.detokenize(&[1]).await.expect("detok"),
        "The quick brown fox"
    );
}

#[tokio::test]
async fn llamacpp_probe_slots_times_context() {
    let (url, seen) = serve(vec![
        ok("GET", "/v1/models", LC_MODELS),
        ok("GET", "/props", LC_PROPS),
        ok("GET", "/metrics", LC_METRICS),
        ok("POST", "/tokenize", LC_TOK),
        ok("POST", "/detokenize", LC_DETOK),
    ])
    .await;
    let p = Engine::probe(&opts(&url)).await.expect("probe");
    let e = &p.engine;
    assert_eq!(e.kind(), EngineKind::LlamaCpp);
    let i = e.info();
    assert_eq!(i.kv_capacity_tokens.as_ref().map(|k| k.value), Some(16_384));
    assert_eq!(i.context_length.as_ref().map(|k| k.value), Some(4096));
    assert_eq!(
        (
            i.version.as_deref(),
            i.build.as_deref(),
            i.commit.as_deref()
        ),
        (Some("b0"), Some("b0-unknown"), None)
    );
    assert_eq!(i.capabilities.continuous_usage_stats, Some(false));
    assert_eq!(i.capabilities.min_tokens, Some(false));
    assert!(e.prompt_adds_bos());
    let g = e.gauges().await.expect("gauges");
    assert_eq!(
        (g.running, g.waiting, g.generation_tokens_total),
        (Some(4.0), Some(4.0), Some(71.0))
    );
    assert_eq!(
        e.tokenize("Hello world", true).await.expect("tok"),
        vec![1, 15043, 3186]
    );
    assert_eq!(
        e.detokenize(&[1, 15043, 3186]).await.expect("detok"),
        "<s> Hello world"
    );
    assert_eq!(g.cached_prompt_tokens_total, Some(46.0));
    assert_eq!(
        e.model().model_path.as_deref(),
        Some("/root/.cache/llm-inference-bench/llama.cpp-11434/models/tiny-llama-seed0.gguf")
    );
    let log = seen.lock().expect("lock").join("\n");
    assert!(log.contains(r#""add_special":true"#) && log.contains(r#""content":"Hello world""#));
    let body = e.completion_body("tiny-llama", PromptInput::Ids(vec![1, 2]), 8, true);
    assert_eq!(
        body,
        json!({"model":"tiny-llama","prompt":[1,2],"max_tokens":8,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true}})
    );
}

#[tokio::test]
async fn tgi_probe_and_tokenize_without_detokenize() {
    let (url, _) = serve(vec![
        ok("GET", "/v1/models", TGI_MODELS),
        ok("GET", "/info", TGI_INFO),
        ok("GET", "/metrics", TGI_METRICS),
        ok("POST", "/tokenize", TGI_TOK),
    ])
    .await;
    let e = Engine::probe(&opts(&url)).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::Tgi);
    let i = e.info();
    assert_eq!(i.version.as_deref(), Some("3.3.4"));
    assert_eq!(
        i.kv_capacity_tokens.as_ref().map(|k| k.value),
        Some(125_248)
    );
    assert_eq!(i.context_length.as_ref().map(|k| k.value), Some(8192));
    assert_eq!(
        e.model().revision.as_deref(),
        Some("0e9e39f249a16976918f6564b8830bc894c89659")
    );
    assert_eq!(e.gauges().await.expect("g").waiting, Some(3.0));
    assert_eq!(
        e.tokenize("The quick", true).await.expect("tok"),
        vec![128000, 791, 4062]
    );
    assert!(matches!(
        e.detokenize(&[1]).await,
        Err(EngineError::Unsupported(_))
    ));
    assert!(e.has_tokenizer() && !e.has_detokenizer());
    let body = e.completion_body("m", PromptInput::Text("hi".into()), 4, true);
    assert_eq!(body.get("ignore_eos"), None);
    assert_eq!(body.get("min_tokens"), None);
}

#[tokio::test]
async fn trtllm_probe_json_metrics() {
    let (url, _) = serve(vec![
        ok("GET", "/v1/models", TRT_MODELS),
        ok("GET", "/version", TRT_VERSION),
        ok("GET", "/metrics", TRT_METRICS),
    ])
    .await;
    let e = Engine::probe(&opts(&url)).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::TrtLlm);
    let i = e.info();
    assert_eq!(i.version.as_deref(), Some("1.2.0rc4"));
    assert_eq!(
        i.kv_capacity_tokens.as_ref().map(|k| k.value),
        Some(131_072)
    );
    assert_eq!(i.capabilities.queue_gauge, Some(true));
    assert_eq!(i.capabilities.generation_counter, Some(false));
    let g = e.gauges().await.expect("gauges");
    assert_eq!(
        (g.running, g.waiting, g.generation_tokens_total),
        (Some(8.0), Some(2.0), None)
    );
    assert!(!e.has_tokenizer());
}

#[tokio::test]
async fn ollama_probe() {
    let (url, _) = serve(vec![
        ok("GET", "/v1/models", OL_MODELS),
        ok("GET", "/api/version", OL_VERSION),
        ok("POST", "/api/show", OL_SHOW),
        ok("GET", "/api/ps", OL_PS),
    ])
    .await;
    let e = Engine::probe(&opts(&url)).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::Ollama);
    let i = e.info();
    assert_eq!(i.version.as_deref(), Some("0.13.1"));
    assert_eq!(i.quantization.as_deref(), Some("Q8_0"));
    assert_eq!(i.context_length.as_ref().map(|k| k.value), Some(4096));
    assert_eq!(i.kv_capacity_tokens, None);
    assert_eq!(i.capabilities.ignore_eos, Some(false));
    assert_eq!(e.gauges().await.expect("g"), Gauges::default());
    assert!(matches!(
        e.tokenize("x", true).await,
        Err(EngineError::Unsupported(_))
    ));
}

#[tokio::test]
async fn generic_endpoint_needs_a_model_when_several_are_served() {
    let (url, _) = serve(vec![ok("GET", "/v1/models", GEN_MODELS)]).await;
    let err = Engine::probe(&opts(&url)).await.expect_err("several");
    let m = err.to_string();
    assert!(
        m.contains("gpt-4o-mini, gpt-4o") && m.ends_with("pass --model with one of them"),
        "{m}"
    );

    let mut o = opts(&url);
    o.model = Some("gpt-4o".into());
    let e = Engine::probe(&o).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::Generic);
    assert_eq!(e.info().capabilities.ignore_eos, None);
    let body = e.completion_body("gpt-4o", PromptInput::Text("hi".into()), 4, true);
    assert_eq!(
        body,
        json!({"model":"gpt-4o","prompt":"hi","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}})
    );

    o.model = Some("nope".into());
    let m = Engine::probe(&o).await.expect_err("missing").to_string();
    assert!(
        m.contains("server serves: gpt-4o-mini, gpt-4o; pass --model"),
        "{m}"
    );
}

/// 10,000 listed models and a megabyte-long id: the error line stays short (it printed 180 KB).
#[tokio::test]
async fn a_huge_model_list_is_cut_in_the_error_line() {
    let mut ids: Vec<Value> = (0..10_000)
        .map(|i| json!({"id": format!("model-{i}")}))
        .collect();
    ids[0] = json!({"id": "x".repeat(1 << 20)});
    let body = json!({"object": "list", "data": ids}).to_string();
    let (url, _) = serve(vec![ok("GET", "/v1/models", &body)]).await;
    let m = Engine::probe(&opts(&url))
        .await
        .expect_err("several")
        .to_string();
    assert!(m.len() < 2_000, "{} bytes", m.len());
    assert!(
        m.contains("… and 9990 more") && m.contains("(1048576 characters)"),
        "{m}"
    );
    let mut o = opts(&url);
    o.model = Some("y".repeat(1 << 20));
    let m = Engine::probe(&o).await.expect_err("not served").to_string();
    assert!(m.len() < 3_000, "{} bytes", m.len());
}

/// A URL whose `/v1/models` is not there is not an OpenAI-compatible root: the error says to
/// check --url, not to pass --model.
#[tokio::test]
async fn a_404_on_the_model_list_says_to_check_the_url() {
    let (url, _) = serve(vec![]).await;
    let m = Engine::probe(&opts(&url))
        .await
        .expect_err("404")
        .to_string();
    assert!(m.contains("HTTP 404") && m.contains("check --url"), "{m}");
}

#[tokio::test]
async fn a_bare_version_endpoint_is_not_vllm() {
    let (url, _) = serve(vec![
        ok(
            "GET",
            "/v1/models",
            r#"{"data":[{"id":"m","owned_by":"proxy"}]}"#,
        ),
        ok("GET", "/version", r#"{"version":"1.2.3"}"#),
        ok(
            "GET",
            "/metrics",
            "# nothing engine-specific\nhttp_requests_total 5\n",
        ),
    ])
    .await;
    let e = Engine::probe(&opts(&url)).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::Generic);
    assert_eq!(e.info().extra.get("owned_by"), Some(&json!("proxy")));
}

#[tokio::test]
async fn failures_are_one_line_and_say_what_to_do() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let m = Engine::probe(&opts(&format!("http://127.0.0.1:{port}")))
        .await
        .expect_err("refused")
        .to_string();
    assert!(m.contains("is the server running"), "{m}");

    let (url, _) = serve(vec![(
        "GET",
        "/v1/models",
        401,
        r#"{"error":{"message":"Invalid API key","type":"invalid_request_error","code":401}}"#
            .into(),
    )])
    .await;
    let err = Engine::probe(&opts(&url)).await.expect_err("auth");
    assert!(matches!(err, ProbeError::Auth(_)));
    assert!(
        err.to_string()
            .contains("check the key (`--api-key` or `OPENAI_API_KEY`)")
    );

    let (url, _) = serve(vec![ok(
        "GET",
        "/v1/models",
        r#"{"object":"list","data":[]}"#,
    )])
    .await;
    let m = Engine::probe(&opts(&url))
        .await
        .expect_err("none")
        .to_string();
    assert!(
        m.contains("lists no model") && m.ends_with("pass --model NAME"),
        "{m}"
    );

    for bad in ["localhost:8000", "ftp://x", "http://", ""] {
        assert!(
            matches!(
                Engine::probe(&opts(bad)).await,
                Err(ProbeError::InvalidUrl(_))
            ),
            "{bad}"
        );
    }
    assert!(Engine::probe(&opts("http://127.0.0.1:1/v1")).await.is_err());
}

#[tokio::test]
async fn overrides_and_forced_engine() {
    let (url, _) = serve(sglang_routes()).await;
    let mut o = opts(&url);
    o.dcp_size = Some(2);
    let i = Engine::probe(&o)
        .await
        .expect("probe")
        .engine
        .info()
        .clone();
    let kv = i.kv_capacity_tokens.expect("kv");
    assert_eq!(kv.value, 4_800_000);
    assert!(kv.source.ends_with("× --dcp-size 2"), "{}", kv.source);
    assert_eq!(i.dcp_size, Some(2));

    o.kv_capacity = Some(123);
    let kv = Engine::probe(&o)
        .await
        .expect("probe")
        .engine
        .info()
        .kv_capacity_tokens
        .clone();
    assert_eq!(
        kv.map(|k| (k.value, k.source)),
        Some((123, "--kv-capacity".to_owned()))
    );

    let mut o = opts(&url);
    o.engine = Some(EngineKind::Vllm);
    let e = Engine::probe(&o).await.expect("probe").engine;
    assert_eq!(e.kind(), EngineKind::Vllm);
}

#[tokio::test]
async fn metrics_off_is_noted() {
    let mut routes = sglang_routes();
    routes.retain(|r| r.1 != "/metrics");
    let (url, _) = serve(routes).await;
    let p = Engine::probe(&opts(&url)).await.expect("probe");
    assert_eq!(p.engine.info().capabilities.queue_gauge, Some(false));
    assert!(
        p.notes.iter().any(|n| n.contains("--enable-metrics")),
        "{:?}",
        p.notes
    );
    assert!(p.engine.gauges().await.is_err());
}

pub(super) fn normalize_base(s: &str) -> Option<String> {
    probe::normalize_base_url(s).ok()
}

/// Probes a live server and prints what was read:
/// `LLMIB_PROBE_URL=http://127.0.0.1:8000 [LLMIB_PROBE_KEY=…] cargo test -p llmib-client --lib
/// probe_live -- --ignored --nocapture`.
#[tokio::test]
#[ignore]
async fn probe_live() {
    let Ok(url) = std::env::var("LLMIB_PROBE_URL") else {
        return;
    };
    let mut o = opts(&url);
    o.api_key = std::env::var("LLMIB_PROBE_KEY").ok();
    match Engine::probe(&o).await {
        Ok(p) => {
            let e = &p.engine;
            println!("kind: {:?}\nmodel: {:?}", e.kind(), e.model());
            println!(
                "info: {}",
                serde_json::to_string_pretty(e.info()).unwrap_or_default()
            );
            println!("launch: {:?}\nnotes: {:?}", e.launch_command(), p.notes);
            println!("gauges: {:?}", e.gauges().await);
            if e.has_tokenizer() {
                println!(
                    "tokenize: {:?}",
                    e.tokenize("The quick brown fox", true).await
                );
            }
        }
        Err(err) => println!("probe failed: {err}"),
    }
}

/// KV usage and speculative-decoding figures for the live view, as each engine names them.
#[test]
fn live_gauges_kv_usage_and_speculative_decoding() {
    let sg = concat!(
        "sglang:token_usage{dp_rank=\"0\"} 0.5\nsglang:token_usage{dp_rank=\"1\"} 0.25\n",
        "sglang:spec_accept_rate{tp_rank=\"0\"} 0.55\nsglang:spec_accept_length 1.55\n",
    );
    let g = gauges_from(EngineKind::Sglang, &Metrics::parse(sg));
    assert_eq!(g.kv_usage, Some(0.375), "mean over ranks, not the sum");
    assert_eq!(
        (g.spec_accept_rate, g.spec_accept_length),
        (Some(0.55), Some(1.55))
    );
    let vl = concat!(
        "vllm:kv_cache_usage_perc{engine=\"0\"} 0.8\nvllm:spec_decode_num_drafts_total 100\n",
        "vllm:spec_decode_num_draft_tokens_total 300\n",
        "vllm:spec_decode_num_accepted_tokens_total 150\n",
    );
    let g = gauges_from(EngineKind::Vllm, &Metrics::parse(vl));
    assert_eq!(g.kv_usage, Some(0.8));
    let before = g.spec_counters.expect("counters");
    let after = SpecCounters {
        drafts: 200.0,
        draft_tokens: 600.0,
        accepted_tokens: 330.0,
        ..Default::default()
    };
    // 180 of 300 draft tokens accepted over 100 steps: rate 0.6, 2.8 tokens per step.
    let (rate, len) = after.since(&before).expect("drafts in between");
    assert!((rate - 0.6).abs() < 1e-12 && (len - 2.8).abs() < 1e-12);
    assert_eq!(before.since(&before), None);
    let no = gauges_from(
        EngineKind::Vllm,
        &Metrics::parse("vllm:num_requests_running 1\n"),
    );
    assert_eq!((no.kv_usage, no.spec_counters), (None, None));
}

/// Sampling and extra keys reach every generation body; the tool's own keys stay the tool's.
#[tokio::test]
async fn request_controls_are_in_every_body_and_never_replace_the_tools_keys() {
    let (url, _) = serve(sglang_routes()).await;
    let mut o = opts(&url);
    let mut extra = serde_json::Map::new();
    extra.insert("top_k".into(), json!(20));
    // A hand-edited run.json could hold one of the tool's keys: it is still not sent.
    extra.insert("ignore_eos".into(), json!(false));
    o.request = llmib_core::RequestControls {
        temperature: Some(0.6),
        seed: Some(7),
        extra_body: Some(extra),
        ..Default::default()
    };
    let e = Engine::probe(&o).await.expect("probe").engine;
    let body = e.completion_body("m", PromptInput::Text("hi".into()), 4, true);
    assert_eq!(body["temperature"], json!(0.6));
    assert_eq!(body["seed"], json!(7));
    assert_eq!(body["top_k"], json!(20));
    assert_eq!(body["ignore_eos"], json!(true), "{body}");
    assert!(body.get("top_p").is_none());
}
