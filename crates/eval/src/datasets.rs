//! The datasets of `eval`: the official files, pinned by sha256, fetched on first use into the
//! user's cache and read from there afterwards; or a local copy (`--dataset-dir`) for machines
//! without the internet. A file whose sha256 is not the pinned one is a hard error: the source
//! changed, or the download is not what it claims to be, and scores on it would not compare.
//!
//! Each profile then takes its items: GSM8K's whole test split (1,319), a stratified 1,000 of
//! MMLU-Pro's test split ([`crate::select::stratified`], by category), GPQA Diamond's 198,
//! MT-Bench's 80 (by category, for `crate::spec_bench`); `--limit` spreads over
//! those. GPQA asks that its questions never be republished in plain
//! text: the file lives only in the user's cache (or their own folder), never in this
//! repository, and nothing of it is written out but item ids and parsed letters.

use crate::download::{download, shown_url};
use crate::error::EvalError;
use crate::formats::{Item, Layout, parse};
use crate::jsonl::read_jsonl;
use crate::select::{spread, stratified};
use llmib_core::{Profile, Provenance};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a profile's official file comes from.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// The profile it serves.
    pub profile: Profile,
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
/// MT-Bench: LMSYS FastChat's `question.jsonl` at the commit that released it (Apache-2.0, the
/// repository's licence); its sha256 is that of the git blob `464e2c22` at that commit, the
/// same blob FastChat's head still holds (read from a clone, docs/eval.md).
pub const SOURCES: [Source; 4] = [
    Source {
        profile: Profile::Gsm8k,
        url: "https://raw.githubusercontent.com/openai/grade-school-math/3101c7d5072418e28b9008a6636bde82a006892c/grade_school_math/data/test.jsonl",
        sha256: "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
        file: "gsm8k-test.jsonl",
        layout: Layout::Gsm8kJsonl,
    },
    Source {
        profile: Profile::MmluPro,
        url: "https://huggingface.co/datasets/TIGER-Lab/MMLU-Pro/resolve/b189ec765aa7ed75c8acfea42df31fdae71f97be/data/test-00000-of-00001.parquet",
        sha256: "0e24a191921c2f453518a537a8b2117bd137e7714d4ef1565e9ba06c1ecb9ad8",
        file: "mmlu-pro-test.parquet",
        layout: Layout::MmluProParquet,
    },
    Source {
        profile: Profile::GpqaDiamond,
        url: "https://openaipublic.blob.core.windows.net/simple-evals/gpqa_diamond.csv",
        sha256: "41d1213cd7a4998605a26c2798500652572007161b3a92817ba46b35befcd305",
        file: "gpqa_diamond.csv",
        layout: Layout::GpqaCsv,
    },
    Source {
        profile: Profile::MtBench,
        url: "https://raw.githubusercontent.com/lm-sys/FastChat/b494d0c6b4e7935f1764f8439e75da3e66beccc7/fastchat/llm_judge/data/mt_bench/question.jsonl",
        sha256: "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7",
        file: "mt_bench_question.jsonl",
        layout: Layout::MtBenchJsonl,
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

/// The source of `profile`; `None` for long-answer, which has no dataset.
pub fn source(profile: Profile) -> Option<Source> {
    SOURCES.iter().find(|s| s.profile == profile).copied()
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
    llmib_core::hex_sha256(bytes)
}

/// The items of `profile` (its set, then `limit` spread over it) and where they came from.
pub async fn obtain(
    profile: Profile,
    at: &Locate,
    limit: Option<usize>,
) -> Result<(Vec<Item>, Provenance), EvalError> {
    let src = source(profile).ok_or_else(|| {
        EvalError::Settings(format!(
            "--profile {profile} has no dataset: use gsm8k, mmlu-pro, gpqa-diamond or mt-bench"
        ))
    })?;
    let expected = at.sha256.clone().unwrap_or_else(|| src.sha256.to_string());
    let (items, mut prov) = match &at.dataset_dir {
        Some(dir) => read_local(dir, &src, &expected)?,
        None => read_cached(at, &src, &expected).await?,
    };
    if items.is_empty() {
        return Err(EvalError::dataset(format!(
            "the {profile} dataset ({}) has no items",
            prov.file
        )));
    }
    let set: Vec<Item> = if profile == Profile::MmluPro {
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
        return Err(EvalError::Settings(
            "no item to score: --limit must be at least 1".into(),
        ));
    }
    Ok((chosen, prov))
}

/// The items of `src` in the folder `dir`: `<profile>.jsonl` in the project's own item format
/// (`{"id", "question", "answer", "options"?, "category"?}` per line), else the official file,
/// checked against `expected`.
fn read_local(
    dir: &Path,
    src: &Source,
    expected: &str,
) -> Result<(Vec<Item>, Provenance), EvalError> {
    let own = dir.join(format!("{}.jsonl", src.profile));
    let official = dir.join(src.file);
    if own.is_file() {
        let items = read_jsonl(&own, "a dataset item")?;
        let prov = Provenance {
            file: own.display().to_string(),
            ..Default::default()
        };
        return Ok((items, prov));
    }
    if !official.is_file() {
        return Err(EvalError::Settings(format!(
            "{} holds neither {}.jsonl nor {}: put either there, or drop --dataset-dir to download it",
            dir.display(),
            src.profile,
            src.file
        )));
    }
    let bytes = std::fs::read(&official).map_err(EvalError::io("read", &official))?;
    let got = sha256_hex(&bytes);
    if got != expected {
        return Err(EvalError::dataset(format!(
            "{} has sha256 {got}, not the pinned {expected}: it is not the file this profile is scored on (pass --dataset-sha256 to use another revision on purpose)",
            official.display()
        )));
    }
    let prov = Provenance {
        file: official.display().to_string(),
        sha256: Some(got),
        ..Default::default()
    };
    Ok((parse(src.layout, bytes, &official)?, prov))
}

/// The items of `src` from the cache, downloaded into it first when they are not there.
async fn read_cached(
    at: &Locate,
    src: &Source,
    expected: &str,
) -> Result<(Vec<Item>, Provenance), EvalError> {
    let root = at
        .cache_dir
        .clone()
        .or_else(default_cache_dir)
        .ok_or_else(|| {
            EvalError::Settings(
                "no cache directory (no HOME): pass --cache-dir or --dataset-dir".into(),
            )
        })?;
    let url = at.url.clone().unwrap_or_else(|| src.url.to_string());
    let (path, bytes) = cached(&root, &url, expected, src.file).await?;
    let prov = Provenance {
        file: path.display().to_string(),
        url: Some(shown_url(&url)),
        sha256: Some(expected.to_string()),
        ..Default::default()
    };
    Ok((parse(src.layout, bytes, &path)?, prov))
}

/// The cached file for `sha256` and its bytes (the very bytes checked, so what is parsed is what
/// was verified), downloading it from `url` first when it is not there (or no longer
/// verifies). The cache is content-addressed (`datasets/<sha256>/<file>`), written to a
/// temporary name of this process and renamed, so a cut or concurrent download never passes
/// for a cached one.
async fn cached(
    root: &Path,
    url: &str,
    sha256: &str,
    file: &str,
) -> Result<(PathBuf, Vec<u8>), EvalError> {
    let dir = root.join("datasets").join(sha256);
    let path = dir.join(file);
    if let Ok(bytes) = std::fs::read(&path) {
        if sha256_hex(&bytes) == sha256 {
            return Ok((path, bytes));
        }
        let _ = writeln!(
            std::io::stderr(),
            "note: the cached {} no longer matches its sha256; downloading it again",
            path.display()
        );
    }
    // Messages name the URL as shown, never a mirror's token.
    let shown = shown_url(url);
    let _ = writeln!(
        std::io::stderr(),
        "downloading {shown} (once; cached under {})",
        dir.display()
    );
    let body = download(url, MAX_BYTES, DOWNLOAD_TIMEOUT).await?;
    let got = sha256_hex(&body);
    if got != sha256 {
        return Err(EvalError::dataset(format!(
            "the file at {shown} has sha256 {got}, not the pinned {sha256}: the source changed or the download is not the dataset; nothing was cached (a mirror of another revision needs --dataset-sha256)"
        )));
    }
    std::fs::create_dir_all(&dir).map_err(EvalError::io("create", &dir))?;
    let tmp = dir.join(format!(".{file}.{}.part", std::process::id()));
    std::fs::write(&tmp, &body).map_err(EvalError::io("write", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(EvalError::io("write", &path))?;
    Ok((path, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accuracy_profile_has_a_pinned_source() {
        for p in [
            Profile::Gsm8k,
            Profile::MmluPro,
            Profile::GpqaDiamond,
            Profile::MtBench,
        ] {
            let s = source(p).expect("a source");
            assert_eq!(s.sha256.len(), 64, "{p}");
            assert!(s.url.starts_with("https://"), "{p}");
        }
        assert!(source(Profile::LongAnswer).is_none());
    }

    #[test]
    fn sha256_of_a_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
