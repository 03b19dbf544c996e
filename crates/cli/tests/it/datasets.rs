//! `eval`'s download path: a local HTTP server serves files in each official layout (GSM8K's
//! JSON lines, GPQA's CSV, MMLU-Pro's parquet); `eval` fetches each once into the cache,
//! checks its sha256, reads it from the cache afterwards, and refuses a file that is not the
//! pinned one. The simulator answers every item (each question carries its marker), so the
//! items' reference answers, GPQA's shuffled letters included, are checked by the scores.

use crate::common::*;
use crate::run::exact_sim;
use llmib_eval::permutation;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A file server on loopback: path → body; counts the requests it answered.
pub(crate) struct Files {
    pub(crate) url: String,
    pub(crate) hits: Arc<AtomicUsize>,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
}

impl Files {
    pub(crate) fn start() -> Files {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let hits = Arc::new(AtomicUsize::new(0));
        let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let (h, f) = (hits.clone(), files.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut line = String::new();
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                // Drain the headers.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let target = line.split_whitespace().nth(1).unwrap_or("/");
                let path = target.split('?').next().unwrap_or("/").to_string();
                h.fetch_add(1, Ordering::SeqCst);
                let body = f.lock().expect("files").get(&path).cloned();
                let reply = match body {
                    Some(b) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        )
                        .into_bytes();
                        r.extend(b);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = conn.write_all(&reply);
            }
        });
        Files { url, hits, files }
    }

    pub(crate) fn put(&self, path: &str, body: Vec<u8>) -> String {
        self.files
            .lock()
            .expect("files")
            .insert(path.to_string(), body);
        format!("{}{path}", self.url)
    }
}

pub(crate) fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// GSM8K's layout: `{"question", "answer"}` with `#### N`; ids are line numbers.
fn gsm8k_file() -> Vec<u8> {
    (0..6u32)
        .map(|i| {
            let id = format!("gsm8k-test-{i:04}");
            let n = 1000 + i;
            format!(
                "{{\"question\":\"Add {i} to 1000. \u{27e6}sim:{id}:{n}\u{27e7}\",\"answer\":\"1000 + {i} = <<1000+{i}={n}>>{n}\\n#### {},{:03}\"}}\n",
                n / 1000,
                n % 1000
            )
        })
        .collect::<String>()
        .into_bytes()
}

/// GPQA's layout: the correct answer first; the tool shows the choices in an order fixed by
/// the record id, so the marker carries the letter that order gives.
fn gpqa_file() -> Vec<u8> {
    let mut s = String::from(
        "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Record ID,High-level domain\n",
    );
    for i in 0..5u32 {
        let id = format!("rec{i}x");
        let pos = permutation(&id, 4)
            .iter()
            .position(|&c| c == 0)
            .expect("placed");
        let letter = (b'A' + pos as u8) as char;
        let domain = if i % 2 == 0 { "Physics" } else { "Biology" };
        s.push_str(&format!(
            "\"Which, of these, is right?\n\u{27e6}sim:{id}:{letter}\u{27e7}\",right {i},wrong a,\"wrong, b\",wrong c,{id},{domain}\n"
        ));
    }
    s.into_bytes()
}

