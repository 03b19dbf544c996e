//! Files of one JSON value per line: what eval's results are kept in (`items.jsonl`,
//! `tasks.jsonl`) and the project's own dataset format (`<profile>.jsonl`).

use crate::error::EvalError;
use std::path::Path;

/// One JSON value per line, each line ended.
pub(crate) fn to_jsonl<T: serde::Serialize>(rows: &[T]) -> Result<String, EvalError> {
    let mut lines = String::new();
    for r in rows {
        lines.push_str(&serde_json::to_string(r)?);
        lines.push('\n');
    }
    Ok(lines)
}

/// Reads a file of one JSON value per line (blank lines skipped); a bad line is named by its
/// number and by `what` it should have been.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<Vec<T>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(EvalError::io("read", path))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| EvalError::Json {
                path: path.to_path_buf(),
                line: Some(i + 1),
                what,
                source,
            })
        })
        .collect()
}

/// Writes `text` to `dir/name`.
pub(crate) fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> Result<(), EvalError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(EvalError::io("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_a_bad_line_is_named() {
        let dir = std::env::temp_dir().join(format!("llmib-eval-jsonl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let text = to_jsonl(&[1u32, 2, 3]).expect("lines");
        assert_eq!(text, "1\n2\n3\n");
        write(&dir, "n.jsonl", format!("{text}\n\"x\"\n")).expect("write");
        let err = read_jsonl::<u32>(&dir.join("n.jsonl"), "a number").expect_err("line 5");
        assert!(
            err.to_string().ends_with("n.jsonl line 5: not a number"),
            "{err}"
        );
        write(&dir, "ok.jsonl", text).expect("write");
        assert_eq!(
            read_jsonl::<u32>(&dir.join("ok.jsonl"), "a number").expect("read"),
            [1, 2, 3]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
