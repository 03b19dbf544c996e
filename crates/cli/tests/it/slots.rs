//! How much of the machine each end-to-end test holds while it runs, so that the suite can run
//! tests side by side without one test's load moving another's figures (issue 47).
//!
//! Most end-to-end tests sleep through fixed-length cells: measured on CI's 2-core machine, the
//! 114 timed tests against the simulator used 19 % of one core on average (138 s of CPU in
//! 712 s), so several of them fit on two cores at once. A few keep both cores busy (a real
//! llama.cpp or vLLM server, Chromium, the real peer tools, a million-token prompt); beside one of
//! them a timed test would measure its load. So a test takes one of two kinds of slot:
//!
//! - [`timing_lock`]: a *timed* test. At most `LLMIB_TEST_TIMED_AT_ONCE` of them run at once
//!   (default 1, as before this module; `scripts/test-all.sh` sets 6 with seven test threads, after
//!   running the heavy tests on their own).
//! - [`exclusive`]: a *heavy* test: no timed test runs beside it, and it waits for those running
//!   to end. Tests that start a real engine, a browser or a peer tool check that they hold one
//!   ([`assert_exclusive`]), so a new such test cannot forget it.
//!
//! Tests that take no slot (refusals, parsing, short untimed checks) run beside anything.
//! A waiting heavy test goes first: timed tests asking after it wait behind it.
//!
//! With `LLMIB_TEST_TIMES=FILE` each slot appends `held_s  waited_s  kind  test` to FILE when it
//! is released; `scripts/test-all.sh` prints the slowest (a harness running tests side by side
//! cannot time them by its output lines).

use std::cell::Cell;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// What a slot is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A test whose figures depend on timing.
    Timed,
    /// A test that keeps the machine's cores busy.
    Heavy,
}

/// The share of the machine a running test holds; released when dropped.
#[must_use = "the slot is released when dropped: bind it for the test's whole length"]
pub struct Slot {
    kind: Kind,
    pool: &'static Pool,
    waited_s: f64,
    since: Instant,
}

/// The slots of one test process: how many timed tests hold one, whether a heavy test holds
/// one, and how many heavy tests wait.
pub struct Pool {
    state: Mutex<State>,
    freed: Condvar,
    timed_at_once: usize,
}

struct State {
    timed: usize,
    heavy: bool,
    heavy_waiting: usize,
}

thread_local! {
    /// The slot this thread holds: libtest runs each test on a thread of its own.
    static HELD: Cell<Option<Kind>> = const { Cell::new(None) };
}

