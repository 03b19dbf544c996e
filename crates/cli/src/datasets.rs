//! The datasets of `eval`: the official files, pinned by sha256, fetched on first use into the
//! user's cache and read from there afterwards; or a local copy (`--dataset-dir`) for machines
//! without the internet. A file whose sha256 is not the pinned one is a hard error: the source
//! changed, or the download is not what it claims to be, and scores on it would not compare.
//!
//! Each profile then takes its items: GSM8K's whole test split (1,319), a stratified 1,000 of
//! MMLU-Pro's test split (`llmib_core::dataset::stratified`, by category), GPQA Diamond's 198;
//! `--limit` spreads over those. GPQA asks that its questions never be republished in plain
//! text: the file lives only in the user's cache (or their own folder), never in this
//! repository, and nothing of it is written out but item ids and parsed letters.

use anyhow::{Context, Result, bail};
use llmib_core::dataset::{Provenance, gsm8k_answer, permutation, spread, stratified};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One item, as every profile's file is read into.
#[derive(Debug, Clone, Deserialize)]
pub struct Item {
    /// Stable id (what A/B pairs by).
    pub id: String,
    /// The question.
    pub question: String,
    /// The reference answer: a number, or a choice letter.
    pub answer: String,
    /// Multiple-choice options, in the order shown (A, B, …).
    #[serde(default)]
    pub options: Vec<String>,
    /// Subject or category.
    #[serde(default)]
    pub category: Option<String>,
}

/// How an official file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `{"question", "answer"}` lines, the answer ending `#### N`.
    Gsm8kJsonl,
    /// OpenAI simple-evals' GPQA CSV: `Question`, `Correct Answer`, `Incorrect Answer 1..3`,
    /// `Record ID`, `High-level domain`.
    GpqaCsv,
    /// TIGER-Lab's parquet: `question_id`, `question`, `options`, `answer`, `category`.
    MmluProParquet,
}

/// Where a profile's official file comes from.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// `--profile`.
    pub profile: &'static str,
    /// The official file, at a fixed revision where the host has them.
    pub url: &'static str,
    /// Its sha256.
    pub sha256: &'static str,
    /// File name in a `--dataset-dir` and in the cache.
    pub file: &'static str,
    layout: Layout,
}

/// The pinned sources. GSM8K: OpenAI's repository at a fixed commit (MIT). MMLU-Pro: TIGER-Lab's
/// Hugging Face dataset at a fixed revision (MIT). GPQA Diamond: the copy OpenAI's simple-evals
/// (and SGLang's evals) read (CC BY 4.0, with the authors' request not to republish it).
pub const SOURCES: [Source; 3] = [
    Source {
        profile: "gsm8k",
        url: "https://raw.githubusercontent.com/openai/grade-school-math/3101c7d5072418e28b9008a6636bde82a006892c/grade_school_math/data/test.jsonl",
        sha256: "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
        file: "gsm8k-test.jsonl",
        layout: Layout::Gsm8kJsonl,
    },
    Source {
        profile: "mmlu-pro",
        url: "https://huggingface.co/datasets/TIGER-Lab/MMLU-Pro/resolve/b189ec765aa7ed75c8acfea42df31fdae71f97be/data/test-00000-of-00001.parquet",
        sha256: "0e24a191921c2f453518a537a8b2117bd137e7714d4ef1565e9ba06c1ecb9ad8",
        file: "mmlu-pro-test.parquet",
        layout: Layout::MmluProParquet,
    },
    Source {
        profile: "gpqa-diamond",
        url: "https://openaipublic.blob.core.windows.net/simple-evals/gpqa_diamond.csv",
        sha256: "41d1213cd7a4998605a26c2798500652572007161b3a92817ba46b35befcd305",
        file: "gpqa_diamond.csv",
        layout: Layout::GpqaCsv,
    },
];

