//! Redaction again, on upload: a run written by an older version of the tool (or edited by
//! hand) may hold a secret the current rules remove. The rules are `llmib_core`'s, the same the
//! tool applies when it writes; a file the rules leave unchanged is stored byte for byte.

use super::prepared::one_line;
use crate::error::UploadError;
use llmib_core::{RUN_FILE, RunInfo};
use serde_json::Value;

/// Literal secrets to remove wherever they appear: the password of run.json's URL, in case an
/// old version kept the URL whole.
pub(super) fn secrets_of(run: &Value) -> Vec<String> {
    run.get("url")
        .and_then(Value::as_str)
        .and_then(llmib_core::url_password)
        .map(str::to_owned)
        .into_iter()
        .collect()
}

/// Every string of a JSON value through the rules: any secret inside text (a launch command's
/// `--api-key X`, `HF_TOKEN=X`, `"api_key": "X"`, a URL's password). Field names are the tool's
/// own and kept: a typed field may be named like a secret (a plan cell's `key`).
fn redact_value(v: &mut Value, secrets: &[&str]) {
    llmib_core::redact_strings(v, secrets);
}

/// run.json redacted (the URL without its userinfo, as the tool writes it) and parsed with
/// the tool's own type. Returns the bytes to store: the upload's own when nothing changed.
pub(super) fn redact_run(
    raw: &[u8],
    original: Value,
    secrets: &[&str],
) -> Result<(Vec<u8>, RunInfo), UploadError> {
    let mut v = original.clone();
    if let Some(Value::String(url)) = v.get_mut("url") {
        *url = llmib_core::strip_url_userinfo(url);
    }
    // The engine's free-form facts are the server's own fields, verbatim: a secret-named one
    // (`api_key`) loses its value, as the tool does when it writes them.
    if let Some(extra) = v.get_mut("engine").and_then(|e| e.get_mut("extra")) {
        llmib_core::redact_json(extra);
    }
    redact_value(&mut v, secrets);
    let info: RunInfo = serde_json::from_value(v.clone()).map_err(|e| UploadError::Malformed {
        file: RUN_FILE,
        detail: one_line(e),
    })?;
    if v == original {
        return Ok((raw.to_vec(), info));
    }
    let mut bytes = serde_json::to_vec_pretty(&v).map_err(|e| UploadError::Malformed {
        file: RUN_FILE,
        detail: one_line(e),
    })?;
    bytes.push(b'\n');
    Ok((bytes, info))
}

/// A JSON-lines file with each line redacted; lines the rules leave alone keep their bytes. A
/// line that is not JSON (a torn tail) is redacted as text.
pub(super) fn redact_lines(raw: Vec<u8>, secrets: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut changed = false;
    for (i, line) in raw.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        let redacted = match serde_json::from_slice::<Value>(line) {
            Ok(mut v) => {
                let before = v.clone();
                redact_value(&mut v, secrets);
                (v != before).then(|| serde_json::to_vec(&v).ok()).flatten()
            }
            Err(_) => std::str::from_utf8(line).ok().and_then(|s| {
                let r = llmib_core::redact_text(s, secrets);
                (r != s).then(|| r.into_bytes())
            }),
        };
        match redacted {
            Some(r) => {
                changed = true;
                out.extend_from_slice(&r);
            }
            None => out.extend_from_slice(line),
        }
    }
    if changed { out } else { raw }
}
