//! Sweeps in the store: a sweep's runs and its file kept as one group whichever comes first,
//! the file checked and redacted like a run, a later upload replacing the earlier, and the
//! ranking of a model's configurations (known answers).

use super::{databases, files_of, seed_run};
use crate::{RunSummary, UploadError, rank_configurations};
use serde_json::{Value, json};

const KEY: &str = "20261206T195146Z-0badcafe";

/// The seed run as combination `name` of sweep `KEY`, told apart by its start time (so each
/// is its own run).
fn member_run(name: &str, gpus: u32, started: &str) -> Value {
    let mut run = seed_run();
    run["sweep"] = json!({"id": KEY, "combination": name, "params": {"seqs": name}});
    run["hardware"]["gpu_count"] = gpus.into();
    run["started_at"] = started.into();
    run
}

/// A sweep file of three combinations (the last failed to start), its server command holding
/// a key.
fn sweep_file(id: &str) -> Value {
    let combo = |name: &str, state: &str| {
        json!({"name": name, "params": {"seqs": name}, "state": state,
               "command": format!("vllm serve m --max-num-seqs {name}")})
    };
    json!({
        "schema_version": 1,
        "id": id,
        "spec": {"serve": "vllm serve m --api-key sk-live-secret --max-num-seqs {seqs}",
                 "url": "http://{host}:{port}", "grid": [{"name": "seqs", "values": ["64", "128", "256"]}],
                 "run_args": ["--contexts", "1K"], "start_timeout_s": 600.0, "stop_grace_s": 15.0},
        "combinations": [combo("64", "measured"), combo("128", "measured"), combo("256", "failed_to_start")],
        "started_at": "2026-12-06T19:51:46.500Z",
        "finished_at": null
    })
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

#[test]
fn a_sweeps_runs_and_its_file_are_one_group_whichever_comes_first() {
    for db in databases("sweep_group") {
        let (mut s, t) = db.store();
        let a = s
            .upload(
                files_of(&member_run("64", 1, "2026-12-06T19:52:00Z")),
                Some(&t),
                false,
            )
            .expect("run 64");
        s.upload(files_of(&seed_run()), Some(&t), false)
            .expect("a run of no sweep");
        let up = s
            .upload_sweep(&bytes(&sweep_file(KEY)), Some(&t))
            .expect("sweep");
        assert!(!up.replaced);
        let b = s
            .upload(
                files_of(&member_run("128", 2, "2026-12-06T19:58:00Z")),
                Some(&t),
                false,
            )
            .expect("run 128");
        let got = s.sweep(KEY).expect("stored sweep");
        let ids: Vec<i64> = got.runs.iter().map(|r| r.id).collect();
        assert_eq!(
            ids,
            [a, b],
            "the two measured combinations, in the sweep's order"
        );
        assert_eq!(got.runs[0].combination.as_deref(), Some("64"));
        assert_eq!(got.file.combinations.len(), 3);
        let listed = s.sweeps().expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].combination_count, listed[0].run_count), (3, 2));
        // The sweep goes on: its file again replaces the first upload, keeping its id.
        let again = s
            .upload_sweep(&bytes(&sweep_file(KEY)), Some(&t))
            .expect("again");
        assert!(again.replaced);
        assert_eq!(again.id, up.id);
        // Combination 64 measured again: the newest upload is the group's.
        let a2 = s
            .upload(
                files_of(&member_run("64", 1, "2026-12-06T21:00:00Z")),
                Some(&t),
                false,
            )
            .expect("run 64 again");
        let ids: Vec<i64> = s
            .sweep(KEY)
            .expect("sweep")
            .runs
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, [a2, b]);
        assert!(matches!(
            s.sweep("nope"),
            Err(crate::StoreError::NoSuchSweep(_))
        ));
    }
}

#[test]
fn a_sweep_file_is_checked_and_redacted_before_it_is_stored() {
    for db in databases("sweep_checks") {
        let (mut s, t) = db.store();
        let refused = |s: &mut crate::Store, v: &[u8], token: Option<&str>| {
            s.upload_sweep(v, token).expect_err("refused").to_string()
        };
        let e = refused(&mut s, &bytes(&sweep_file(KEY)), Some("llmib_wrong"));
        assert!(e.contains("token"), "{e}");
        let e = refused(&mut s, b"{not json", Some(&t));
        assert!(e.contains("sweep.json does not match"), "{e}");
        let e = refused(&mut s, &bytes(&sweep_file("")), Some(&t));
        assert!(e.contains("no sweep id") && e.contains("--resume"), "{e}");
        let mut future = sweep_file(KEY);
        future["schema_version"] = 9.into();
        let e = refused(&mut s, &bytes(&future), Some(&t));
        assert!(e.contains("newer than this hub"), "{e}");
        assert!(
            s.sweeps().expect("list").is_empty(),
            "a refusal stores nothing"
        );
        s.upload_sweep(&bytes(&sweep_file(KEY)), Some(&t))
            .expect("stored");
        let stored = s.sweep(KEY).expect("sweep");
        let serve = stored.file.spec.serve.clone().unwrap_or_default();
        assert!(
            !serve.contains("sk-live-secret") && serve.contains("<redacted>"),
            "{serve}"
        );
        let small = crate::Settings {
            max_upload_bytes: 10,
            ..crate::Settings::default()
        };
        let (mut tiny, t2) = db.store_with(small);
        let e = tiny
            .upload_sweep(&bytes(&sweep_file(KEY)), Some(&t2))
            .expect_err("too big");
        assert!(matches!(e, UploadError::TooLarge { .. }), "{e}");
    }
}

