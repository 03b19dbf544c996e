//! Removing secrets from anything the tool writes: launch commands, server info JSON, error
//! texts. Every secret becomes [`REDACTED`].
//!
//! What counts as a secret name: split the name into words at `-`, `_` and `.` (lower-cased);
//! it is a secret when its *last* word is `key`, `token`, `apikey`, `authorization` or
//! `credential(s)`, or when *any* word is `secret`, `password`, `passwd` or `pass`. So
//! `--api-key`, `--hf-token`, `HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `admin_api_key` are secrets,
//! while `--max-tokens`, `--max-total-tokens`, `--tokenizer`, `token_capacity` and
//! `--kv-cache-dtype` are not: a launch command must keep its token limits.
//!
//! Forms handled: `--api-key X`, `--api-key=X`, any secret-named flag, `Authorization: Bearer X`
//! (and `Bearer X` alone), `NAME_TOKEN=X` / `NAME_KEY=X` / `NAME_SECRET=X` environment
//! assignments, and secret-named JSON fields.

/// What every secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Whether a flag, variable or field name names a secret (see the module docs for the rule).
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.trim_start_matches('-').to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(['-', '_', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    let Some(last) = words.last() else {
        return false;
    };
    matches!(
        *last,
        "key" | "token" | "apikey" | "authorization" | "credential" | "credentials"
    ) || words
        .iter()
        .any(|w| matches!(*w, "secret" | "password" | "passwd" | "pass"))
}

/// Redacts a shell command line: secret-named flags (`--api-key X`, `--api-key=X`), secret
/// environment assignments (`HF_TOKEN=X`), and `Authorization`/`Bearer` credentials. Spacing
/// and quoting of everything else is kept.
pub fn redact_command(cmd: &str) -> String {
    let spans = shell_tokens(cmd);
    let mut out = String::with_capacity(cmd.len());
    let mut last = 0;
    let mut redact_next = false;
    for &(start, end) in &spans {
        let tok = &cmd[start..end];
        let bare = unquote(tok);
        let mut replacement: Option<String> = None;
        if redact_next {
            redact_next = false;
            if !bare.starts_with('-') {
                replacement = Some(REDACTED.to_owned());
            }
        }
        if replacement.is_none() {
            if bare.starts_with('-') {
                if let Some((flag, _)) = bare.split_once('=') {
                    if is_secret_name(flag) {
                        replacement = Some(format!("{flag}={REDACTED}"));
                    }
                } else if is_secret_name(bare) && bare.len() > 1 {
                    redact_next = true;
                }
            } else if let Some((name, _)) = bare.split_once('=')
                && is_env_name(name)
                && is_secret_name(name)
            {
                replacement = Some(format!("{name}={REDACTED}"));
            }
        }
        out.push_str(&cmd[last..start]);
        match replacement {
            Some(r) => out.push_str(&r),
            None => out.push_str(tok),
        }
        last = end;
    }
    out.push_str(&cmd[last..]);
    redact_auth(&out)
}

/// Redacts every string inside a JSON value: secret-named fields with a non-null value become
/// `"<redacted>"`, and other strings go through [`redact_command`] (which also catches
/// `Bearer` credentials and secret flags inside embedded command lines).
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_name(k) && !v.is_null() && !v.is_boolean() {
                    *v = serde_json::Value::String(REDACTED.to_owned());
                } else {
                    redact_json(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::String(s) => {
            let r = redact_command(s);
            if r != *s {
                *s = r;
            }
        }
        _ => {}
    }
}

/// Replaces every occurrence of each known secret (an API key the user gave) in free text,
/// then redacts `Authorization`/`Bearer` credentials. Empty secrets are ignored.
pub fn redact_text(s: &str, secrets: &[&str]) -> String {
    let mut out = s.to_owned();
    for secret in secrets.iter().filter(|x| !x.is_empty()) {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    redact_auth(&out)
}

/// `NAME` of a `NAME=value` environment assignment: letters, digits, `_`, not starting with a
/// digit.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Byte spans of shell words: whitespace separates words unless quoted; quotes stay in the
/// word (the caller keeps them when the word is not replaced).
fn shell_tokens(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                }
            }
            None => {
                if c.is_whitespace() {
                    if let Some(st) = start.take() {
                        spans.push((st, i));
                    }
                    continue;
                }
                if start.is_none() {
                    start = Some(i);
                }
                if c == '\'' || c == '"' {
                    quote = Some(c);
                } else if c == '\\' {
                    escaped = true;
                }
            }
        }
    }
    if let Some(st) = start {
        spans.push((st, s.len()));
    }
    spans
}

/// A word without its outer quotes.
fn unquote(tok: &str) -> &str {
    for q in ['"', '\''] {
        if tok.len() >= 2 && tok.starts_with(q) && tok.ends_with(q) {
            return &tok[1..tok.len() - 1];
        }
    }
    tok
}

/// Redacts `Bearer <cred>` (any case) and `Authorization: <cred>` without a scheme.
fn redact_auth(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for (needle, skip_scheme) in [("bearer ", false), ("authorization:", true)] {
        let mut from = 0;
        while let Some(p) = lower[from..].find(needle) {
            let mut i = from + p + needle.len();
            from = i;
            i += count_spaces(&s[i..]);
            if skip_scheme {
                // "Authorization: Bearer x" is handled by the Bearer pass; "Authorization: Basic
                // x" or "Authorization: x" here.
                let word_end = i + cred_len(&s[i..]);
                let word = &lower[i..word_end];
                if word == "bearer" {
                    continue;
                }
                let after = word_end + count_spaces(&s[word_end..]);
                let next_len = cred_len(&s[after..]);
                if matches!(word, "basic" | "token" | "digest") && next_len > 0 {
                    cuts.push((after, after + next_len));
                } else if word_end > i {
                    cuts.push((i, word_end));
                }
            } else {
                let n = cred_len(&s[i..]);
                if n > 0 {
                    cuts.push((i, i + n));
                }
            }
        }
    }
    if cuts.is_empty() {
        return s.to_owned();
    }
    cuts.sort_unstable();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (a, b) in cuts {
        if a < last {
            continue;
        }
        out.push_str(&s[last..a]);
        if &s[a..b] != REDACTED {
            out.push_str(REDACTED);
        } else {
            out.push_str(&s[a..b]);
        }
        last = b;
    }
    out.push_str(&s[last..]);
    out
}

fn count_spaces(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t']).len()
}

/// Length of a credential: up to whitespace, a quote, or a comma.
fn cred_len(s: &str) -> usize {
    s.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']'))
        .unwrap_or(s.len())
}

#[cfg(test)]
mod tests {
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
}
