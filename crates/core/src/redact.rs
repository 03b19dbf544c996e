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
//! Forms handled: `--api-key X` (also when X starts with a single `-`, or sits on the next line
//! after `\`), `--api-key=X`, any secret-named flag, `Authorization: Bearer X` (and `Bearer X`
//! alone), `NAME_TOKEN=X` / `NAME_KEY=X` / `NAME_SECRET=X` / `NAME_PAT=X` environment assignments
//! (also as a flag's value: `--env=HF_TOKEN=X`), commands nested in quotes (`bash -c "… --api-key
//! X"`), secret-named JSON fields (parsed, or `"api_key": "X"` inside any text), the password of a
//! URL (`https://user:X@host`), and any literal value of a key the user gave ([`redact_text`]).

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
        "key" | "token" | "apikey" | "authorization" | "credential" | "credentials" | "pat"
    ) || words
        .iter()
        .any(|w| matches!(*w, "secret" | "password" | "passwd" | "pass"))
}

/// Redacts a shell command line: secret-named flags (`--api-key X`, `--api-key=X`), secret
/// environment assignments (`HF_TOKEN=X`), and `Authorization`/`Bearer` credentials. Spacing
/// and quoting of everything else is kept.
///
/// One pass is repeated until nothing changes (at most 64): with unbalanced quotes a pass can
/// leave text that the next pass reads as a secret's value (found by fuzzing), and redacting
/// twice must never reveal less than redacting once.
pub fn redact_command(cmd: &str) -> String {
    let mut cur = redact_command_once(cmd);
    for _ in 0..64 {
        let next = redact_command_once(&cur);
        if next == cur {
            break;
        }
        cur = next;
    }
    cur
}

/// One pass of [`redact_command`].
fn redact_command_once(cmd: &str) -> String {
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
            // A key may start with `-`; only another long flag means the secret flag had no
            // value.
            if !bare.starts_with("--") {
                replacement = Some(REDACTED.to_owned());
            }
        }
        if replacement.is_none() {
            if bare.starts_with('-') {
                if let Some((flag, value)) = bare.split_once('=') {
                    if is_secret_name(flag) {
                        replacement = Some(format!("{flag}={REDACTED}{}", kept_quotes(flag, bare)));
                    } else if let Some((name, _)) = value.split_once('=')
                        && is_env_name(name)
                        && is_secret_name(name)
                    {
                        // `--env=HF_TOKEN=X`, `-e=KEY=X`.
                        replacement = Some(format!(
                            "{flag}={name}={REDACTED}{}",
                            kept_quotes(flag, bare)
                        ));
                    }
                } else if is_secret_name(bare) && bare.len() > 1 {
                    redact_next = true;
                }
            } else if let Some((name, _)) = bare.split_once('=')
                && is_env_name(name)
                && is_secret_name(name)
            {
                replacement = Some(format!("{name}={REDACTED}{}", kept_quotes(name, bare)));
            } else if bare.len() < tok.len() && bare.contains(char::is_whitespace) {
                // A quoted command line (`bash -c "… --api-key X"`): redact inside the quotes.
                let inner = redact_command_once(bare);
                if inner != bare {
                    let q = &tok[..1];
                    replacement = Some(format!("{q}{inner}{q}"));
                }
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
    redact_url_passwords(&redact_quoted_fields(&redact_auth(&out)))
}

/// The shell-word reader's open quote after reading `s` from outside any quote (the rules of
/// [`shell_tokens`]: `\\` escapes outside quotes and inside double quotes).
fn quote_state(s: &str) -> Option<char> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some('"') if c == '\\' => escaped = true,
            Some(_) => {}
            None if c == '\\' => escaped = true,
            None if c == '\'' || c == '"' => quote = Some(c),
            None => {}
        }
    }
    quote
}

/// What a redacted value leaves behind besides `<redacted>`: the fewest quote characters that
/// take the shell-word reader from its state before the value (after `before`) to its state
/// after it (after `word`). The rest of the text is then read the same way by a second pass,
/// and the word redacts to itself (found by fuzzing: dropping a closing quote that sat in the
/// value let each later pass swallow one more line).
fn kept_quotes(before: &str, word: &str) -> String {
    match (quote_state(before), quote_state(word)) {
        (a, b) if a == b => String::new(),
        (None, Some(q)) | (Some(q), None) => q.to_string(),
        (Some(a), Some(b)) => format!("{a}{b}"),
        (None, None) => String::new(),
    }
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

/// The one redaction of free text that came from outside (a server's error body, a URL, a
/// hardware string): every occurrence of each known secret (an API key the user gave), then
/// every form [`redact_command`] knows. Empty secrets are ignored.
pub fn redact_text(s: &str, secrets: &[&str]) -> String {
    let mut out = s.to_owned();
    for secret in secrets.iter().filter(|x| !x.is_empty()) {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    redact_command(&out)
}

/// Every string inside a JSON value through [`redact_text`], field names kept: for a record
/// the tool built (the run's header) whose strings may hold text from outside (hardware names
/// given by flag, a server's version or notes). Secret-named fields are [`redact_json`]'s job.
pub fn redact_strings(value: &mut serde_json::Value, secrets: &[&str]) {
    match value {
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| redact_strings(v, secrets)),
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(|v| redact_strings(v, secrets))
        }
        serde_json::Value::String(s) => {
            let r = redact_text(s, secrets);
            if r != *s {
                *s = r;
            }
        }
        _ => {}
    }
}