/// MMLU-Pro's layout, written with the parquet crate: `question_id`, `question`, `options`
/// (a list), `answer`, `category`.
fn mmlu_pro_file(path: &Path, last_answer: char) -> Vec<u8> {
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let schema = parse_message_type(
        "message schema {
            REQUIRED INT64 question_id;
            REQUIRED BYTE_ARRAY question (UTF8);
            OPTIONAL group options (LIST) {
                REPEATED group list { OPTIONAL BYTE_ARRAY element (UTF8); }
            }
            REQUIRED BYTE_ARRAY answer (UTF8);
            REQUIRED BYTE_ARRAY category (UTF8);
        }",
    )
    .expect("schema");
    let rows: Vec<(i64, String, char, &str)> = (0..9i64)
        .map(|i| {
            let letter = if i == 8 {
                last_answer
            } else {
                (b'A' + (i % 4) as u8) as char
            };
            let cat = ["law", "math", "law"][(i % 3) as usize];
            (
                70 + i,
                format!("Pick. \u{27e6}sim:mmlu-pro-{}:{letter}\u{27e7}", 70 + i),
                letter,
                cat,
            )
        })
        .collect();
    let file = std::fs::File::create(path).expect("parquet file");
    let mut w = SerializedFileWriter::new(
        file,
        Arc::new(schema),
        Arc::new(WriterProperties::builder().build()),
    )
    .expect("writer");
    let mut rg = w.next_row_group().expect("row group");
    let bytes = |v: Vec<String>| {
        v.into_iter()
            .map(|s| ByteArray::from(s.as_str()))
            .collect::<Vec<_>>()
    };
    let mut col = 0;
    while let Some(mut c) = rg.next_column().expect("column") {
        match col {
            0 => {
                let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
                c.typed::<Int64Type>()
                    .write_batch(&ids, None, None)
                    .expect("ids");
            }
            1 => {
                let q = bytes(rows.iter().map(|r| r.1.clone()).collect());
                c.typed::<ByteArrayType>()
                    .write_batch(&q, None, None)
                    .expect("questions");
            }
            2 => {
                // Four options per row: definition level 3 (present), repetition 0 then 1.
                let opts = bytes(
                    rows.iter()
                        .flat_map(|_| ["w", "x", "y", "z"].map(String::from))
                        .collect(),
                );
                let def = vec![3i16; opts.len()];
                let rep: Vec<i16> = (0..opts.len()).map(|i| i16::from(i % 4 != 0)).collect();
                c.typed::<ByteArrayType>()
                    .write_batch(&opts, Some(&def), Some(&rep))
                    .expect("options");
            }
            3 => {
                let a = bytes(rows.iter().map(|r| r.2.to_string()).collect());
                c.typed::<ByteArrayType>()
                    .write_batch(&a, None, None)
                    .expect("answers");
            }
            _ => {
                let k = bytes(rows.iter().map(|r| r.3.to_string()).collect());
                c.typed::<ByteArrayType>()
                    .write_batch(&k, None, None)
                    .expect("categories");
            }
        }
        c.close().expect("close column");
        col += 1;
    }
    rg.close().expect("close row group");
    w.close().expect("close file");
    std::fs::read(path).expect("parquet bytes")
}

fn eval(url: &str, args: &[&str], out: &Path) -> std::process::Output {
    let mut all = vec![
        "eval",
        "--url",
        url,
        "--concurrency",
        "3",
        "--max-output",
        "64",
        "--output",
        out.to_str().unwrap_or_default(),
    ];
    all.extend_from_slice(args);
    run_bin(&all)
}

/// `eval` of `profile` downloading from `url` into the cache `cache`, expecting `sha256` (the
/// official pin when `None`), plus `extra` flags.
fn fetch(
    server: &str,
    profile: &str,
    url: &str,
    sha256: Option<&str>,
    cache: &str,
    extra: &[&str],
    out: &Path,
) -> std::process::Output {
    let mut args = vec![
        "--profile",
        profile,
        "--dataset-url",
        url,
        "--cache-dir",
        cache,
    ];
    if let Some(h) = sha256 {
        args.extend(["--dataset-sha256", h]);
    }
    args.extend_from_slice(extra);
    eval(server, &args, out)
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).expect("eval.json"))
        .expect("JSON")
}

