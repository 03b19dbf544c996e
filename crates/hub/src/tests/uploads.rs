//! Uploads: the seed run stored whole and hashed, every refusal storing nothing, replace,
//! redaction on upload, hostile text kept verbatim.

use super::{counts, databases, empty, files_of, seed_cells, seed_run};
use crate::Dialect;
use crate::{Settings, UploadError, UploadFiles, hex_sha256};

#[test]
fn the_seed_run_is_stored_whole_with_hashes_and_cells() {
    for db in databases("the_seed_run_is_stored_w") {
        let (mut s, token) = db.store();
        let dir = std::path::Path::new(super::SEED);
        let id = s.upload_dir(dir, Some(&token), false).expect("upload");
        let run = s.run(id).expect("run");
        let names: Vec<&str> = run.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["cells.jsonl", "run.json"]);
        for f in &run.files {
            assert_eq!(f.sha256, hex_sha256(&f.content));
            let on_disk = std::fs::read(dir.join(&f.name)).expect("read");
            assert_eq!(f.content, on_disk, "{} stored byte for byte", f.name);
        }
        assert_eq!(run.summary.model, "zai-org/GLM-5.3-Flash");
        assert_eq!(run.summary.engine.as_deref(), Some("sglang"));
        assert_eq!(run.summary.gpu_count, Some(8));
        assert_eq!(
            run.summary.run_key,
            hex_sha256(&std::fs::read(dir.join("run.json")).expect("read"))
        );
        let (cells, _) = llmib_core::parse_cells(&seed_cells());
        assert_eq!(s.cells_of(&[id]).expect("cells").len(), cells.len());
        assert!(run.summary.best_decode_tok_per_s.is_some());
    }
}

/// Asserts that `upload` is refused as `expect` says and stores nothing.
fn refused(
    s: &mut crate::Store,
    files: UploadFiles,
    token: Option<&str>,
    expect: fn(&UploadError) -> bool,
) -> String {
    let before = counts(s);
    let e = s.upload(files, token, false).expect_err("refused");
    assert!(expect(&e), "unexpected error: {e:?}");
    assert_eq!(counts(s), before, "a refusal stores nothing ({e})");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    msg
}

#[test]
fn every_refusal_stores_nothing() {
    for db in databases("every_refusal_stores_not") {
        let (mut s, token) = db.store();
        let ok = files_of(&seed_run());
        s.upload(ok.clone(), Some(&token), false)
            .expect("first upload");
        refused(&mut s, ok.clone(), None, |e| {
            matches!(e, UploadError::Token(_))
        });
        refused(&mut s, ok.clone(), Some("llmib_nope"), |e| {
            matches!(e, UploadError::Token(_))
        });
        let mut other = seed_run();
        other["model"]["served_model"] = "other".into();
        let msg = refused(&mut s, ok.clone(), Some(&token), |e| {
            matches!(e, UploadError::Duplicate(1))
        });
        assert!(msg.contains("replace"), "{msg}");
        let mut no_cells = UploadFiles::new();
        no_cells.add("run.json", serde_json::to_vec(&other).expect("json"));
        refused(&mut s, no_cells, Some(&token), |e| {
            matches!(e, UploadError::Missing("cells.jsonl"))
        });
        let mut stray = files_of(&other);
        stray.add("notes.txt", b"hello".to_vec());
        refused(&mut s, stray, Some(&token), |e| {
            matches!(e, UploadError::UnknownFile(_))
        });
        let mut future = other.clone();
        future["schema_version"] = 99.into();
        future["renamed"] = Value::Null;
        let msg = refused(&mut s, files_of(&future), Some(&token), |e| {
            matches!(e, UploadError::FutureSchema { found: 99, .. })
        });
        assert!(msg.contains("upgrade the hub"), "{msg}");
        let mut broken = other.clone();
        broken["engine"] = "not an object".into();
        refused(&mut s, files_of(&broken), Some(&token), |e| {
            matches!(
                e,
                UploadError::Malformed {
                    file: "run.json",
                    ..
                }
            )
        });
        let mut bad_cells = UploadFiles::new();
        bad_cells.add("run.json", serde_json::to_vec(&other).expect("json"));
        bad_cells.add("cells.jsonl", b"{\"not\": \"a cell\"}\n{}\n".to_vec());
        refused(&mut s, bad_cells, Some(&token), |e| {
            matches!(
                e,
                UploadError::Malformed {
                    file: "cells.jsonl",
                    ..
                }
            )
        });
        let id = s.list_tokens().expect("tokens")[0].id;
        s.revoke_token(id).expect("revoke");
        let msg = refused(&mut s, files_of(&other), Some(&token), |e| {
            matches!(e, UploadError::Token(_))
        });
        assert!(msg.contains("revoked"), "{msg}");
    }
}

