//! Redaction on any text: never a panic, idempotent, and a key given literally never survives;
//! the terminal sanitiser leaves no control character.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llmib_core::{redact_command, redact_text, sanitize_terminal};

fuzz_target!(|s: &str| {
    let once = redact_command(s);
    assert_eq!(redact_command(&once), once);
    let key = "sk-fuzz-key-4242";
    let with_key = format!("{s}{key}{s}");
    assert!(!redact_text(&with_key, &[key]).contains(key));
    assert!(!sanitize_terminal(s).chars().any(char::is_control));
});
