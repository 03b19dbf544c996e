use super::*;
use serde_json::json;

#[test]
fn secret_names() {
    for s in [
        "--api-key",
        "--admin-api-key",
        "--hf-token",
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "api_key",
        "password",
        "--db-password-file",
        "client_secret",
        "Authorization",
    ] {
        assert!(is_secret_name(s), "{s}");
    }
    for s in [
        "--max-tokens",
        "--max-total-tokens",
        "--tokenizer",
        "--kv-cache-dtype",
        "token_capacity",
        "--skip-tokenizer-init",
        "--ssl-keyfile",
        "max_num_batched_tokens",
        "",
        "--",
    ] {
        assert!(!is_secret_name(s), "{s}");
    }
}

#[test]
fn flag_with_separate_value() {
    assert_eq!(
        redact_command("sglang serve --model-path m --api-key sk-123 --port 8000"),
        "sglang serve --model-path m --api-key <redacted> --port 8000"
    );
}

#[test]
fn flag_with_equals() {
    assert_eq!(
        redact_command("vllm serve m --api-key=sk-123 --hf-token='hf x' --max-tokens=4096"),
        "vllm serve m --api-key=<redacted> --hf-token=<redacted> --max-tokens=4096"
    );
}

#[test]
fn any_secret_named_flag_and_quoted_values() {
    assert_eq!(
        redact_command(
            r#"serve --db-password "a b c" --admin-api-key 'q' --max-total-tokens 500000"#
        ),
        "serve --db-password <redacted> --admin-api-key <redacted> --max-total-tokens 500000"
    );
    // A boolean secret-ish flag followed by another flag redacts nothing.
    assert_eq!(
        redact_command("x --api-key --port 1"),
        "x --api-key --port 1"
    );
}

#[test]
fn env_assignments() {
    assert_eq!(
        redact_command(
            "HF_TOKEN=hf_abc OPENAI_API_KEY=sk-1 MY_SECRET=s VLLM_CPU_KVCACHE_SPACE=2 MAX_TOKENS=9 vllm serve"
        ),
        "HF_TOKEN=<redacted> OPENAI_API_KEY=<redacted> MY_SECRET=<redacted> VLLM_CPU_KVCACHE_SPACE=2 MAX_TOKENS=9 vllm serve"
    );
    assert_eq!(
        redact_command("export HF_TOKEN=\"abc def\" && run"),
        "export HF_TOKEN=<redacted> && run"
    );
}