use serde_json::Value;

#[test]
fn an_upload_over_the_limit_is_refused_naming_the_limit() {
    for db in databases("an_upload_over_the_limit") {
        let (mut s, token) = db.store_with(Settings {
            max_upload_bytes: 1000,
            ..Settings::default()
        });
        let msg = refused(&mut s, files_of(&seed_run()), Some(&token), |e| {
            matches!(e, UploadError::TooLarge { limit: 1000, .. })
        });
        assert!(msg.contains("limit of 1000 bytes"), "{msg}");
        let before = counts(&s);
        let dir = std::path::Path::new(super::SEED);
        let e = s
            .upload_dir(dir, Some(&token), false)
            .expect_err("too large");
        assert!(
            matches!(e, UploadError::TooLarge { limit: 1000, .. }),
            "{e}"
        );
        assert_eq!(counts(&s), before);
    }
}

#[test]
fn not_a_results_directory_is_refused() {
    for db in databases("not_a_results_directory_") {
        let (mut s, token) = db.store();
        let dir = tempfile::tempdir().expect("tempdir");
        let e = s
            .upload_dir(dir.path(), Some(&token), false)
            .expect_err("empty dir");
        assert!(matches!(e, UploadError::Missing("run.json")), "{e}");
        assert!(e.to_string().contains("not a results directory"));
        assert_eq!(counts(&s), empty(&s));
    }
}

/// A path that is no directory is named as such; a skipped file is not read (a file in its
/// place that cannot be read would fail the read otherwise).
#[test]
fn a_directory_is_read_without_the_skipped_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = UploadFiles::from_dir(&dir.path().join("nope"), u64::MAX).expect_err("no dir");
    assert!(matches!(e, UploadError::NoDirectory(_)), "{e}");
    assert!(e.to_string().contains("no such directory"), "{e}");
    for name in ["run.json", "cells.jsonl"] {
        std::fs::write(dir.path().join(name), b"{}\n").expect("write");
    }
    // A directory where requests.jsonl should be: reading it fails, skipping it does not.
    std::fs::create_dir(dir.path().join("requests.jsonl")).expect("mkdir");
    assert!(UploadFiles::from_dir(dir.path(), u64::MAX).is_err());
    let files = UploadFiles::from_dir_except(dir.path(), u64::MAX, &["requests.jsonl"])
        .expect("read without requests.jsonl");
    let names: Vec<String> = files.into_files().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["run.json", "cells.jsonl"]);
}

#[test]
fn replace_overwrites_the_stored_run_and_keeps_its_id() {
    for db in databases("replace_overwrites_the_s") {
        let (mut s, token) = db.store();
        let run = seed_run();
        let id = s
            .upload(files_of(&run), Some(&token), false)
            .expect("first");
        let before = counts(&s);
        let mut fewer = UploadFiles::new();
        fewer.add("run.json", serde_json::to_vec_pretty(&run).expect("json"));
        let cells = seed_cells();
        let first_line = cells
            .split(|&b| b == b'\n')
            .next()
            .expect("a line")
            .to_vec();
        fewer.add("cells.jsonl", first_line);
        let again = s.upload(fewer, Some(&token), true).expect("replace");
        assert_eq!(again, id);
        assert_eq!(s.cells_of(&[id]).expect("cells").len(), 1);
        let after = counts(&s);
        assert_eq!(
            (after[0], after[1], after.get(3)),
            (before[0], before[1], before.get(3)),
            "the same run, file and free-text rows; fewer cells"
        );
    }
}

