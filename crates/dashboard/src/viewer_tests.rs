//! The model-output viewer on fixed states: a stream's reasoning and answer apart, frozen,
//! paged back, and before any window; the keys; only the stream shown is watched. The text is
//! fed as a stream's reader feeds it (`LiveText::offer`, SSE bytes of chat chunks).

use super::tests::{gpus, render, window_half_done};
use super::view::Dashboard;
use llmib_client::LiveWindow;
use ratatui::crossterm::event::KeyCode;
use std::sync::Arc;
use std::time::Instant;

/// SSE bytes of chat chunks: each `(content, reasoning)` one event.
fn sse(chunks: &[(Option<&str>, Option<&str>)]) -> Vec<u8> {
    let mut out = String::new();
    for (content, reasoning) in chunks {
        let delta = serde_json::json!({"content": content, "reasoning_content": reasoning});
        let chunk = serde_json::json!({"choices": [{"index": 0, "delta": delta}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.into_bytes()
}

fn window(d: &Dashboard) -> Arc<LiveWindow> {
    d.current
        .as_ref()
        .and_then(|c| c.live.clone())
        .expect("a window runs")
}

fn keys(d: &mut Dashboard, ks: &[KeyCode]) {
    for k in ks {
        assert!(d.viewer_key(*k), "{k:?} is the viewer's");
    }
}

fn watched(w: &LiveWindow) -> Vec<bool> {
    (0..w.concurrency as usize)
        .map(|i| w.stream(i).expect("stream").text.watched())
        .collect()
}

/// The window half done, the viewer open on stream 2 of 4 with a thinking model's text.
fn viewing_stream_two() -> (Dashboard, Instant) {
    let (mut d, now) = window_half_done(Instant::now());
    keys(&mut d, &[KeyCode::Char('o'), KeyCode::Char('n')]);
    d.tick(now);
    let w = window(&d);
    assert_eq!(watched(&w), [false, true, false, false]);
    w.stream(1).expect("stream 2").text.offer(
        7,
        &sse(&[
            (None, Some("The user asks for a haiku about GPUs.\n")),
            (None, Some("Five, seven, five syllables.")),
            (Some("Silicon rivers\n"), None),
            // A server's escape sequence and tab: drawn as `?` and a space.
            (
                Some("carry \u{1b}[2Jwarm\tthoughts, token by token\n"),
                None,
            ),
            (Some("the fans hum along"), None),
        ]),
    );
    d.tick(now);
    (d, now)
}

#[test]
fn viewer_content_and_reasoning_apart() {
    let (d, now) = viewing_stream_two();
    let screen = render(&d, Some(&gpus(2)), now, 120, 36);
    assert!(!screen.contains('\u{1b}'), "{screen}");
    assert!(screen.contains("carry ?[2Jwarm thoughts"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn viewer_frozen_keeps_its_text_and_unwatches() {
    let (mut d, now) = viewing_stream_two();
    keys(&mut d, &[KeyCode::Char('f')]);
    let w = window(&d);
    let text = &w.stream(1).expect("stream 2").text;
    text.offer(7, &sse(&[(Some("\nnot shown while frozen"), None)]));
    d.tick(now);
    assert_eq!(watched(&w), [false; 4]);
    let screen = render(&d, Some(&gpus(2)), now, 120, 36);
    assert!(!screen.contains("not shown"), "{screen}");
    insta::assert_snapshot!(screen);
    // Thawed, it watches again and reads what the ring holds from then on.
    keys(&mut d, &[KeyCode::Char('f')]);
    d.tick(now);
    assert_eq!(watched(&w), [false, true, false, false]);
}

#[test]
fn viewer_pages_back_through_the_ring() {
    let (mut d, now) = window_half_done(Instant::now());
    keys(&mut d, &[KeyCode::Char('o')]);
    d.tick(now);
    let w = window(&d);
    let lines: Vec<String> = (1..=60).map(|i| format!("line {i}\n")).collect();
    let parts: Vec<(Option<&str>, Option<&str>)> =
        lines.iter().map(|l| (Some(l.as_str()), None)).collect();
    w.stream(0).expect("stream 1").text.offer(3, &sse(&parts));
    d.tick(now);
    // The first frame tells the viewer how far back it can go.
    let newest = render(&d, Some(&gpus(2)), now, 100, 30);
    assert!(newest.contains("line 60"), "{newest}");
    keys(&mut d, &[KeyCode::PageUp, KeyCode::PageUp, KeyCode::Down]);
    let paged = render(&d, Some(&gpus(2)), now, 100, 30);
    assert!(
        !paged.contains("line 60") && paged.contains("line 41"),
        "{paged}"
    );
    insta::assert_snapshot!(paged);
    // Home goes to the oldest line kept; End back to the newest.
    keys(&mut d, &[KeyCode::Home]);
    assert!(render(&d, None, now, 100, 30).contains("line 1 "));
    keys(&mut d, &[KeyCode::End]);
    assert!(render(&d, None, now, 100, 30).contains("line 60"));
}

#[test]
fn viewer_keys_pick_wrap_and_close() {
    let (mut d, now) = window_half_done(Instant::now());
    // Closed, only `o` is the viewer's: `n` and Esc go on to the dashboard's keys.
    assert!(!d.viewer_key(KeyCode::Char('n')));
    assert!(!d.viewer_key(KeyCode::Esc));
    keys(&mut d, &[KeyCode::Char('o')]);
    d.tick(now);
    keys(&mut d, &[KeyCode::Left]);
    d.tick(now);
    let w = window(&d);
    assert_eq!(
        watched(&w),
        [false, false, false, true],
        "← from 1 wraps to 4"
    );
    keys(&mut d, &[KeyCode::Char('n')]);
    d.tick(now);
    assert_eq!(watched(&w), [true, false, false, false]);
    // Esc closes the viewer (it does not stop the run) and unwatches the stream.
    keys(&mut d, &[KeyCode::Esc]);
    assert!(d.viewer.is_none());
    assert_eq!(watched(&w), [false; 4]);
    assert!(!d.viewer_key(KeyCode::Char('q')), "q stays the dashboard's");
}

#[test]
fn viewer_before_any_window() {
    let (mut d, now) = window_half_done(Instant::now());
    d.current = None;
    keys(&mut d, &[KeyCode::Char('o')]);
    d.tick(now);
    insta::assert_snapshot!(render(&d, None, now, 80, 24));
}
