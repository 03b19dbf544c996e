//! Tests of one measured stream (the reqwest reader; the raw reader's are beside them).

use super::*;

#[test]
fn retry_after_is_read_in_seconds_and_capped() {
    let h = |v: &str| {
        let mut m = reqwest::header::HeaderMap::new();
        m.insert(reqwest::header::RETRY_AFTER, v.parse().expect("header"));
        retry_after(&m)
    };
    assert_eq!(h("2"), Some(Duration::from_secs(2)));
    assert_eq!(h(" 0.5 "), Some(Duration::from_millis(500)));
    assert_eq!(h("99999"), Some(Duration::from_secs(60)));
    assert_eq!(h("Wed, 21 Oct 2026 07:28:00 GMT"), None);
    assert_eq!(h("-3"), None);
    assert_eq!(retry_after(&reqwest::header::HeaderMap::new()), None);
}

#[test]
fn a_body_that_cannot_be_serialised_is_an_error_not_an_empty_request() {
    // JSON object keys must be strings: a map keyed by pairs cannot be written.
    let bad: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
    let e = RequestSpec::new("http://x/v1/completions".into(), &bad, Counting::Deferred)
        .expect_err("not serialisable")
        .to_string();
    assert!(e.contains("could not be serialised"), "{e}");
    let ok = RequestSpec::new("u".into(), &serde_json::json!({"a": 1}), Counting::Deferred)
        .expect("serialisable");
    assert_eq!(&ok.body[..], br#"{"a":1}"#);
}

#[test]
fn zero_chunks_take_tokens_from_the_next_grown_chunk() {
    let mut v = vec![
        Chunk { t_ns: 1, tokens: 0 },
        Chunk { t_ns: 2, tokens: 2 },
        Chunk { t_ns: 3, tokens: 1 },
    ];
    reconcile_zero_chunks(&mut v);
    assert_eq!(
        v.iter().map(|c| c.tokens).collect::<Vec<_>>(),
        vec![1, 1, 1]
    );
}

/// The spec as each reader sends it: the reqwest client's, then the raw reader's.
fn both(spec: RequestSpec) -> [RequestSpec; 2] {
    let mut raw = spec.clone();
    let target = crate::wire::rawhttp::RawTarget::new(&spec.url, None, Duration::from_secs(5));
    raw.raw = Some(std::sync::Arc::new(target.expect("raw target")));
    [spec, raw]
}

/// A server that answers every request with these SSE events and `[DONE]`.
async fn sse_server(events: Vec<String>) -> String {
    let mut body = String::new();
    for e in events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    raw_sse_server(body).await
}

/// A loopback server: reads each request, then lets `answer` write the response on the
/// connection; its completions URL.
async fn serve<F, Fut>(answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = s.read(&mut buf).await;
                answer(s).await;
            });
        }
    });
    format!("http://{addr}/v1/completions")
}

/// A server that answers every request with `body` as an event stream, then closes.
async fn raw_sse_server(body: String) -> String {
    use tokio::io::AsyncWriteExt;
    serve(move |mut s| {
        let body = body.clone();
        async move {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
        }
    })
    .await
}

fn chunk_json(text: &str, completion: u64, finish: Option<&str>) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
        "usage": {"prompt_tokens": 8, "completion_tokens": completion},
    })
    .to_string()
}