#[test]
fn a_hostile_model_id_is_stored_verbatim() {
    for db in databases("a_hostile_model_id_is_st") {
        let (mut s, token) = db.store();
        let mut run = seed_run();
        let hostile = "<script>alert('x')</script>\"; DROP TABLE runs; --";
        run["model"]["served_model"] = hostile.into();
        let id = s
            .upload(files_of(&run), Some(&token), false)
            .expect("upload");
        assert_eq!(s.run(id).expect("run").summary.model, hostile);
        let filter = crate::ListFilter {
            model: Some(hostile.into()),
            ..Default::default()
        };
        assert_eq!(
            s.list(&filter, &crate::Page::default())
                .expect("list")
                .total,
            1
        );
        assert!(!s.headlines(hostile).expect("headlines").is_empty());
    }
}

#[test]
fn secrets_a_run_kept_are_redacted_on_upload() {
    for db in databases("secrets_a_run_kept_are_r") {
        let (mut s, token) = db.store();
        let mut run = seed_run();
        run["launch_command"] =
            "python -m sglang.launch_server --api-key sk-live-123 --port 30000".into();
        run["url"] = "http://user:hunter2@gpu-box:30000".into();
        run["notes"] = serde_json::json!(["server said: bad password hunter2"]);
        run["engine"]["extra"] = serde_json::json!({"api_key": "sk-extra-456"});
        let mut files = UploadFiles::new();
        files.add("run.json", serde_json::to_vec_pretty(&run).expect("json"));
        let cells = String::from_utf8(seed_cells()).expect("utf8");
        let one = cells.lines().next().expect("a row");
        let with_secret = one.replace(
            "\"first_error\":null",
            "\"first_error\":\"401 for key hunter2\"",
        );
        assert_ne!(with_secret, one);
        files.add("cells.jsonl", format!("{with_secret}\n").into_bytes());
        let id = s.upload(files, Some(&token), false).expect("upload");
        let stored = s.run(id).expect("run");
        for f in &stored.files {
            let text = String::from_utf8(f.content.clone()).expect("utf8");
            for secret in ["sk-live-123", "hunter2", "sk-extra-456"] {
                assert!(!text.contains(secret), "{} keeps {secret}: {text}", f.name);
            }
            assert_eq!(
                f.sha256,
                hex_sha256(&f.content),
                "the hash is of what is stored"
            );
        }
        let info: llmib_core::RunInfo =
            serde_json::from_slice(&stored.files[1].content).expect("stored run.json parses");
        assert_eq!(info.url, "http://gpu-box:30000");
        assert!(
            info.launch_command
                .expect("kept")
                .contains("--api-key <redacted>")
        );
    }
}

#[test]
fn a_failure_mid_upload_leaves_no_half_run() {
    for db in databases("a_failure_mid_upload_lea") {
        let (mut s, token) = db.store();
        // The run's row and files are written before the cells: fail there.
        let trigger = match s.dialect() {
            Dialect::Sqlite => {
                "CREATE TRIGGER fail_cells BEFORE INSERT ON cells BEGIN SELECT RAISE(ABORT, 'disk gone'); END"
            }
            Dialect::Postgres => {
                "CREATE FUNCTION fail_cells() RETURNS trigger LANGUAGE plpgsql AS
                    $$ BEGIN RAISE EXCEPTION 'disk gone'; END $$;
                 CREATE TRIGGER fail_cells BEFORE INSERT ON cells
                    FOR EACH ROW EXECUTE FUNCTION fail_cells();"
            }
        };
        s.db().batch(trigger).expect("trigger");
        let e = s
            .upload(files_of(&seed_run()), Some(&token), false)
            .expect_err("fails");
        assert!(matches!(e, UploadError::Store(_)), "{e}");
        assert!(e.to_string().contains("nothing was stored"), "{e}");
        assert_eq!(counts(&s), empty(&s), "rolled back whole");
        assert!(
            e.to_string().contains("disk gone"),
            "the cause is named: {e}"
        );
    }
}