impl Pool {
    /// A pool that lets `timed_at_once` timed tests run together (at least one).
    pub const fn new(timed_at_once: usize) -> Pool {
        Pool {
            state: Mutex::new(State {
                timed: 0,
                heavy: false,
                heavy_waiting: 0,
            }),
            freed: Condvar::new(),
            timed_at_once: if timed_at_once == 0 { 1 } else { timed_at_once },
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock leaves the counts right (they change
        // only after the wait): the poison carries no broken state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot of `kind` and holds it until the returned `Slot` drops.
    ///
    /// Panics if this thread already holds one: a test that waits for a second slot while
    /// holding the first can wait for itself (a heavy slot waits for every timed one to end).
    pub fn take(&'static self, kind: Kind) -> Slot {
        if let Some(held) = HELD.with(Cell::get) {
            panic!(
                "this test already holds a {held:?} slot and asked for a {kind:?} one: take one \
                 slot, once, for the whole test (a heavy test calls `exclusive()` instead of \
                 `timing_lock()`)"
            );
        }
        let asked = Instant::now();
        let mut s = self.lock();
        match kind {
            Kind::Heavy => {
                s.heavy_waiting += 1;
                while s.heavy || s.timed > 0 {
                    s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                s.heavy_waiting -= 1;
                s.heavy = true;
            }
            Kind::Timed => {
                while s.heavy || s.heavy_waiting > 0 || s.timed >= self.timed_at_once {
                    s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                s.timed += 1;
            }
        }
        drop(s);
        HELD.with(|h| h.set(Some(kind)));
        Slot {
            kind,
            pool: self,
            waited_s: asked.elapsed().as_secs_f64(),
            since: Instant::now(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut s = self.pool.lock();
            match self.kind {
                Kind::Heavy => s.heavy = false,
                Kind::Timed => s.timed = s.timed.saturating_sub(1),
            }
        }
        self.pool.freed.notify_all();
        HELD.with(|h| h.set(None));
        log_time(self);
    }
}

/// Appends the slot's times to `LLMIB_TEST_TIMES`, when set (best effort: a test never fails
/// for its timing log).
fn log_time(slot: &Slot) {
    let Some(path) = std::env::var_os("LLMIB_TEST_TIMES") else {
        return;
    };
    let thread = std::thread::current();
    let line = format!(
        "{:.1}\t{:.1}\t{:?}\t{}\n",
        slot.since.elapsed().as_secs_f64(),
        slot.waited_s,
        slot.kind,
        thread.name().unwrap_or("?")
    );
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The test process's pool, sized by `LLMIB_TEST_TIMED_AT_ONCE` (default 1).
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::env::var("LLMIB_TEST_TIMED_AT_ONCE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1);
        Pool::new(n)
    })
}

/// A timed test's slot: at most `LLMIB_TEST_TIMED_AT_ONCE` timed tests run at once, never beside
/// a heavy one.
pub fn timing_lock() -> Slot {
    pool().take(Kind::Timed)
}

/// The tests that take a heavy slot, by libtest's name. `scripts/test-all.sh` runs them first,
/// on their own, then every other test with `--skip` for each: with no heavy test able to arrive
/// there, that second step runs six timed tests at once (162 s, against 212 s with four; the
/// split alone, at four, gained nothing measurable: 632 s against 637 s interleaved).
/// [`exclusive`] refuses a test not listed here, so a new heavy test cannot end up among the
/// timed ones.
pub const HEAVY_TESTS: &[&str] = &[
    "api::llamacpp_chat_completions_give_exact_prompt_lengths",
    "api::llamacpp_chat_prompts_are_exact_for_fifty_run_seeds",
    "eval::llamacpp_tiny_eval_scores_every_item",
    "hub_browser::a_runs_page_is_the_seed_page_and_the_model_page_escapes_the_id",
    "hub_browser::the_compare_page_sets_two_runs_side_by_side",
    "hub_browser::the_list_filters_to_one_engine_and_shows_a_hostile_model_id_as_text",
    "hub_sweep::running_servers_are_swept_uploaded_as_one_group_and_both_pages_open_in_a_browser",
    "id_prompts::llamacpp_counts_id_prompts_exactly",
    "images::the_images_docs_commands_run",
    "import::a_real_vllm_bench_file_imports_with_its_own_figures",
    "import_peers::a_real_aiperf_run_imports_with_its_own_figures",
    "import_peers::a_real_guidellm_report_imports_with_its_own_figures",
    "llamacpp::llamacpp_matrix_statuses_prompts_and_token_counts",
    "llamacpp::llamacpp_requests_queued_when_the_capacity_is_overridden",
    "llamacpp_meta::llamacpp_run_metadata_and_the_api_key_leaves_no_trace",
    "long_ids::a_megabyte_model_id_is_kept_in_run_json_and_cut_on_the_terminal",
    "report::browser_golden_page_matches_the_seed_and_works",
    "report::browser_load_section_draws_its_charts_and_the_pareto_frontier",
    "report::browser_renders_hostile_strings_as_text",
    "report_pages::browser_compare_page_is_clean",
    "report_pages::browser_eval_page_is_clean",
    "report_sessions::browser_sessions_section_shows_the_matrix_turns_and_charts",
    "run::a_million_token_prompt_is_exact_and_quick",
    "sessions::llamacpp_reports_each_turns_cache_and_a_warm_turn_beats_a_cold_one",
    "shard::four_merged_shards_send_what_one_process_sends",
    "sweep::real_llama_cpp_is_started_measured_and_stopped_at_two_parallel_values",
    "sweep::real_vllm_is_started_measured_and_stopped_at_two_max_num_seqs",
    "vllm_suite::real_vllm_one_server_for_every_check",
];

/// Why the test on `thread` (libtest names a test's thread after it) may not take a heavy
/// slot: `None` where it is listed in `heavy`.
pub fn unlisted_heavy(thread: Option<&str>, heavy: &[&str]) -> Option<String> {
    match thread {
        Some(name) if heavy.contains(&name) => None,
        name => Some(format!(
            "{} takes a heavy slot but is not in HEAVY_TESTS (crates/cli/tests/it/slots.rs): add \
             it there, so that the test command runs it with the heavy tests and not beside \
             timed ones",
            name.unwrap_or("a thread without a test's name")
        )),
    }
}

/// The names in `heavy` that name no test: `module::function` where `source(module)` (the
/// module's file) has no `fn function(`. A stale name would leave its test to the timed phase.
pub fn unknown_heavy(heavy: &[&str], source: impl Fn(&str) -> Option<String>) -> Vec<String> {
    heavy
        .iter()
        .filter(|name| {
            let Some((module, function)) = name.rsplit_once("::") else {
                return true;
            };
            !source(module).is_some_and(|text| text.contains(&format!("fn {function}(")))
        })
        .map(|name| name.to_string())
        .collect()
}

/// A heavy test's slot: no timed test runs beside it. Panics for a test not in [`HEAVY_TESTS`].
pub fn exclusive() -> Slot {
    if let Some(why) = unlisted_heavy(std::thread::current().name(), HEAVY_TESTS) {
        panic!("{why}");
    }
    pool().take(Kind::Heavy)
}

/// A heavy slot, or `None` where this thread already holds one: for a helper (the browser) that
/// a heavy test calls as well as a test without a slot. Under a timed slot it panics as
/// [`Pool::take`] does.
pub fn exclusive_unless_held() -> Option<Slot> {
    match HELD.with(Cell::get) {
        Some(Kind::Heavy) => None,
        _ => Some(exclusive()),
    }
}

/// Panics unless this thread holds a heavy slot: called where a test starts something that
/// keeps the cores busy (`what`), so that a test doing so without `exclusive()` fails at once
/// instead of moving the figures of the timed tests beside it.
pub fn assert_exclusive(what: &str) {
    let held = HELD.with(Cell::get);
    assert!(
        held == Some(Kind::Heavy),
        "{what} keeps the cores busy: the test must hold `exclusive()` (it holds {held:?}); \
         see crates/cli/tests/it/slots.rs"
    );
}

#[cfg(test)]
mod tests {
    //! The rules on a pool of the tests' own (the process's pool serves the suites).
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A thread holding a timed slot of `pool` for `ms`, counting itself in `inside` while it
    /// does and raising `most` to the most seen inside at once.
    fn hold_timed(
        pool: &'static Pool,
        inside: &Arc<AtomicUsize>,
        most: &Arc<AtomicUsize>,
        ms: u64,
    ) -> std::thread::JoinHandle<()> {
        let (inside, most) = (inside.clone(), most.clone());
        std::thread::spawn(move || {
            let _s = pool.take(Kind::Timed);
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
            inside.fetch_sub(1, Ordering::SeqCst);
        })
    }

    /// Waits (at most 10 s) until `ready` holds: the tests order their threads by what the pool
    /// shows, not by sleeps a loaded machine could outlast.
    fn until(ready: impl Fn() -> bool) {
        let start = std::time::Instant::now();
        while !ready() {
            assert!(start.elapsed() < Duration::from_secs(10), "never came");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_heavy_slot_waits_for_the_timed_ones_and_holds_them_off() {
        // Room for three timed slots: the third asks with room left, so only the waiting
        // heavy slot can hold it back.
        static POOL: Pool = Pool::new(3);
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let a = hold_timed(&POOL, &inside, &most, 150);
        let b = hold_timed(&POOL, &inside, &most, 150);
        until(|| inside.load(Ordering::SeqCst) == 2);
        let heavy = std::thread::spawn({
            let inside = inside.clone();
            move || {
                let _s = POOL.take(Kind::Heavy);
                // Both timed slots were taken before: the heavy one starts after both ended.
                assert_eq!(inside.load(Ordering::SeqCst), 0);
                assert_exclusive("the test's heavy part");
                std::thread::sleep(Duration::from_millis(100));
                inside.fetch_add(100, Ordering::SeqCst);
            }
        });
        until(|| {
            let s = POOL.lock();
            s.heavy_waiting == 1 || s.heavy
        });
        // Asked while the heavy test waits: it goes after the heavy one.
        let c = std::thread::spawn({
            let inside = inside.clone();
            move || {
                let _s = POOL.take(Kind::Timed);
                assert_eq!(
                    inside.load(Ordering::SeqCst),
                    100,
                    "ran before the heavy one"
                );
            }
        });
        for t in [a, b, heavy, c] {
            t.join().expect("no rule broken");
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two timed tests ran at once"
        );
    }

    #[test]
    fn no_more_timed_tests_run_at_once_than_allowed() {
        static POOL: Pool = Pool::new(1);
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| hold_timed(&POOL, &inside, &most, 40))
            .collect();
        for t in threads {
            t.join().expect("joined");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_heavy_slot_is_refused_to_a_test_not_listed_and_every_listed_name_is_a_test() {
        let listed = ["sweep::real_vllm_is_started", "run::a_million"];
        assert_eq!(unlisted_heavy(Some("run::a_million"), &listed), None);
        let why = unlisted_heavy(Some("load::a_planted_heavy_test"), &listed).expect("refused");
        assert!(
            why.starts_with("load::a_planted_heavy_test takes a heavy slot"),
            "{why}"
        );
        assert!(
            unlisted_heavy(None, &listed).is_some(),
            "a thread without a name"
        );

        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
        let source = |module: &str| std::fs::read_to_string(dir.join(format!("{module}.rs"))).ok();
        assert_eq!(unknown_heavy(HEAVY_TESTS, source), Vec::<String>::new());
        // scripts/test-all.sh reads the list from this file's text (the lines from `pub const
        // HEAVY_TESTS` to `];`, each quoted name): the same reading must give the same names.
        let text = source("slots").expect("slots.rs");
        let block: String = text
            .lines()
            .skip_while(|l| !l.starts_with("pub const HEAVY_TESTS"))
            .take_while(|l| !l.starts_with("];"))
            .collect::<Vec<_>>()
            .join("\n");
        let read: Vec<&str> = block.split('"').skip(1).step_by(2).collect();
        assert_eq!(read, HEAVY_TESTS, "the script's reading of HEAVY_TESTS");
        let script_reads = |n: &&str| {
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':')
        };
        assert!(read.iter().all(script_reads), "its grep takes [a-z0-9_:]");
        // Planted: a renamed test, a module that does not exist, a name without a module.
        let planted = [
            "run::a_million_token_prompt_is_exact_and_quick",
            "run::a_test_renamed_since",
            "no_such_module::a_test",
            "a_test",
        ];
        assert_eq!(
            unknown_heavy(&planted, source),
            [
                "run::a_test_renamed_since",
                "no_such_module::a_test",
                "a_test"
            ]
        );
    }

    #[test]
    fn a_second_slot_on_one_thread_and_a_heavy_start_without_one_are_refused() {
        static POOL: Pool = Pool::new(1);
        let nested = std::thread::spawn(|| {
            let _s = POOL.take(Kind::Timed);
            let _t = POOL.take(Kind::Heavy);
        })
        .join();
        let msg = nested.expect_err("a second slot must panic");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("already holds a Timed slot"), "{msg}");
        // The first slot was released as the thread unwound: the pool is free again.
        drop(POOL.take(Kind::Heavy));

        let timed_only = std::thread::spawn(|| {
            let _s = POOL.take(Kind::Timed);
            assert_exclusive("a planted llama-server");
        })
        .join();
        let msg = timed_only.expect_err("a heavy start under a timed slot must panic");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("a planted llama-server keeps the cores busy"),
            "{msg}"
        );
    }
}