/// MMLU-Pro's stratified subset.
const MMLU_PRO_ITEMS: usize = 1000;
/// No dataset here is near this; a larger body is a wrong URL or a hostile server.
const MAX_BYTES: u64 = 64 << 20;
/// A download slower than this is broken, not slow.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// How to find a profile's file.
#[derive(Debug, Clone, Default)]
pub struct Locate {
    /// A local folder: `<profile>.jsonl` in the project's item format, or the official file.
    pub dataset_dir: Option<PathBuf>,
    /// Download from here instead of the official address (a mirror).
    pub url: Option<String>,
    /// Expect this sha256 instead of the pin (a mirror of another revision).
    pub sha256: Option<String>,
    /// The cache root (default: the user's cache directory).
    pub cache_dir: Option<PathBuf>,
}

/// The source of `profile`, or an error naming the profiles there are.
pub fn source(profile: &str) -> Result<Source> {
    SOURCES
        .iter()
        .find(|s| s.profile == profile)
        .copied()
        .with_context(|| {
            format!("unknown --profile `{profile}`: use gsm8k, mmlu-pro or gpqa-diamond")
        })
}

/// The user's cache root for this tool: `$XDG_CACHE_HOME/llm-inference-bench`, else
/// `~/.cache/llm-inference-bench`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("llm-inference-bench"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The items of `profile` (its set, then `limit` spread over it) and where they came from.
pub async fn obtain(
    profile: &str,
    at: &Locate,
    limit: Option<usize>,
) -> Result<(Vec<Item>, Provenance)> {
    let src = source(profile)?;
    let expected = at.sha256.clone().unwrap_or_else(|| src.sha256.to_string());
    let (items, mut prov) = match &at.dataset_dir {
        Some(dir) => {
            let own = dir.join(format!("{profile}.jsonl"));
            let official = dir.join(src.file);
            if own.is_file() {
                // The project's own item format: `{"id", "question", "answer", "options"?,
                // "category"?}` per line.
                let items = crate::eval_cmd::read_jsonl(&own, "a dataset item")?;
                let prov = Provenance {
                    file: own.display().to_string(),
                    ..Default::default()
                };
                (items, prov)
            } else if official.is_file() {
                let bytes = std::fs::read(&official)
                    .with_context(|| format!("cannot read {}", official.display()))?;
                let got = sha256_hex(&bytes);
                if got != expected {
                    bail!(
                        "{} has sha256 {got}, not the pinned {expected}: it is not the file this profile is scored on (pass --dataset-sha256 to use another revision on purpose)",
                        official.display()
                    );
                }
                let prov = Provenance {
                    file: official.display().to_string(),
                    sha256: Some(got),
                    ..Default::default()
                };
                (parse(src.layout, bytes, &official)?, prov)
            } else {
                bail!(
                    "{} holds neither {profile}.jsonl nor {}: put either there, or drop --dataset-dir to download it",
                    dir.display(),
                    src.file
                );
            }
        }
        None => {
            let root = at
                .cache_dir
                .clone()
                .or_else(default_cache_dir)
                .context("no cache directory (no HOME): pass --cache-dir or --dataset-dir")?;
            let url = at.url.clone().unwrap_or_else(|| src.url.to_string());
            let (path, bytes) = cached(&root, &url, &expected, src.file).await?;
            let prov = Provenance {
                file: path.display().to_string(),
                url: Some(llmib_client::download::shown_url(&url)),
                sha256: Some(expected.clone()),
                ..Default::default()
            };
            (parse(src.layout, bytes, &path)?, prov)
        }
    };
    if items.is_empty() {
        bail!("the {profile} dataset ({}) has no items", prov.file);
    }
    let set: Vec<Item> = if profile == "mmlu-pro" {
        let cats: Vec<&str> = items
            .iter()
            .map(|i| i.category.as_deref().unwrap_or(""))
            .collect();
        let pick = stratified(&cats, MMLU_PRO_ITEMS);
        pick.into_iter().map(|i| items[i].clone()).collect()
    } else {
        items
    };
    prov.items_in_set = set.len();
    let chosen: Vec<Item> = spread(set.len(), limit)
        .into_iter()
        .map(|i| set[i].clone())
        .collect();
    if chosen.is_empty() {
        bail!("no item to score: --limit must be at least 1");
    }
    Ok((chosen, prov))
}

