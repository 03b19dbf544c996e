//! Property runs over hostile input (issue 12): every parser and reader that takes text from a
//! user, a config file, a server or a results file returns an answer or an error, never a panic,
//! and redaction keeps its promises on any input. Each property runs proptest's default 256
//! cases per `cargo test` (seeded per run, shrunk on failure).

use crate::redact::{REDACTED, redact_command, redact_text, sanitize_terminal};
use crate::size::{MAX_DURATION_S, parse_context_list, parse_duration, parse_tokens};
use crate::store::RunDir;
use proptest::prelude::*;

/// Strings that look like what the parsers meet: digits, units, separators, and noise.
fn sizeish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9._eE+-]{0,30}[a-zA-Z]{0,4}",
        "[0-9]{1,40}(s|ms|m|h|K|M|k)?",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn size_and_duration_parsers_never_panic(s in sizeish()) {
        let _ = parse_tokens(&s);
        let _ = parse_context_list(&s);
        if let Ok(d) = parse_duration(&s) {
            prop_assert!(d.as_secs_f64() > 0.0 && d.as_secs_f64() <= MAX_DURATION_S);
        }
    }

    #[test]
    fn redaction_never_panics_and_is_idempotent(s in any::<String>()) {
        let once = redact_command(&s);
        prop_assert_eq!(redact_command(&once), once);
    }

    #[test]
    fn a_known_secret_never_survives(
        pre in "[ -~]{0,40}",
        post in "[ -~]{0,40}",
        key in "sk-[A-Za-z0-9]{8,20}",
    ) {
        let text = format!("{pre}{key}{post}");
        let r = redact_text(&text, &[key.as_str()]);
        prop_assert!(!r.contains(&key), "{r}");
    }

    #[test]
    fn a_secret_flag_value_never_survives(
        cmd in "[a-z -]{0,30}",
        key in "[A-Za-z0-9_]{6,20}",
        flag in prop_oneof![Just("--api-key"), Just("--hf-token"), Just("--admin-api-key")],
        eq in any::<bool>(),
    ) {
        let line = if eq {
            format!("{cmd} {flag}={key} --port 1")
        } else {
            format!("{cmd} {flag} {key} --port 1")
        };
        let r = redact_command(&line);
        prop_assert!(r.contains(REDACTED) && !r.contains(&format!(" {key} ")), "{r}");
    }

    #[test]
    fn terminal_text_has_no_control_character(s in any::<String>()) {
        prop_assert!(!sanitize_terminal(&s).chars().any(char::is_control));
    }

    #[test]
    fn any_cells_file_loads_or_errors_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let dir = std::env::temp_dir().join(format!(
            "llmib-props-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join(crate::store::CELLS_FILE), &bytes).expect("write");
        let rd = RunDir::create(&dir).expect("run dir");
        let _ = rd.load_cells();
        // Appending after any content leaves every earlier complete line intact and the new
        // row readable.
        let row = crate::cell::CellResult::empty(
            crate::cell::Phase::Decode, 1024, "1K", 1, crate::cell::CellStatus::Valid,
        );
        rd.append_cell(&row).expect("append");
        let (cells, _) = rd.load_cells().expect("load");
        prop_assert!(cells.iter().any(|c| c.key() == row.key()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Strings near the issue-20 text forms: lengths, ranges, time scales, targets.
fn workloadish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9.]{0,8}[kKmM]?(:normal:[0-9.]{0,8}[kKmM]?)?",
        "[0-9]{0,8}[kK]?\\.\\.[0-9]{0,8}[kK]?",
        "[0-9.eE+-]{0,12}%?",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn issue_20_text_forms_print_back_to_themselves(s in workloadish()) {
        use crate::length::LengthSpec;
        use crate::stable::StableTarget;
        use crate::workload::TimeScaleSpec;
        if let Ok(l) = s.parse::<LengthSpec>() {
            prop_assert_eq!(l.to_string().parse::<LengthSpec>(), Ok(l));
            prop_assert!(l.min() <= l.max());
        }
        if let Ok(t) = s.parse::<TimeScaleSpec>() {
            prop_assert_eq!(t.to_string().parse::<TimeScaleSpec>().ok(), Some(t));
        }
        if let Ok(t) = s.parse::<StableTarget>() {
            let back = t.to_string().parse::<StableTarget>().map(|b| b.fraction).unwrap_or(-1.0);
            prop_assert!((back - t.fraction).abs() <= 1e-9 * t.fraction, "{s}: {back}");
        }
    }
}
