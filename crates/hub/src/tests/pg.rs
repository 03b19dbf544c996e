//! PostgreSQL only: two hubs migrating one database at once, the list queries' plans (indexes,
//! not a scan of `runs`), and a connection failure's message (one line, no password).

use super::queries::filled;
use super::{postgres_only, scalar};
use crate::{Dialect, ListFilter, Page, Settings, SortKey, Store};

#[test]
fn two_hubs_opening_one_fresh_database_apply_each_step_once() {
    let Some(db) = postgres_only("concurrent") else {
        return;
    };
    let url = db.target();
    let opened: Vec<Result<Store, crate::StoreError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| Store::open(&url, Settings::default())))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    for s in &opened {
        let s = s.as_ref().expect("every hub opens");
        assert_eq!(
            s.schema_version().expect("version"),
            crate::db::latest_version()
        );
    }
    let s = opened[0].as_ref().expect("open");
    let applied = scalar(s, "SELECT COUNT(*) FROM schema_migrations");
    assert_eq!(
        applied,
        i64::try_from(crate::MIGRATIONS.len()).expect("len")
    );
}

/// PostgreSQL's plan of the list query, one line per step.
fn plan_of(s: &Store, f: &ListFilter, page: &Page) -> String {
    let (sql, params) = crate::query::list_sql(f, page, Dialect::Postgres);
    s.db()
        .query(&format!("EXPLAIN {sql}"), &params)
        .expect("explain")
        .iter()
        .map(|r| r.text(0).expect("plan line"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// PostgreSQL's plan of the list's count.
fn count_plan_of(s: &Store, f: &ListFilter) -> String {
    let (where_sql, params) = crate::query::where_clause(f, Dialect::Postgres);
    s.db()
        .query(
            &format!("EXPLAIN SELECT COUNT(*) FROM runs{where_sql}"),
            &params,
        )
        .expect("explain")
        .iter()
        .map(|r| r.text(0).expect("plan line"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Each filter of the list and the index it must use.
fn postgres_cases() -> Vec<(ListFilter, &'static str)> {
    let text = |v: &str| Some(v.to_owned());
    vec![
        (
            ListFilter {
                model: text("org/model-1"),
                ..Default::default()
            },
            "runs_model",
        ),
        (
            ListFilter {
                engine: text("vllm"),
                ..Default::default()
            },
            "runs_engine",
        ),
        (
            ListFilter {
                gpu_name: text("H100"),
                ..Default::default()
            },
            "runs_gpu",
        ),
        (
            ListFilter {
                gpu_count: Some(2),
                ..Default::default()
            },
            "runs_gpu_count",
        ),
        (
            ListFilter {
                tool_version: text("0.6.2"),
                ..Default::default()
            },
            "runs_tool",
        ),
        (
            ListFilter {
                standard: text("v1"),
                ..Default::default()
            },
            "runs_standard",
        ),
        (
            ListFilter {
                quantization: text("FP8"),
                ..Default::default()
            },
            "runs_quantization",
        ),
        (
            ListFilter {
                started_from: text("2026-03-01"),
                ..Default::default()
            },
            "runs_started",
        ),
        (
            ListFilter {
                text: text("model-7 H2"),
                ..Default::default()
            },
            "runs_search",
        ),
        (ListFilter::default(), "runs_uploaded"),
    ]
}

#[test]
fn the_list_queries_read_indexes_on_postgres() {
    let Some(db) = postgres_only("plan") else {
        return;
    };
    let s = filled(&db, 30);
    // With 30 rows the planner rightly prefers reading the table; switched off, a query with
    // no usable index still scans it, which is what this test looks for.
    s.db()
        .batch("ANALYZE; SET enable_seqscan = off")
        .expect("settings");
    let cases = postgres_cases();
    for (f, index) in cases {
        let plan = plan_of(&s, &f, &Page::default());
        assert!(
            !plan.contains("Seq Scan on runs"),
            "{f:?} scans runs: {plan}"
        );
        // The page of a free-text search may walk the default sort's index and filter (few
        // rows); its count, which reads every match, must use the text index.
        if f.text.is_none() {
            assert!(plan.contains(index), "{f:?} does not use {index}: {plan}");
        }
        if f != ListFilter::default() {
            let count = count_plan_of(&s, &f);
            assert!(
                count.contains(index),
                "{f:?}'s count does not use {index}: {count}"
            );
        }
    }
    let sorted = Page {
        sort: SortKey::BestDecode,
        ..Page::default()
    };
    let plan = plan_of(&s, &ListFilter::default(), &sorted);
    assert!(plan.contains("runs_best_decode"), "{plan}");
}

#[test]
fn a_connection_failure_is_one_line_without_the_password() {
    // Port 1 on the loopback: nothing listens, so the connection is refused at once.
    for url in [
        "postgres://hub:s3cr3t-pw@127.0.0.1:1/hub",
        "postgresql://hub:s3cr3t-pw@127.0.0.1:1/hub?connect_timeout=2",
        "postgres://hub:s3cr3t-pw@[::1/hub",
    ] {
        let e = Store::open(url, Settings::default()).expect_err("no server");
        let msg = e.to_string();
        assert!(matches!(e, crate::StoreError::Connect { .. }), "{msg}");
        assert!(!msg.contains("s3cr3t-pw"), "the password leaks: {msg}");
        assert!(!format!("{e:?}").contains("s3cr3t-pw"), "{e:?}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.contains("cannot open the hub's PostgreSQL database"),
            "{msg}"
        );
        assert!(msg.contains("check that the server is running"), "{msg}");
    }
}