#[test]
fn authorization_headers() {
    assert_eq!(
        redact_command(r#"curl -H "Authorization: Bearer sk-abc.def" http://x"#),
        r#"curl -H "Authorization: Bearer <redacted>" http://x"#
    );
    assert_eq!(
        redact_text("authorization: basic dXNlcjpwYXNz, next", &[]),
        "authorization: basic <redacted>, next"
    );
    assert_eq!(
        redact_text("Authorization: sk-raw", &[]),
        "Authorization: <redacted>"
    );
    assert_eq!(redact_text("BEARER tok", &[]), "BEARER <redacted>");
    assert_eq!(redact_text("no secrets here", &[]), "no secrets here");
}

#[test]
fn known_secrets_in_text() {
    assert_eq!(
        redact_text(
            "401: key sk-abc123 rejected; sk-abc123 again",
            &["sk-abc123", ""]
        ),
        "401: key <redacted> rejected; <redacted> again"
    );
}

#[test]
fn json_fields() {
    let mut v = json!({
        "api_key": "sk-1",
        "admin_api_key": null,
        "hf_token": "hf_x",
        "max_total_tokens": 1000,
        "token_capacity": 5,
        "nested": [{"password": "p", "ok": "fine"}],
        "enable_secret_mode": true,
        "cmd": "serve --api-key abc",
        "headers": {"Authorization": "Bearer zzz"}
    });
    redact_json(&mut v);
    assert_eq!(
        v,
        json!({
            "api_key": "<redacted>",
            "admin_api_key": null,
            "hf_token": "<redacted>",
            "max_total_tokens": 1000,
            "token_capacity": 5,
            "nested": [{"password": "<redacted>", "ok": "fine"}],
            "enable_secret_mode": true,
            "cmd": "serve --api-key <redacted>",
            "headers": {"Authorization": "<redacted>"}
        })
    );
}

#[test]
fn redaction_is_idempotent() {
    let once = redact_command("x --api-key k Authorization: Bearer t HF_TOKEN=z");
    assert_eq!(redact_command(&once), once);
    assert!(!once.contains(" k ") && !once.contains("=z") && !once.contains(" t "));
}

/// The forms a fault review found leaking (issue 12): each keeps its shape, loses its secret.
#[test]
fn forms_that_used_to_leak() {
    let cases = [
        (
            "docker run --env=HF_TOKEN=hf_abc -e=OPENAI_API_KEY=sk-1 img",
            "docker run --env=HF_TOKEN=<redacted> -e=OPENAI_API_KEY=<redacted> img",
        ),
        (
            r#"bash -c "vllm serve m --api-key sk-inner --port 1""#,
            r#"bash -c "vllm serve m --api-key <redacted> --port 1""#,
        ),
        (
            "sglang serve --api-key \\\n  sk-next-line --port 1",
            "sglang serve --api-key \\\n  <redacted> --port 1",
        ),
        (
            "serve --api-key -dash-key --port 1",
            "serve --api-key <redacted> --port 1",
        ),
        (
            r#"serve --config '{"api_key": "sk-json", "max_tokens": 5}'"#,
            r#"serve --config '{"api_key": "<redacted>", "max_tokens": 5}'"#,
        ),
        (
            "proxy https://user:hunter2@host:8000/v1 done",
            "proxy https://user:<redacted>@host:8000/v1 done",
        ),
        ("GITHUB_PAT=ghp_x run", "GITHUB_PAT=<redacted> run"),
    ];
    for (input, want) in cases {
        let got = redact_command(input);
        assert_eq!(got, want, "{input}");
        assert_eq!(redact_command(&got), got, "idempotent: {input}");
    }
}

#[test]
fn free_text_from_a_server() {
    let body =
        r#"HTTP 401: {"error": "bad key sk-live-123", "api_key": "sk-live-123"} at http://u:pw@h/"#;
    let r = redact_text(body, &["sk-live-123"]);
    assert!(!r.contains("sk-live-123") && !r.contains(":pw@"), "{r}");
    assert_eq!(
        sanitize_terminal("model\u{1b}[31mred\r\nnext\u{7}"),
        "model?[31mred? next?"
    );
}

/// Found by fuzzing: unbalanced quotes after a secret-named flag made a second pass redact what
/// the first had left.
#[test]
fn unbalanced_quotes_still_redact_to_a_fixpoint() {
    let s = "1?-\n-\":-\":m\u{3}.-password.'  ?-|:\":\"\u{0}\u{0}\u{0}* \" \"\"=\"\"\" '~\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}* \" \"\"=\"";
    let once = redact_command(s);
    assert_eq!(redact_command(&once), once);
}

#[test]
fn a_urls_password_is_a_literal_secret() {
    assert_eq!(url_password("https://me:pa55@h:1/v1"), Some("pa55"));
    assert_eq!(url_password("http://me@h/v1"), None);
    assert_eq!(
        url_password("http://h:8000/a@b:c"),
        None,
        "path, not userinfo"
    );
    assert_eq!(url_password("http://me:@h/"), None);
    assert_eq!(url_password("no url"), None);
}

#[test]
fn every_string_of_a_record_is_redacted_and_names_are_kept() {
    let mut v = json!({
        "hardware": {"gpu_name": "H200 sk-k1", "count": 8},
        "notes": ["version sk-k1", "bare --api-key X"],
        "token_source": "tokenizer",
    });
    redact_strings(&mut v, &["sk-k1"]);
    assert_eq!(
        v,
        json!({
            "hardware": {"gpu_name": "H200 <redacted>", "count": 8},
            "notes": ["version <redacted>", "bare --api-key <redacted>"],
            "token_source": "tokenizer",
        })
    );
}

/// Found by fuzzing at 9.8M execs: a secret flag whose value held the quote that closed one
/// opened before the flag; replacing the value dropped it, and each later pass redacted one
/// more line of the rest. The replacement now keeps its quotes balanced.
#[test]
fn a_replacement_keeps_the_quotes_it_dropped_balanced() {
    let s = "-'\t[-token=<redacted-token=aui'\ni'\n'\n'\nKKKK\n''\n'\n'\n''\n'\n'\n'KKKon:KK'\n'";
    let once = redact_command(s);
    assert_eq!(redact_command(&once), once);
    assert!(once.contains("<redacted>"), "{once}");
    assert!(!once.contains("aui"), "the value is gone: {once}");
    // The rest of the text is kept, not swallowed by a runaway quote.
    assert!(once.contains("KKKon"), "{once}");
}

/// Found by fuzzing right after the first fix (which appended quotes to balance a word): with
/// mixed quotes the appended one changed the next pass's reading. The value now leaves the
/// quotes that take the reader from its state before the value to its state after it.
#[test]
fn a_redacted_value_leaves_the_reader_in_the_same_state() {
    let s = "\"\"\"\"\"\"\"\"'v\u{00}\u{00}2\\-key\":\"\n\"-\n-\u{00}\u{00}\u{00}\":k\n\n-\u{00}\u{00}\",b\u{01}$\u{00}-'\u{0e}\u{00}\u{00}\u{00}\",b\u{00}-token=\":key\":\"\nizaey-:\"\n8-atko\u{01}n+\"\nJabeareR \nJ-=Y\n-\u{00}\u{00}\u{00}\",b\u{00}-t\u{1a}\u{1a}\n'\u{0e}\n'\u{07}\u{00}\"@j\"\nization'\n\\\u{1a}\u{1a}\u{1a}\u{1a}\n'\u{0e}\n'\u{00}\u{00}\u{00}_j\u{8410}:\n'-=Y\t\u{00}tyke=\": \t\n-\u{00}\u{00} \",b\u{00}-t\u{1a}\u{1a}\n'\u{0e}\n'\u{07}\u{00}\"@j\"\nization'\n\\\u{1a}\u{1a}\u{1a}\u{1a}\n'\u{0e}\n'\u{00}\u{00}\n\"sk-fuzz-key-42\",b\u{00}-token=\":key\"n:\u{8450}\n-\u{00}:yyi\u{01}\\\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}on\u{01}+\"\ntoken=\"\":k\n\n-\u{00}J-=Y\n-\u{00}\u{00}\u{00}\",b\u{00}-t\u{1a}\u{1a}\n'\u{0e}\n'\u{07}\u{00}\"\u{00}@j\"\nizatyon:ti\u{01}\\on\u{01}+\"\nJ-=Y\n-\u{00}\u{00}\u{00}\",b\u{00}-\n5:eyto\u{01}n+\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\"\nJa8-a:onitti\u{01}\\\u{00}-t\u{1a}\"";
    let once = redact_command(s);
    assert_eq!(redact_command(&once), once);
    assert!(once.contains("<redacted>"), "{once}");
    // Plain cases stay clean: no stray quotes.
    assert_eq!(
        redact_command("HF_TOKEN=\"abc\" run"),
        "HF_TOKEN=<redacted> run"
    );
}

#[test]
fn userinfo_is_stripped_from_urls() {
    assert_eq!(
        strip_url_userinfo("http://u:secret@h:1/v1"),
        "http://h:1/v1"
    );
    assert_eq!(strip_url_userinfo("https://tok3n@h"), "https://h");
    assert_eq!(strip_url_userinfo("http://u:p@ss@h/v1"), "http://h/v1");
    assert_eq!(strip_url_userinfo("http://h:1/a@b"), "http://h:1/a@b");
    assert_eq!(strip_url_userinfo("http://h?to=a@b"), "http://h?to=a@b");
    assert_eq!(strip_url_userinfo("not a url"), "not a url");
}