#[test]
fn eval_downloads_pinned_files_once_and_refuses_any_other() {
    let _serial = timing_lock();
    let base = out_dir("datasets");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("base");
    let cache = base.join("cache");
    let cache_s = cache.to_str().unwrap_or_default().to_string();
    let files = Files::start();
    let mut cfg = exact_sim();
    cfg.answer_accuracy = Some(1.0);
    let sim = Sim::start(cfg);

    // GSM8K: downloaded once, checked, cached by its sha256; every reference answer read.
    let gsm = gsm8k_file();
    let gsm_sha = sha(&gsm);
    let gsm_url = files.put("/openai/test.jsonl", gsm);
    let gsm_fetch = |out: &str| {
        fetch(
            &sim.url,
            "gsm8k",
            &gsm_url,
            Some(&gsm_sha),
            &cache_s,
            &[],
            &base.join(out),
        )
    };
    let o = gsm_fetch("gsm-1");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(files.hits.load(Ordering::SeqCst), 1);
    let cached = cache
        .join("datasets")
        .join(&gsm_sha)
        .join("gsm8k-test.jsonl");
    assert!(cached.is_file(), "cached at {}", cached.display());
    let s = summary(&base.join("gsm-1"));
    assert_eq!(s["accuracy"]["n"], 6);
    assert_eq!(
        s["accuracy"]["correct"], 6,
        "every `#### 1,00N` read as 100N: {s}"
    );
    assert_eq!(s["dataset"]["url"], gsm_url.as_str());
    assert_eq!(s["dataset"]["sha256"], gsm_sha.as_str());
    assert_eq!(s["dataset"]["items_in_set"], 6);

    // Again: read from the cache, no request.
    let o = gsm_fetch("gsm-2");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        files.hits.load(Ordering::SeqCst),
        1,
        "served from the cache"
    );

    // A mirror that does not serve the pinned file: a hard error, one line, nothing cached,
    // and found before any request to the model server (here there is none to answer).
    let o = fetch(
        "http://127.0.0.1:9",
        "gsm8k",
        &gsm_url,
        None,
        &cache_s,
        &[],
        &base.join("gsm-3"),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not the pinned"), "{err}");
    assert!(err.contains(&gsm_sha), "names what it got: {err}");
    assert_eq!(
        err.trim().lines().count(),
        2,
        "downloading line + one error line: {err}"
    );
    let pinned = "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14";
    assert!(!cache.join("datasets").join(pinned).exists());
    assert!(!base.join("gsm-3").join("eval.json").exists());

    // A cached file that no longer verifies is fetched again.
    std::fs::write(&cached, b"tampered").expect("tamper");
    let o = gsm_fetch("gsm-4");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("no longer matches"), "{}", text(&o));
    assert_eq!(files.hits.load(Ordering::SeqCst), 3);

    // GPQA's CSV: quoted commas and newlines, choices shown in the record id's order, the
    // subject from the domain column.
    let gpqa = gpqa_file();
    let gpqa_sha = sha(&gpqa);
    // Through a "mirror" whose address holds a token: it never reaches the terminal or results.
    let gpqa_url = files.put("/simple-evals/gpqa_diamond.csv", gpqa).replacen(
        "http://",
        "http://reader:s3cr3t@",
        1,
    ) + "?sig=t0ken";
    let out = base.join("gpqa");
    let o = fetch(
        &sim.url,
        "gpqa-diamond",
        &gpqa_url,
        Some(&gpqa_sha),
        &cache_s,
        &[],
        &out,
    );
    assert!(o.status.success(), "{}", text(&o));
    for leak in ["s3cr3t", "t0ken"] {
        assert!(!text(&o).contains(leak), "{}", text(&o));
        for f in ["eval.json", "eval.md", "eval.html", "items.jsonl"] {
            let body = std::fs::read_to_string(out.join(f)).unwrap_or_default();
            assert!(!body.contains(leak), "{leak} in {f}");
        }
    }
    let s = summary(&out);
    assert_eq!(s["accuracy"]["n"], 5);
    assert_eq!(
        s["accuracy"]["correct"], 5,
        "the shuffled letters are the expected ones: {s}"
    );
    assert_eq!(s["by_subject"]["Physics"]["n"], 3);
    let items = std::fs::read_to_string(out.join("items.jsonl")).expect("items");
    assert!(items.contains("\"rec3x\""), "record ids are the item ids");
    assert!(
        !items.contains("right 3"),
        "no question or choice text is written out"
    );

    // MMLU-Pro's parquet: list columns, question ids, categories; --limit spreads.
    let pq = mmlu_pro_file(&base.join("mmlu.parquet"), 'A');
    let pq_sha = sha(&pq);
    let pq_url = files.put("/tiger/test.parquet", pq);
    let out = base.join("mmlu");
    let o = fetch(
        &sim.url,
        "mmlu-pro",
        &pq_url,
        Some(&pq_sha),
        &cache_s,
        &["--limit", "3"],
        &out,
    );
    assert!(o.status.success(), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(s["dataset"]["items_in_set"], 9);
    assert_eq!(s["accuracy"]["n"], 3);
    assert_eq!(s["accuracy"]["correct"], 3, "{s}");
    let items = std::fs::read_to_string(out.join("items.jsonl")).expect("items");
    for id in ["mmlu-pro-70", "mmlu-pro-73", "mmlu-pro-76"] {
        assert!(items.contains(id), "{id} in {items}");
    }

    // --limit 0 scores nothing: refused with one line, not a crash.
    let o = fetch(
        &sim.url,
        "gsm8k",
        &gsm_url,
        Some(&gsm_sha),
        &cache_s,
        &["--limit", "0"],
        &base.join("none"),
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--limit must be at least 1"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("panicked"), "{}", text(&o));

    // A parquet row whose answer is not one of its options is a broken file, refused.
    let bad = mmlu_pro_file(&base.join("bad.parquet"), 'E');
    let bad_sha = sha(&bad);
    let bad_url = files.put("/tiger/bad.parquet", bad);
    let o = fetch(
        &sim.url,
        "mmlu-pro",
        &bad_url,
        Some(&bad_sha),
        &cache_s,
        &[],
        &base.join("bad"),
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("is not one of its 4 options"),
        "{}",
        text(&o)
    );

    // A local copy under the official name is checked against the pin too.
    let local = base.join("local");
    std::fs::create_dir_all(&local).expect("local");
    std::fs::write(local.join("gpqa_diamond.csv"), gpqa_file()).expect("copy");
    let o = eval(
        &sim.url,
        &[
            "--profile",
            "gpqa-diamond",
            "--dataset-dir",
            local.to_str().unwrap_or_default(),
        ],
        &base.join("local-out"),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("not the pinned"), "{}", text(&o));
}
