//! Known answers for cutting a file's text into prompt words: the offset of each stream, the
//! wrap-around of a file shorter than the prompt (each lap from a new offset), and the filler
//! kept as the default.

use super::*;

/// Five words: `alpha `, `beta `, `gamma\n`, `delta  `, `epsilon` (no space after the last).
fn five() -> PromptText {
    PromptText::new(Arc::from("alpha beta gamma\ndelta  epsilon")).expect("words")
}

#[test]
fn words_keep_their_white_space_and_skip_the_leading_one() {
    let t = five();
    assert_eq!(t.len(), 5);
    let words: Vec<&str> = (0..5).map(|i| t.word(i)).collect();
    assert_eq!(words, ["alpha ", "beta ", "gamma\n", "delta  ", "epsilon"]);
    let t = PromptText::new(Arc::from(" \n héllo\twörld\n")).expect("words");
    assert_eq!(
        (0..2).map(|i| t.word(i)).collect::<Vec<_>>(),
        ["héllo\t", "wörld\n"]
    );
    assert!(PromptText::new(Arc::from(" \n\t ")).is_none());
}

#[test]
fn each_stream_starts_at_its_own_offset() {
    let t = five();
    // n = 5: the stream step is round(5 × 0.618) = 3 (prime to 5), the lap step round(5 ×
    // 0.382) = 2.
    assert_eq!((t.stream_step, t.lap_step), (3, 2));
    let offsets: Vec<usize> = (0..6).map(|s| t.offset(0, s)).collect();
    assert_eq!(
        offsets,
        [0, 3, 1, 4, 2, 0],
        "five streams, five words; the sixth wraps"
    );
    // The context moves the start: 7 mod 5 = 2, then the same steps.
    assert_eq!(t.offset(7, 0), 2);
    assert_eq!(t.offset(7, 1), 0);
    // No overflow at the ends of the ranges.
    assert!(t.offset(u64::MAX, u32::MAX) < 5);
}

#[test]
fn the_first_n_streams_of_a_longer_text_start_at_n_different_words() {
    for n in [1usize, 2, 4, 10, 360, 1000] {
        let text: String = (0..n).map(|i| format!("w{i} ")).collect();
        let t = PromptText::new(Arc::from(text)).expect("words");
        let mut seen: Vec<usize> = (0..n as u32).map(|s| t.offset(8192, s)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "n = {n}");
    }
}

#[test]
fn a_short_file_wraps_and_each_lap_starts_further_on() {
    let t = five();
    let mut out = String::new();
    t.words(0, 1, 12, &mut out);
    // Stream 1 starts at word 3 and reads the whole file (lap 1: words 3, 4, 0, 1, 2), the
    // file's last word given a space; lap 2 starts 2 words further (0), lap 3 at 2.
    assert_eq!(
        out,
        "delta  epsilon alpha beta gamma\n\
         alpha beta gamma\ndelta  epsilon \
         gamma\ndelta  "
    );
    // A prompt shorter than the file is one passage from its offset.
    let mut out = String::new();
    t.words(0, 3, 2, &mut out);
    assert_eq!(out, "epsilon alpha ");
}

#[test]
fn the_filler_stays_the_default_body() {
    let mut a = String::new();
    Body::default().words(42, 1024, 3, 50, &mut a);
    let mut b = String::new();
    filler::words(42, 1024, 3, 50, &mut b);
    assert_eq!(a, b);
    let mut c = String::new();
    Body::Text(Arc::new(five())).words(42, 0, 0, 3, &mut c);
    assert_eq!(
        c, "alpha beta gamma\n",
        "the text body ignores the run seed"
    );
}