/// llama.cpp at `max_tokens = 1` whose one token is a partial UTF-8 character (its
/// detokenizer holds it back): no event carries text, only the finish and the usage
/// (recorded from llama-server, ids and timings cut). Before the fix the request had no
/// chunk, and a prefill cell failed with `no_token` although the server produced its token.
#[tokio::test]
async fn a_token_held_back_by_the_detokenizer_still_counts_as_the_first_token() {
    let chat = vec![
        r#"{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1796410709,"model":"tiny-llama","object":"chat.completion.chunk"}"#.to_string(),
        r#"{"choices":[],"created":1796410709,"model":"tiny-llama","object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":30,"total_tokens":31,"prompt_tokens_details":{"cached_tokens":10}}}"#.to_string(),
    ];
    let completions = vec![
        r#"{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1796410709,"model":"tiny-llama","object":"text_completion","usage":{"completion_tokens":1,"prompt_tokens":3,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":1}}}"#.to_string(),
    ];
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let cancel = CancellationToken::new();
    for events in [chat, completions] {
        let url = sse_server(events).await;
        let mut spec =
            RequestSpec::new(url, &serde_json::json!({}), Counting::Deferred).expect("spec");
        spec.max_tokens = Some(1);
        for spec in both(spec) {
            let mut m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
            assert!(
                matches!(m.record.outcome, Outcome::Finished { .. }),
                "{:?}",
                m.record.outcome
            );
            assert_eq!(m.record.chunks.len(), 1, "{:?}", m.record.chunks);
            assert_eq!(m.texts.as_deref(), Some(&[String::new()][..]));
            // The final usage counts it: one token, by the server's own figure.
            let texts = m.texts.take();
            let mut report = llmib_core::CountReport::new();
            llmib_core::count_request(
                &mut m.record,
                texts.as_deref(),
                false,
                &llmib_core::Tokenized::new(),
                &mut report,
            );
            assert_eq!(m.record.tokens(), 1);
            assert_eq!(
                report.source,
                Some(TokenCountSource::ServerUsageFinalTokenizerChunks)
            );
        }
    }
}

/// A stream that ends without any token (no usage count) still has no chunk: only a token
/// the server counted is added.
#[tokio::test]
async fn a_stream_without_a_counted_token_gets_no_chunk() {
    let url = sse_server(vec![chunk_json("", 0, Some("stop"))]).await;
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let spec = RequestSpec::new(url, &serde_json::json!({}), Counting::Deferred).expect("spec");
    for spec in both(spec) {
        let m = measure(
            &client,
            &spec,
            0,
            Instant::now(),
            &CancellationToken::new(),
            None,
        )
        .await;
        assert!(m.record.chunks.is_empty(), "{:?}", m.record.chunks);
        assert_eq!(m.texts.as_deref(), Some(&[][..]));
    }
}

/// A usage count above the request's max_tokens is a disagreement, never a measurement:
/// before the check, 10^12 claimed tokens became a chunk of (10^12 as u32) tokens.
#[tokio::test]
async fn a_usage_count_above_max_tokens_fails_the_request_with_the_reason() {
    let absurd = sse_server(vec![
        chunk_json("a", 1, None),
        chunk_json("b", 1_000_000_000_000, Some("length")),
    ])
    .await;
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let mut spec =
        RequestSpec::new(absurd, &serde_json::json!({}), Counting::UsagePerChunk).expect("spec");
    spec.max_tokens = Some(64);
    let cancel = CancellationToken::new();
    for spec in both(spec.clone()) {
        let m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
        match &m.record.outcome {
            Outcome::Error { kind, message } => {
                assert_eq!(kind, "count_disagreement");
                assert!(
                    message.contains("1000000000000") && message.contains("64"),
                    "{message}"
                );
            }
            o => panic!(
                "believed an absurd count: {o:?}, chunks {:?}",
                m.record.chunks
            ),
        }
        assert!(m.record.tokens() <= 64);
    }
    // The same stream within max_tokens is measured as before.
    let fine = sse_server(vec![
        chunk_json("a", 1, None),
        chunk_json("b", 2, Some("length")),
    ])
    .await;
    spec.url = fine;
    for spec in both(spec) {
        let m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
        assert!(
            matches!(m.record.outcome, Outcome::Finished { .. }),
            "{:?}",
            m.record.outcome
        );
        assert_eq!(m.record.tokens(), 2);
    }
}

