//! Images in requests: the token rule's known answers, each API's image part counted into
//! `usage.prompt_tokens` (over raw HTTP, as a client meets it; PNG and JPEG sized from their
//! headers), the patch knob, and an image
//! the simulator cannot read refused with a 400 in the route's error shape.

use serde_json::{Value, json};

use super::raw::{exchange, post, usage_prompt_tokens as prompt_tokens};
use crate::images::image_tokens;
use crate::{Flavor, SimConfig};

/// Standard base64 (the test's own, apart from the client's).
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for g in data.chunks(3) {
        let n = g
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= g.len() {
                char::from(A[((n >> (18 - 6 * i)) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

/// The head of a W × H PNG (signature and IHDR): all the simulator reads.
fn png(w: u32, h: u32, salt: u8) -> String {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
    b.extend_from_slice(b"IHDR");
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0, salt, 0, 0, 0]);
    b64(&b)
}

/// The head of a W × H baseline JPEG as encoders write it: SOI, JFIF's APP0, one DQT, then
/// the start-of-frame (SOF0) with its size; the simulator walks the segments to it.
fn jpeg(w: u16, h: u16, salt: u8) -> String {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
    b.extend_from_slice(b"JFIF\0");
    b.extend_from_slice(&[1, 1, 0, 0, 1, 0, 1, 0, 0]);
    b.extend_from_slice(&[0xFF, 0xDB, 0, 67, 0]);
    b.extend(std::iter::repeat_n(salt, 64));
    b.extend_from_slice(&[0xFF, 0xC0, 0, 17, 8]);
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    b64(&b)
}

fn config(patch: u32) -> SimConfig {
    SimConfig {
        flavor: Flavor::Vllm,
        image_patch: patch,
        ..SimConfig::default()
    }
}

#[test]
fn an_image_costs_its_patches_plus_two() {
    assert_eq!(image_tokens(512, 512, 28), 19 * 19 + 2);
    assert_eq!(image_tokens(1024, 768, 28), 37 * 28 + 2);
    assert_eq!(image_tokens(28, 28, 28), 3);
    assert_eq!(image_tokens(29, 28, 28), 4);
    assert_eq!(image_tokens(512, 512, 14), 37 * 37 + 2);
    assert!(
        SimConfig {
            image_patch: 0,
            ..SimConfig::default()
        }
        .validate()
        .is_err()
    );
}

/// One request per API with `images` in its shape, and the same request without them.
fn bodies(images: &[String]) -> [(&'static str, Value, Value); 3] {
    let url = |d: &String| format!("data:image/png;base64,{d}");
    let chat: Vec<Value> = images
        .iter()
        .map(|d| json!({"type": "image_url", "image_url": {"url": url(d)}}))
        .collect();
    let resp: Vec<Value> = images
        .iter()
        .map(|d| json!({"type": "input_image", "image_url": url(d)}))
        .collect();
    let msgs: Vec<Value> = images
        .iter()
        .map(|d| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}}))
        .collect();
    let text = || json!({"type": "text", "text": "Describe it"});
    let with = |mut parts: Vec<Value>, first: Value| {
        parts.insert(0, first);
        Value::Array(parts)
    };
    let chat_msgs = |c: Value| json!([{"role": "user", "content": c}]);
    [
        (
            "/v1/chat/completions",
            json!({"model": "sim/tiny", "max_tokens": 1, "messages": chat_msgs(with(chat, text()))}),
            json!({"model": "sim/tiny", "max_tokens": 1, "messages": chat_msgs(json!([text()]))}),
        ),
        (
            "/v1/messages",
            json!({"model": "sim/tiny", "max_tokens": 1, "messages": chat_msgs(with(msgs, text()))}),
            json!({"model": "sim/tiny", "max_tokens": 1, "messages": chat_msgs(json!([text()]))}),
        ),
        (
            "/v1/responses",
            json!({"model": "sim/tiny", "max_output_tokens": 1,
                   "input": chat_msgs(with(resp, json!({"type": "input_text", "text": "Describe it"})))}),
            json!({"model": "sim/tiny", "max_output_tokens": 1,
                   "input": chat_msgs(json!([{"type": "input_text", "text": "Describe it"}]))}),
        ),
    ]
}

#[tokio::test]
async fn every_api_counts_its_images_into_the_prompt() {
    for patch in [28, 14] {
        let sim = crate::spawn(config(patch)).await.expect("starts");
        let images = [png(512, 512, 1), jpeg(100, 30, 2)];
        let want = image_tokens(512, 512, patch) + image_tokens(100, 30, patch);
        for (path, with, without) in bodies(&images) {
            let a = prompt_tokens(path, &post(sim.addr(), path, &with).await);
            let b = prompt_tokens(path, &post(sim.addr(), path, &without).await);
            assert_eq!(a - b, want, "{path} at patch {patch}");
        }
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn an_image_it_cannot_read_is_a_400_in_the_routes_shape() {
    let sim = crate::spawn(config(28)).await.expect("starts");
    let not_png = b64(b"GIF89a and then some bytes of a gif");
    // A JPEG whose scan starts before any frame header: no size to read.
    let no_frame = b64(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0]);
    for (bad, why) in [
        ("not base64 at all!".to_string(), "not base64"),
        (not_png, "PNG and JPEG images only"),
        (png(0, 4, 0), "zero width"),
        (jpeg(4, 0, 0), "zero width"),
        (no_frame, "start-of-frame"),
    ] {
        for (path, body, _) in bodies(std::slice::from_ref(&bad)) {
            let (status, text) = exchange(sim.addr(), "POST", path, Some(&body.to_string())).await;
            assert_eq!(status, 400, "{path}: {text}");
            assert!(text.contains(why), "{path}: {text}");
            let v: Value = serde_json::from_str(&text).expect("JSON");
            if path == "/v1/messages" {
                assert_eq!(v["type"], "error", "{text}");
            } else {
                assert!(
                    v.get("error").is_some() || v.get("object") == Some(&json!("error")),
                    "{text}"
                );
            }
        }
    }
    // A URL the simulator would have to fetch is refused too.
    let url = json!({"model": "sim/tiny", "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]});
    let (status, text) = exchange(
        sim.addr(),
        "POST",
        "/v1/chat/completions",
        Some(&url.to_string()),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("data:image"), "{text}");
    sim.shutdown().await;
}

#[tokio::test]
async fn a_resent_image_hits_the_prefix_cache_and_another_does_not() {
    let sim = crate::spawn(SimConfig {
        flavor: Flavor::Vllm,
        ..SimConfig::default()
    })
    .await
    .expect("starts");
    let cached = |body: &str| -> u64 {
        let v: Value = serde_json::from_str(body).expect("JSON");
        v["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0)
    };
    let [(path, one, _), ..] = bodies(&[png(280, 280, 1)]);
    let [(_, other, _), ..] = bodies(&[png(280, 280, 2)]);
    post(sim.addr(), path, &one).await;
    let again = cached(&post(sim.addr(), path, &one).await);
    let fresh = cached(&post(sim.addr(), path, &other).await);
    sim.shutdown().await;
    assert!(
        again > fresh,
        "the same image re-sent: {again} cached; another: {fresh}"
    );
}