/// Text safe to print on a terminal: control characters (ANSI escapes, carriage returns,
/// bells) from a server-provided string become `?`, so a model name cannot rewrite the screen.
/// Newlines and tabs become spaces: every message is one line.
pub fn sanitize_terminal(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' | '\t' => ' ',
            c if c.is_control() => '?',
            c => c,
        })
        .collect()
}

/// `"secret_name": "value"` inside any text (JSON embedded in a command or an error body):
/// the value becomes `<redacted>`.
fn redact_quoted_fields(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('"') {
        let after_open = &rest[open + 1..];
        let Some(close) = after_open.find('"') else {
            break;
        };
        let name = &after_open[..close];
        let tail = &after_open[close + 1..];
        let colon = tail.trim_start_matches([' ', '\t']);
        let value = colon
            .strip_prefix(':')
            .map(|v| v.trim_start_matches([' ', '\t']));
        if let Some(v) = value.filter(|_| is_secret_name(name))
            && let Some(body) = v.strip_prefix('"')
            && let Some(end) = body.find('"')
        {
            // Everything up to the value's opening quote, then the redacted value.
            let value_start = rest.len() - body.len();
            out.push_str(&rest[..value_start]);
            out.push_str(if &body[..end] == REDACTED {
                &body[..end]
            } else {
                REDACTED
            });
            rest = &body[end..];
            continue;
        }
        out.push_str(&rest[..open + 1]);
        rest = after_open;
    }
    out.push_str(rest);
    out
}

/// The password of a URL's userinfo (`https://user:password@host` → `password`), as written:
/// a literal secret to remove wherever it appears, URL or not.
pub fn url_password(url: &str) -> Option<&str> {
    let tail = &url[url.find("://")? + 3..];
    let auth = &tail[..authority_len(tail)];
    let at = auth.rfind('@')?;
    let colon = auth[..at].find(':')?;
    Some(&auth[colon + 1..at]).filter(|p| !p.is_empty())
}

/// A URL without its userinfo (`https://user:password@host/v1` → `https://host/v1`): the form
/// in which every file the tool writes keeps a URL (`run.json`, `eval.json`). The userinfo ends
/// at the authority's last `@`; a text that is not `scheme://…` comes back as it is.
pub fn strip_url_userinfo(url: &str) -> String {
    let Some(s) = url.find("://") else {
        return url.to_string();
    };
    let tail = &url[s + 3..];
    let auth_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    match tail[..auth_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..s + 3], &tail[at + 1..]),
        None => url.to_string(),
    }
}

/// Length of a URL's authority (what follows `://`): up to the first `/`, whitespace or quote.
fn authority_len(tail: &str) -> usize {
    tail.find(|c: char| c == '/' || c.is_whitespace() || matches!(c, '"' | '\''))
        .unwrap_or(tail.len())
}

/// `scheme://user:password@host` → `scheme://user:<redacted>@host`.
fn redact_url_passwords(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find("://") {
        let (head, tail) = rest.split_at(p + 3);
        out.push_str(head);
        // Userinfo ends at the authority's last `@`.
        let auth_len = authority_len(tail);
        let auth = &tail[..auth_len];
        if let Some(at) = auth.rfind('@')
            && let Some(colon) = auth[..at].find(':')
            && &auth[colon + 1..at] != REDACTED
        {
            out.push_str(&auth[..colon + 1]);
            out.push_str(REDACTED);
            out.push_str(&auth[at..]);
        } else {
            out.push_str(auth);
        }
        rest = &tail[auth_len..];
    }
    out.push_str(rest);
    out
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
                // `\` before a newline continues the line: it separates words like a space.
                if c == '\\' && s[i + 1..].starts_with('\n') {
                    if let Some(st) = start.take() {
                        spans.push((st, i));
                    }
                    escaped = true;
                    continue;
                }
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
#[path = "tests/redact.rs"]
mod tests;