/// The simulator measured through both readers: the same outcome and tokens, instants in
/// order (sent, headers, chunks), and a cancelled raw stream ends as cancelled, its connection
/// closed.
#[tokio::test]
async fn both_readers_measure_the_simulator_alike_and_cancel() {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny");
    cfg.decode_step_ms = vec![(1, 1.0)];
    let sim = llmib_sim::spawn(cfg).await.expect("sim");
    let body = serde_json::json!({
        "model": "tiny", "prompt": "hello", "max_tokens": 16, "stream": true, "ignore_eos": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true},
    });
    let url = format!("{}/v1/completions", sim.base_url());
    let mut spec = RequestSpec::new(url, &body, Counting::UsagePerChunk).expect("spec");
    spec.max_tokens = Some(16);
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let cancel = CancellationToken::new();
    for spec in both(spec.clone()) {
        for _ in 0..2 {
            let m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
            let r = &m.record;
            assert!(
                matches!(r.outcome, Outcome::Finished { .. }),
                "{:?}",
                r.outcome
            );
            assert_eq!(r.tokens(), 16, "{:?}", r.chunks);
            let headers = r.headers_ns.expect("headers");
            assert!(r.sent_ns <= headers, "{r:?}");
            let mut t = headers;
            for c in &r.chunks {
                assert!(c.t_ns >= t && c.t_ns <= r.end_ns, "{r:?}");
                t = c.t_ns;
            }
        }
    }
    let [_, raw] = both(spec);
    let stop = CancellationToken::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        s2.cancel();
    });
    let m = measure(&client, &raw, 0, Instant::now(), &stop, None).await;
    assert_eq!(m.record.outcome, Outcome::Cancelled);
    sim.shutdown().await;
}

/// A body cut inside its chunked framing is a broken stream, after the chunks that came; the
/// raw reader says why in the framing's words.
#[tokio::test]
async fn a_body_cut_inside_its_framing_is_a_broken_stream_with_the_reason() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://{}/v1/completions",
        listener.local_addr().expect("addr")
    );
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let _ = s.read(&mut buf).await;
            let event = format!("data: {}\n\n", chunk_json("a", 1, None));
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                event.len()
            );
            // The last chunk never comes: the connection closes inside the body.
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let spec = RequestSpec::new(url, &serde_json::json!({}), Counting::Deferred).expect("spec");
    let cancel = CancellationToken::new();
    let [reqwest, raw] = both(spec);
    for (spec, raw) in [(reqwest, false), (raw, true)] {
        let m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
        let Outcome::Error { kind, message } = &m.record.outcome else {
            panic!("{:?}", m.record.outcome);
        };
        assert_eq!(kind, "stream_broken", "{message}");
        assert!(
            message.starts_with("the stream broke after 1 chunks: "),
            "{message}"
        );
        if raw {
            assert_eq!(
                message,
                "the stream broke after 1 chunks: the connection closed inside the chunked body (no last chunk)"
            );
        }
    }
}

/// vLLM 0.32's warm Messages stream (recorded): the prompt is the start event's whole 1,708,
/// which the end event's 44 uncached + 1,664 read agree with, whatever the run's reading; cut
/// before `message_stop`, the same stream is an error that names the missing event; with a
/// start event that agrees with the end under no reading, no prompt length is taken.
#[tokio::test]
async fn a_messages_stream_reads_its_prompt_from_every_report_and_needs_its_end_event() {
    let warm = include_str!("../../fixtures/transcripts/vllm/live/messages_stream_long_warm.sse");
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let cancel = CancellationToken::new();
    let run = |body: String, reading| {
        let client = client.clone();
        let cancel = cancel.clone();
        async move {
            let url = raw_sse_server(body).await;
            let mut spec =
                RequestSpec::new(url, &serde_json::json!({}), Counting::Deferred).expect("spec");
            spec.api = llmib_core::Api::Messages;
            spec.reading = reading;
            spec.max_tokens = Some(8);
            let mut out = Vec::new();
            for spec in both(spec) {
                out.push(measure(&client, &spec, 0, Instant::now(), &cancel, None).await);
            }
            out
        }
    };
    for reading in [
        llmib_core::InputReading::Exclusive,
        llmib_core::InputReading::Inclusive,
    ] {
        for m in run(warm.to_string(), reading).await {
            assert!(
                matches!(m.record.outcome, Outcome::Finished { .. }),
                "{:?}",
                m.record.outcome
            );
            assert_eq!(m.record.prompt_tokens_reported, Some(1708));
            assert_eq!(m.record.cached_tokens_reported, Some(1664));
            assert_eq!(m.record.completion_tokens_reported, Some(8));
            assert_eq!(m.record.chunks.len(), 8);
        }
    }
    let cut = warm[..warm.find("event: message_stop").expect("end event")].to_string();
    for m in run(cut, llmib_core::InputReading::Exclusive).await {
        let Outcome::Error { message, .. } = &m.record.outcome else {
            panic!("{:?}", m.record.outcome);
        };
        assert!(message.contains("without message_stop"), "{message}");
    }
    let odd = warm.replace(
        r#""usage":{"input_tokens":1708,"output_tokens":0}"#,
        r#""usage":{"input_tokens":1708,"output_tokens":0,"cache_read_input_tokens":1664}"#,
    );
    assert_ne!(odd, warm);
    for m in run(odd, llmib_core::InputReading::Exclusive).await {
        let Outcome::Error { message, .. } = &m.record.outcome else {
            panic!("{:?}", m.record.outcome);
        };
        assert!(
            message.contains("disagree on the prompt's length"),
            "{message}"
        );
    }
}

