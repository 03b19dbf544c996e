//! Small readers shared by the engine modules: typed fields of loosely typed JSON, and the
//! source commit hidden in version strings.

use llmib_core::Sourced;
use serde_json::Value;

/// A non-empty string field.
pub(crate) fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A non-negative integer field (also accepted as a float with no fraction, or a numeric
/// string: Python servers are not consistent).
pub(crate) fn u64_at(v: &Value, key: &str) -> Option<u64> {
    as_u64(v.get(key)?)
}

/// See [`u64_at`].
pub(crate) fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A value with its source.
pub(crate) fn sourced(value: u64, source: impl Into<String>) -> Sourced<u64> {
    Sourced {
        value,
        source: source.into(),
    }
}

/// The git commit in a version string: setuptools-scm's `+g<hash>` (`0.5.6.post3.dev11345+g028ac64f7`,
/// `0.10.1.dev12+g1a2b3c4.d20250101`) or llama.cpp's `b6123-1a2b3c4d` build info.
pub(crate) fn commit_from_version(v: &str) -> Option<String> {
    if let Some(i) = v.find("+g") {
        let hash: String = v[i + 2..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        if hash.len() >= 7 {
            return Some(hash);
        }
    }
    if let Some((build, hash)) = v.split_once('-')
        && build.starts_with('b')
        && build[1..].chars().all(|c| c.is_ascii_digit())
        && hash.len() >= 7
        && hash.chars().all(|c| c.is_ascii_hexdigit())
    {
        return Some(hash.to_owned());
    }
    None
}

/// Quantization names as the Engine card shows them: short all-letter-digit names upper-cased
/// (`fp8` → `FP8`, `awq` → `AWQ`), longer ones (`modelopt_fp4`, `compressed-tensors`) as given.
pub(crate) fn quantization_label(q: &str) -> String {
    if q.len() <= 5 && q.chars().all(|c| c.is_ascii_alphanumeric()) {
        q.to_ascii_uppercase()
    } else {
        q.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commits() {
        assert_eq!(
            commit_from_version("0.5.6.post3.dev11345+g028ac64f7").as_deref(),
            Some("028ac64f7")
        );
        assert_eq!(
            commit_from_version("0.10.1.dev12+g1a2b3c4d.d20250101").as_deref(),
            Some("1a2b3c4d")
        );
        assert_eq!(
            commit_from_version("b6123-1a2b3c4d").as_deref(),
            Some("1a2b3c4d")
        );
        assert_eq!(commit_from_version("b0-unknown"), None);
        assert_eq!(commit_from_version("0.32.0"), None);
        assert_eq!(commit_from_version("1.0+gxyz"), None);
    }

    #[test]
    fn fields() {
        let v = json!({"a": " x ", "b": "", "n": 3, "f": 4.0, "s": "5", "neg": -1, "frac": 1.5});
        assert_eq!(str_at(&v, "a").as_deref(), Some("x"));
        assert_eq!(str_at(&v, "b"), None);
        assert_eq!(u64_at(&v, "n"), Some(3));
        assert_eq!(u64_at(&v, "f"), Some(4));
        assert_eq!(u64_at(&v, "s"), Some(5));
        assert_eq!(u64_at(&v, "neg"), None);
        assert_eq!(u64_at(&v, "frac"), None);
        assert_eq!(quantization_label("fp8"), "FP8");
        assert_eq!(quantization_label("modelopt_fp4"), "modelopt_fp4");
    }
}