/// The cached file for `sha256` and its bytes (the very bytes checked, so what is parsed is what
/// was verified), downloading it from `url` first when it is not there (or no longer
/// verifies). The cache is content-addressed (`datasets/<sha256>/<file>`), written to a
/// temporary name of this process and renamed, so a cut or concurrent download never passes
/// for a cached one.
async fn cached(root: &Path, url: &str, sha256: &str, file: &str) -> Result<(PathBuf, Vec<u8>)> {
    let dir = root.join("datasets").join(sha256);
    let path = dir.join(file);
    if let Ok(bytes) = std::fs::read(&path) {
        if sha256_hex(&bytes) == sha256 {
            return Ok((path, bytes));
        }
        eprintln!(
            "note: the cached {} no longer matches its sha256; downloading it again",
            path.display()
        );
    }
    let shown = llmib_client::download::shown_url(url);
    eprintln!("downloading {shown} (once; cached under {})", dir.display());
    let body = llmib_client::download::download(url, MAX_BYTES, DOWNLOAD_TIMEOUT)
        .await
        // The client's messages name the URL: the one shown, never a mirror's token.
        .map_err(|e| anyhow::Error::msg(e.replace(url, &shown)))?;
    let got = sha256_hex(&body);
    if got != sha256 {
        bail!(
            "the file at {shown} has sha256 {got}, not the pinned {sha256}: the source changed or the download is not the dataset; nothing was cached (a mirror of another revision needs --dataset-sha256)"
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".{file}.{}.part", std::process::id()));
    std::fs::write(&tmp, &body).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, body))
}

/// Parses the checked `bytes` of the file at `path` (named in errors).
fn parse(layout: Layout, bytes: Vec<u8>, path: &Path) -> Result<Vec<Item>> {
    match layout {
        Layout::Gsm8kJsonl => parse_gsm8k(&bytes, path),
        Layout::GpqaCsv => parse_gpqa(&bytes, path),
        Layout::MmluProParquet => parse_mmlu_pro(bytes, path),
    }
}

fn parse_gsm8k(bytes: &[u8], path: &Path) -> Result<Vec<Item>> {
    #[derive(Deserialize)]
    struct Line {
        question: String,
        answer: String,
    }
    let text =
        std::str::from_utf8(bytes).with_context(|| format!("{}: not UTF-8", path.display()))?;
    // Items are numbered by their line in the file (blank lines keep their numbers).
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let line: Line = serde_json::from_str(l)
                .with_context(|| format!("{} line {}: not a GSM8K line", path.display(), i + 1))?;
            let answer = gsm8k_answer(&line.answer)
                .with_context(|| format!("{} line {}: no `#### answer`", path.display(), i + 1))?;
            Ok(Item {
                // The split's line number: what GSM8K items are known by.
                id: format!("gsm8k-test-{i:04}"),
                question: line.question,
                answer,
                options: Vec::new(),
                category: None,
            })
        })
        .collect()
}

fn parse_gpqa(bytes: &[u8], path: &Path) -> Result<Vec<Item>> {
    let mut r = csv::Reader::from_reader(bytes);
    let headers = r
        .headers()
        .with_context(|| format!("{}: no header row", path.display()))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .with_context(|| format!("{}: no `{name}` column", path.display()))
    };
    let q = col("Question")?;
    let right = col("Correct Answer")?;
    let wrong = [
        col("Incorrect Answer 1")?,
        col("Incorrect Answer 2")?,
        col("Incorrect Answer 3")?,
    ];
    let id = col("Record ID").ok();
    let domain = col("High-level domain").ok();
    let mut out = Vec::new();
    for (row, rec) in r.records().enumerate() {
        let rec = rec.with_context(|| format!("{} row {}: not CSV", path.display(), row + 2))?;
        let field = |i: usize| rec.get(i).unwrap_or("").trim().to_string();
        let id = id
            .map(field)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("gpqa-{row:03}"));
        let choices = [
            field(right),
            field(wrong[0]),
            field(wrong[1]),
            field(wrong[2]),
        ];
        // The correct answer is first in the file: shown in an order fixed by the item's id,
        // so its letter is spread over A–D and the same on every run.
        let order = permutation(&id, choices.len());
        let letter = order.iter().position(|&c| c == 0).unwrap_or(0);
        out.push(Item {
            question: field(q),
            answer: ((b'A' + letter as u8) as char).to_string(),
            options: order.iter().map(|&c| choices[c].clone()).collect(),
            category: domain.map(field).filter(|s| !s.is_empty()),
            id,
        });
    }
    Ok(out)
}