/// A server that answers every request with `events` as a chunked event stream, each written
/// after its delay, and `[DONE]`; then holds the connection open for `hold` before closing.
async fn paced_sse_server(events: Vec<(Duration, String)>, hold: Duration) -> String {
    use tokio::io::AsyncWriteExt;
    serve(move |mut s| {
        let events = events.clone();
        async move {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
            let _ = s.write_all(head.as_bytes()).await;
            for (delay, e) in events {
                tokio::time::sleep(delay).await;
                let data = format!("data: {e}\n\n");
                let piece = format!("{:x}\r\n{data}\r\n", data.len());
                if s.write_all(piece.as_bytes()).await.is_err() {
                    return;
                }
            }
            tokio::time::sleep(hold).await;
            let _ = s.write_all(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n").await;
        }
    })
    .await
}

/// The idle limit runs from the last read, not from the first chunk: a stream whose chunks
/// come 60 ms apart for 0.5 s finishes under a 200 ms idle limit (the timer is moved only when
/// it fires, so a stale deadline must be re-armed, not taken for silence).
#[tokio::test]
async fn a_slow_steady_stream_outlasts_the_idle_limit_it_never_breaks() {
    let events: Vec<_> = (1..=8)
        .map(|i| {
            let finish = (i == 8).then_some("length");
            (Duration::from_millis(60), chunk_json("a", i, finish))
        })
        .collect();
    let url = paced_sse_server(events, Duration::ZERO).await;
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let mut spec =
        RequestSpec::new(url, &serde_json::json!({}), Counting::UsagePerChunk).expect("spec");
    spec.limits.idle = Duration::from_millis(200);
    for spec in both(spec) {
        let cancel = CancellationToken::new();
        let m = measure(&client, &spec, 0, Instant::now(), &cancel, None).await;
        assert!(
            matches!(m.record.outcome, Outcome::Finished { .. }),
            "{:?}",
            m.record.outcome
        );
        assert_eq!(m.record.chunks.len(), 8, "{:?}", m.record.chunks);
    }
}

/// A stream that stalls after its first chunk fails by the idle limit (200 ms), not by the
/// first-token limit (30 s) that ran before content came.
#[tokio::test]
async fn a_stall_after_the_first_chunk_ends_at_the_idle_limit() {
    let events = vec![(Duration::from_millis(20), chunk_json("a", 1, None))];
    let url = paced_sse_server(events, Duration::from_secs(10)).await;
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let mut spec =
        RequestSpec::new(url, &serde_json::json!({}), Counting::UsagePerChunk).expect("spec");
    spec.limits.first_token = Duration::from_secs(30);
    spec.limits.idle = Duration::from_millis(200);
    for spec in both(spec) {
        let cancel = CancellationToken::new();
        let run = measure(&client, &spec, 0, Instant::now(), &cancel, None);
        let m = tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the idle limit, not the first-token limit, ends the stream");
        assert!(
            matches!(&m.record.outcome, Outcome::Error { kind, .. } if kind == "timeout_idle"),
            "{:?}",
            m.record.outcome
        );
        let first = m.record.chunks.first().expect("one chunk").t_ns;
        let silent_ms = (m.record.end_ns - first) / 1_000_000;
        assert!((200..1500).contains(&silent_ms), "{silent_ms} ms");
    }
}