fn summary(id: i64, gpus: Option<u32>, best: Option<f64>) -> RunSummary {
    RunSummary {
        id,
        run_key: format!("k{id}"),
        uploaded_at: String::new(),
        model: "m".into(),
        engine: None,
        engine_version: None,
        quantization: None,
        gpu_name: None,
        gpu_count: gpus,
        started_at: None,
        tool_version: String::new(),
        standard: None,
        state: "completed".into(),
        cell_count: 0,
        best_decode_tok_per_s: best,
        best_prefill_tok_per_s: None,
        sweep_key: Some(KEY.into()),
        combination: Some(format!("c{id}")),
    }
}

#[test]
fn configurations_rank_by_decode_tok_per_s_per_gpu() {
    // 100 tok/s on 1 GPU beats 150 on 2 (75 a GPU); a run of unknown GPUs is not ranked
    // against them, nor one without a Valid decode cell.
    let ranked = rank_configurations(vec![
        summary(1, Some(2), Some(150.0)),
        summary(2, None, Some(900.0)),
        summary(3, Some(1), Some(100.0)),
        summary(4, Some(1), None),
    ]);
    let order: Vec<(i64, Option<f64>)> = ranked
        .iter()
        .map(|c| (c.run.id, c.tok_per_s_per_gpu))
        .collect();
    assert_eq!(
        order,
        [(3, Some(100.0)), (1, Some(75.0)), (2, None), (4, None)]
    );
    assert!(ranked[0].per_gpu && !ranked[2].per_gpu);
    // No GPU count anywhere: per server.
    let ranked = rank_configurations(vec![
        summary(1, None, Some(10.0)),
        summary(2, None, Some(20.0)),
    ]);
    let order: Vec<i64> = ranked.iter().map(|c| c.run.id).collect();
    assert_eq!(order, [2, 1]);
    assert!(!ranked[0].per_gpu && ranked[0].tok_per_s_per_gpu == Some(20.0));
}

#[test]
fn a_models_configurations_are_its_runs_that_sweeps_measured() {
    for db in databases("sweep_rank") {
        let (mut s, t) = db.store();
        let model = seed_run()["model"]["served_model"]
            .as_str()
            .expect("model")
            .to_string();
        let a = s
            .upload(
                files_of(&member_run("64", 1, "2026-12-06T19:52:00Z")),
                Some(&t),
                false,
            )
            .expect("64");
        let b = s
            .upload(
                files_of(&member_run("128", 4, "2026-12-06T19:58:00Z")),
                Some(&t),
                false,
            )
            .expect("128");
        s.upload(files_of(&seed_run()), Some(&t), false)
            .expect("no sweep");
        let ranked = s.configurations_of(&model).expect("ranked");
        let ids: Vec<i64> = ranked.iter().map(|c| c.run.id).collect();
        // The same cells on 1 GPU and on 4: the 1-GPU one is 4× the figure a GPU.
        assert_eq!(ids, [a, b]);
        let (x, y) = (ranked[0].tok_per_s_per_gpu, ranked[1].tok_per_s_per_gpu);
        assert!(
            (x.expect("a") / y.expect("b") - 4.0).abs() < 1e-9,
            "{x:?} {y:?}"
        );
        assert!(s.configurations_of("other").expect("none").is_empty());
    }
}

/// A hub's database from before sweeps (migration 1 only, one run stored) opens with this
/// binary: migration 2 adds the sweep columns, the old run reads back as one no sweep measured,
/// and a sweep's run can be stored beside it.
#[test]
fn a_database_from_before_sweeps_is_brought_up_to_date_with_its_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        let v1 = crate::Dialect::Sqlite.sql(&crate::MIGRATIONS[0]);
        conn.execute_batch(&v1).expect("migration 1");
        conn.execute_batch(
            "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL,
                applied_at TEXT NOT NULL);
             INSERT INTO schema_migrations VALUES (1, 'runs, files, cells, tokens', '');
             INSERT INTO runs (run_key, uploaded_at, model, tool_version, run_state,
                schema_version, cell_count, search_text)
             VALUES ('k-old', '2026-01-01T00:00:00Z', 'org/old', '0.1.0', 'completed', 1, 0, 'old');",
        )
        .expect("an old run");
    }
    let mut s = crate::Store::open_sqlite(&path, crate::Settings::default()).expect("upgrade");
    assert_eq!(s.schema_version().expect("version"), 2);
    let old = s.run(1).expect("the old run");
    assert_eq!(
        (old.summary.sweep_key, old.summary.combination),
        (None, None)
    );
    let t = s.create_token("t").expect("token").secret;
    let id = s
        .upload(
            files_of(&member_run("64", 1, "2026-12-06T19:52:00Z")),
            Some(&t),
            false,
        )
        .expect("a sweep's run");
    let runs = s.sweep_runs(KEY).expect("its sweep");
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
}