fn parse_mmlu_pro(bytes: Vec<u8>, path: &Path) -> Result<Vec<Item>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))
        .with_context(|| format!("{}: not a parquet file", path.display()))?;
    let rows = reader
        .get_row_iter(None)
        .with_context(|| format!("{}: unreadable rows", path.display()))?;
    let mut out = Vec::new();
    for (n, row) in rows.enumerate() {
        let row = row.with_context(|| format!("{} row {n}: unreadable", path.display()))?;
        let (mut id, mut question, mut answer, mut category) = (None, None, None, None);
        let mut options = Vec::new();
        for (name, field) in row.get_column_iter() {
            match (name.as_str(), field) {
                ("question_id", Field::Long(v)) => id = Some(format!("mmlu-pro-{v}")),
                ("question", Field::Str(s)) => question = Some(s.clone()),
                ("answer", Field::Str(s)) => answer = Some(s.trim().to_string()),
                ("category", Field::Str(s)) => category = Some(s.clone()),
                ("options", Field::ListInternal(list)) => {
                    options = list
                        .elements()
                        .iter()
                        .map(|e| match e {
                            Field::Str(s) => Ok(s.clone()),
                            other => Err(anyhow::anyhow!(
                                "{} row {n}: an option that is not text ({other})",
                                path.display()
                            )),
                        })
                        .collect::<Result<_>>()?
                }
                _ => {}
            }
        }
        let missing = |what: &str| format!("{} row {n}: no `{what}`", path.display());
        let answer = answer.with_context(|| missing("answer"))?;
        // An item whose answer is not one of its options could only ever score Wrong: a
        // broken file, not a harder question.
        let letter = answer.bytes().next().filter(|_| answer.len() == 1);
        if !letter.is_some_and(|b| b.is_ascii_uppercase() && usize::from(b - b'A') < options.len())
        {
            bail!(
                "{} row {n}: answer `{answer}` is not one of its {} options",
                path.display(),
                options.len()
            );
        }
        out.push(Item {
            id: id.with_context(|| missing("question_id"))?,
            question: question.with_context(|| missing("question"))?,
            answer,
            options,
            category,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_has_a_pinned_source() {
        for p in ["gsm8k", "mmlu-pro", "gpqa-diamond"] {
            let s = source(p).expect("a source");
            assert_eq!(s.sha256.len(), 64, "{p}");
            assert!(s.url.starts_with("https://"), "{p}");
        }
        let e = source("mmlu").expect_err("unknown").to_string();
        assert!(e.contains("use gsm8k, mmlu-pro or gpqa-diamond"), "{e}");
    }

    #[test]
    fn sha256_of_a_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn gpqa_rows_become_shuffled_four_way_items() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("g.csv");
        std::fs::write(
            &p,
            "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Record ID,High-level domain\n\
             \"What is 2+2?\nPick one.\",4,3,5,\"6, or so\",recA,Math\n",
        )
        .expect("write");
        let bytes = std::fs::read(&p).expect("read");
        let items = parse_gpqa(&bytes, &p).expect("parsed");
        assert_eq!(items.len(), 1);
        let it = &items[0];
        assert_eq!(it.id, "recA");
        assert_eq!(it.question, "What is 2+2?\nPick one.");
        assert_eq!(it.category.as_deref(), Some("Math"));
        let letter = it.answer.as_bytes()[0] - b'A';
        assert_eq!(it.options[letter as usize], "4", "{it:?}");
        assert!(it.options.contains(&"6, or so".to_string()));
    }
}
