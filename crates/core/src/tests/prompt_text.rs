//! Known answers for the prompt text's checks and its record: a file no prompt can be cut from
//! is refused with its name, and `run.json` keeps the name, size and hash, never the text.

use super::*;

const HASH: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

#[test]
fn a_text_file_gives_its_name_size_hash_and_text() {
    let s = PromptTextSource::of(
        "some/dir/prose.txt",
        b"Call me Ishmael.\n".to_vec(),
        HASH.into(),
    )
    .expect("a text");
    assert_eq!(s.name, "prose.txt", "the name, not where it lay");
    assert_eq!(s.bytes, 17);
    assert_eq!(s.sha256, HASH);
    assert_eq!(s.text.as_deref(), Some("Call me Ishmael.\n"));
}

#[test]
fn run_json_keeps_the_source_never_the_text() {
    let s = PromptTextSource::of("p.txt", b"secret prose".to_vec(), HASH.into()).expect("text");
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"name": "p.txt", "bytes": 12, "sha256": HASH})
    );
    let back: PromptTextSource = serde_json::from_value(json).expect("read back");
    assert_eq!(back.text, None);
    assert!(back.same_text(&s));
    let other = PromptTextSource {
        sha256: "ff".repeat(32),
        ..back
    };
    assert!(!other.same_text(&s));
}

#[test]
fn an_empty_or_blank_file_is_refused_with_its_name() {
    for bytes in [&b""[..], b"  \n\t \r\n"] {
        let e = PromptTextSource::of("dir/empty.txt", bytes.to_vec(), HASH.into())
            .expect_err("no text");
        assert_eq!(
            e,
            PromptTextError::Empty {
                file: "dir/empty.txt".into()
            }
        );
        let words = e.to_string();
        assert!(
            words.contains("dir/empty.txt") && !words.contains('\n'),
            "{words}"
        );
    }
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    // Latin-1 `é` (0xE9) after five good bytes.
    let e = PromptTextSource::of(
        "latin1.txt",
        b"caf\x20\x63\xe9 au lait".to_vec(),
        HASH.into(),
    )
    .expect_err("not UTF-8");
    assert_eq!(
        e,
        PromptTextError::NotUtf8 {
            file: "latin1.txt".into(),
            offset: 5
        }
    );
    let words = e.to_string();
    assert!(
        words.contains("latin1.txt") && words.contains("UTF-8"),
        "{words}"
    );
}
