//! Tests of the run configuration: typed parsing, the file/flag merge, unknown keys, and the
//! generated proof that every `run` flag is a config key with the same meaning.

use super::*;
use clap::{CommandFactory, Parser};
use llmib_core::ContextSpec;

/// `run`'s flags alone, as the binary parses them.
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn flags(args: &[&str]) -> Result<RunArgs, clap::Error> {
    Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied())).map(|c| c.run)
}

fn file(text: &str) -> Result<RunArgs> {
    RunArgs::default().merge_text(text, "test.toml")
}

#[test]
fn prefill_contexts_default_to_the_8k_sanity_point() {
    let with = |v: &[&str]| {
        flags(v)
            .expect("flags")
            .settings()
            .expect("settings")
            .prefill_contexts
    };
    assert_eq!(with(&[]), vec![ContextSpec::Tokens(8192)]);
    assert_eq!(with(&["--prefill-contexts", "none"]), vec![]);
    assert_eq!(
        with(&["--prefill-contexts", "2K,4K"]),
        vec![ContextSpec::Tokens(2048), ContextSpec::Tokens(4096)]
    );
}

#[test]
fn flags_override_the_file() {
    let args = flags(&["--duration", "2s"]).expect("flags");
    let text =
        "contexts = [\"8K\", 16384]\nconcurrency = \"4,1\"\nduration = \"10s\"\nmax_output = 128\n";
    let s = args
        .merge_text(text, "bench.toml")
        .expect("merge")
        .settings()
        .expect("settings");
    assert_eq!(
        s.contexts,
        vec![ContextSpec::Tokens(8192), ContextSpec::Tokens(16384)]
    );
    assert_eq!(s.concurrency, vec![1, 4]);
    assert_eq!(s.duration_s, 2.0);
    assert_eq!(s.max_output, 128);
}

#[test]
fn the_file_takes_numbers_or_strings_for_sizes_and_durations() {
    let a = file("max_output = 128\nkv_capacity = \"1M\"\nduration = 2.5\nidle_timeout = \"2m\"")
        .expect("file");
    assert_eq!(a.max_output, Some(128));
    assert_eq!(a.kv_capacity, Some(1 << 20));
    assert_eq!(a.duration, Some(Duration::from_millis(2500)));
    assert_eq!(a.idle_timeout, Some(Duration::from_secs(120)));
}

#[test]
fn bad_values_are_errors_not_panics() {
    assert!(flags(&["--concurrency", "1,x"]).is_err());
    assert!(flags(&["--contexts", "8Q"]).is_err());
    assert!(flags(&["--contexts", ","]).is_err());
    assert!(file("concurrency = \"1,x\"").is_err());
    assert!(file("engine = \"nope\"").is_err());
    let e = file("contexts = \"8Q\"").expect_err("bad size");
    assert!(format!("{e:#}").contains("8Q"), "{e:#}");
}

#[test]
fn an_unknown_key_is_named_with_the_nearest_one() {
    let e = file("max_outptu = 5").expect_err("unknown key");
    let msg = e.to_string();
    assert!(
        msg.contains("`max_outptu`") && msg.contains("`max_output`"),
        "{msg}"
    );
    let e = file("max-output = 5").expect_err("dashes");
    assert!(e.to_string().contains("`max_output`"), "{e}");
    let e = file("zzzzzzzzzz = 1").expect_err("far from anything");
    assert!(!e.to_string().contains("did you mean"), "{e}");
    assert!(file("config = \"x.toml\"").is_err());
}

/// A value clap accepts for `arg`: its last possible value, or the first of a few samples
/// that its parser takes.
fn sample(arg: &clap::Arg) -> Option<String> {
    if let Some(v) = arg.get_possible_values().last() {
        return Some(v.get_name().to_owned());
    }
    let long = format!("--{}", arg.get_long()?);
    [
        "2",
        "8K,16K",
        "30s",
        "http://h:1/v1",
        "html,csv",
        "0.05",
        "poisson",
        "ttft_p99=2s",
        r#"{"top_k":20}"#,
        "mooncake:trace.jsonl",
        "0/2",
        "2026-12-04T22:00:00Z",
        "64x32",
        "x",
    ]
    .into_iter()
    .find(|v| flags(&[&long, v]).is_ok())
    .map(str::to_owned)
}

/// Every `run` flag (from the clap definition itself, so a new flag is covered without a
/// change here) is accepted as a config key and gives the same typed value as the flag.
#[test]
fn every_flag_is_a_key_with_the_same_meaning() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut checked = 0;
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let Some(long) = arg.get_long() else { continue };
        // `--config` names the file itself; `--help` is clap's; a hidden flag is the tool's
        // own (`--sweep-member`, set by `sweep`), not a setting.
        if id == "config" || id == "help" || arg.is_hide_set() {
            continue;
        }
        let (from_flag, values) = if arg.get_action().takes_values() {
            let v = sample(arg).unwrap_or_else(|| panic!("no sample value for --{long}"));
            let parsed = flags(&[&format!("--{long}"), &v]).expect("sample parses");
            // A number may be written as a TOML number or a string; one of them must do.
            let mut values = vec![format!("{v:?}")];
            if v.parse::<u64>().is_ok() {
                values.push(v.clone());
            }
            (parsed, values)
        } else {
            (
                flags(&[&format!("--{long}")]).expect("switch"),
                vec!["true".into()],
            )
        };
        let same = values.iter().any(|value| {
            file(&format!("{id} = {value}\n")).is_ok_and(|from_file| from_file == from_flag)
        });
        assert!(same, "config key `{id}` does not mean what --{long} means");
        checked += 1;
    }
    assert!(checked > 30, "only {checked} flags found");
}

/// docs/config.md lists every key.
#[test]
fn the_docs_list_every_key() {
    let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.md"));
    for key in file_keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "docs/config.md does not list `{key}`"
        );
    }
}

#[test]
fn nearest_is_a_plausible_typo_only() {
    let known: Vec<String> = ["duration", "max_output"].map(String::from).to_vec();
    assert_eq!(nearest("duraton", &known), Some("duration"));
    assert_eq!(nearest("colour", &known), None);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

/// Any config file text, and any values in its keys, give settings or an error: never a
/// panic (issue 12's config-loader property).
mod props {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9.eE+-]{1,24}",
            "\"[ -~]{0,24}\"",
            "\\[[0-9, \"a-zK]{0,24}\\]",
            Just("1e30".to_string()),
            Just("99999999999999999999".to_string()),
            Just("true".to_string()),
        ]
    }

    fn key() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("contexts"),
            Just("concurrency"),
            Just("duration"),
            Just("max_output"),
            Just("kv_capacity"),
            Just("max_time"),
            Just("readiness_timeout"),
            Just("first_token_timeout"),
            Just("idle_timeout"),
            Just("dcp_size"),
            Just("format"),
            Just("no_such_key"),
        ]
    }

    proptest! {
        #[test]
        fn any_config_file_gives_settings_or_an_error(
            pairs in proptest::collection::vec((key(), value()), 0..6),
            // Mostly clean files, so that the settings themselves get exercised.
            noise in prop_oneof![3 => Just(String::new()), 1 => "[ -~\n]{0,40}"],
        ) {
            let mut text: String = pairs.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
            text.push_str(&noise);
            if let Ok(a) = file(&text)
                && let Ok(s) = a.settings()
            {
                prop_assert!(s.duration_s > 0.0 && s.duration_s.is_finite());
            }
        }
    }
}

#[test]
fn open_load_settings_are_checked_together() {
    let load = |v: &[&str]| flags(v).expect("flags").load();
    assert_eq!(load(&[]).expect("none"), None);
    let l = load(&[
        "--request-rate",
        "auto:4",
        "--slo",
        "ttft_p99=2s",
        "--find-capacity",
    ])
    .expect("load")
    .expect("some");
    assert_eq!(l.rates, Some(llmib_core::RateSpec::Auto { points: 4 }));
    assert_eq!((l.precision, l.drain_s), (0.05, 120.0));
    assert_eq!(l.arrival, llmib_core::ArrivalPattern::Poisson);
    let e = load(&["--find-capacity"]).expect_err("no slo");
    assert!(e.to_string().contains("--slo"), "{e}");
    let e = load(&["--arrival", "constant"]).expect_err("stray");
    assert!(e.to_string().contains("--request-rate"), "{e}");
    // Session rates take the pattern: no open load, the sessions' arrivals.
    let a = flags(&[
        "--session-rate",
        "2",
        "--turns",
        "2",
        "--arrival",
        "constant",
    ])
    .expect("ok");
    assert_eq!(a.load().expect("no load"), None);
    let st = a.session_settings().expect("sessions").expect("some");
    assert_eq!(st.arrival, llmib_core::ArrivalPattern::Constant);
    let e = flags(&["--slo", "itl_p50=1ms"]).expect_err("unknown figure");
    assert!(e.to_string().contains("ttft, tpot, e2e, user_tok_s"), "{e}");
    assert!(flags(&["--capacity-precision", "5%"]).is_ok());
    assert!(flags(&["--capacity-precision", "1.5"]).is_err());
}

#[test]
fn request_controls_go_to_settings_and_the_tools_own_keys_are_refused() {
    let c = flags(&[
        "--temperature",
        "0.7",
        "--top-p",
        "0.9",
        "--seed",
        "42",
        "--extra-body",
        r#"{"chat_template_kwargs":{"enable_thinking":false}}"#,
    ])
    .expect("flags")
    .settings()
    .expect("settings")
    .request;
    assert_eq!(
        (c.temperature, c.top_p, c.seed),
        (Some(0.7), Some(0.9), Some(42))
    );
    let mut body = serde_json::Map::new();
    c.apply(&mut body);
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
    let e = flags(&["--extra-body", r#"{"max_tokens":5}"#]).expect_err("own key");
    assert!(e.to_string().contains("`max_tokens`"), "{e}");
    assert!(flags(&["--extra-body", "[1]"]).is_err());
    let e = flags(&["--top-p", "1.5"])
        .expect("flags")
        .settings()
        .expect_err("top-p");
    assert!(e.to_string().contains("--top-p"), "{e}");
    // A TOML table in a file is the same object.
    let f = file("[extra_body]\nreasoning_effort = \"low\"\n").expect("table");
    assert_eq!(
        f.extra_body.map(|e| e.0["reasoning_effort"].clone()),
        Some(serde_json::json!("low"))
    );
}

#[test]
fn the_monitor_and_dashboard_pace_are_checked() {
    let m = flags(&[]).expect("flags").monitor().expect("defaults");
    assert!(m.on && m.gpu_limit.is_none());
    assert_eq!(m.interval, Duration::from_millis(500));
    assert_eq!(m.frame, Duration::from_millis(250));
    let m = flags(&[
        "--hw-monitor-interval",
        "250ms",
        "--hw-gpu-limit",
        "2",
        "--refresh-rate",
        "10",
    ])
    .expect("flags")
    .monitor()
    .expect("monitor");
    assert_eq!(
        (m.interval, m.gpu_limit),
        (Duration::from_millis(250), Some(2))
    );
    assert_eq!(m.frame, Duration::from_millis(100));
    for bad in [
        ["--hw-monitor-interval", "10ms"],
        ["--refresh-rate", "0"],
        ["--hw-gpu-limit", "0"],
    ] {
        let e = flags(&bad)
            .expect("flags")
            .monitor()
            .expect_err("out of range");
        assert!(e.to_string().contains(bad[0]), "{e}");
    }
}

#[test]
fn warm_up_knobs_take_the_seeds_names_and_defaults() {
    // The burst warm-up defaults to the cell's concurrency; the old flag and key still read.
    let b = flags(&["--run-burst"])
        .expect("flags")
        .burst()
        .expect("burst");
    assert_eq!(b.map(|b| b.warmup_requests(8)), Some(8));
    for args in [
        &["--run-burst", "--burst-warmup-request-count", "3"][..],
        &["--run-burst", "--warmup-request-count", "3"][..],
    ] {
        let b = flags(args).expect("flags").burst().expect("burst");
        assert_eq!(b.map(|b| b.warmup_requests(8)), Some(3), "{args:?}");
    }
    let f = file("run_burst = true\nwarmup_request_count = 0\n").expect("file");
    assert_eq!(
        f.burst().expect("burst").map(|b| b.warmup_requests(8)),
        Some(0)
    );
    // The decode warm-up: off by default, seconds otherwise, checked.
    let s = |v: &[&str]| flags(v).expect("flags").decode_warmup_s();
    assert_eq!(s(&[]).expect("default"), 0.0);
    assert_eq!(s(&["--decode-warmup-seconds", "15"]).expect("15"), 15.0);
    let e = s(&["--decode-warmup-seconds=-1"]).expect_err("negative");
    assert!(e.to_string().contains("--decode-warmup-seconds"), "{e}");
}

/// `weka:FILE` replays as sessions, as `sessions:FILE` does: the replay names the format, the
/// time scale is the replay's, and a rate of sessions is refused (the trace starts them).
#[test]
fn a_weka_trace_replays_as_sessions() {
    let settings = |args: &[&str]| flags(args).expect("flags").session_settings();
    let s = settings(&["--workload", "weka:w.jsonl", "--time-scale", "2"])
        .expect("a replay")
        .expect("sessions");
    assert_eq!(s.replay.as_deref(), Some("weka:w.jsonl"));
    assert_eq!(s.time_scale, 2.0);
    let e = settings(&["--workload", "weka:w.jsonl", "--session-rate", "1"])
        .expect_err("refused")
        .to_string();
    assert!(e.contains("drop --session-rate"), "{e}");
}

/// The workload flags: a trace asks for open load by itself; the combinations that cannot mean
/// anything are refused in words that say what to do.
#[test]
fn workload_flags_combine_or_are_refused() {
    let load = |args: &[&str]| flags(args).expect("flags").load();
    let l = load(&["--workload", "mooncake:t.jsonl", "--time-scale", "2"])
        .expect("a trace")
        .expect("open load");
    assert_eq!(
        l.workload.map(|w| w.to_string()),
        Some("mooncake:t.jsonl".into())
    );
    assert_eq!(l.time_scale, Some(llmib_core::TimeScaleSpec::Factor(2.0)));
    let l = load(&[
        "--request-rate",
        "4",
        "--input-len",
        "1K..2K",
        "--output-len",
        "64",
    ])
    .expect("lengths")
    .expect("open load");
    assert_eq!(l.input_len.map(|i| i.to_string()), Some("1K..2K".into()));
    for (args, says) in [
        (&["--workload", "sharegpt:s.json"][..], "--request-rate"),
        (&["--input-len", "1K"][..], "--request-rate"),
        (
            &["--request-rate", "1", "--workload", "azure:a.csv"][..],
            "own arrivals",
        ),
        (
            &["--request-rate", "1", "--time-scale", "2"][..],
            "applies to a trace",
        ),
        (
            &["--workload", "azure:a.csv", "--time-scale", "auto"][..],
            "--slo",
        ),
        (
            &[
                "--request-rate",
                "1",
                "--workload",
                "sharegpt:s.json",
                "--input-len",
                "1K",
            ][..],
            "drop --input-len",
        ),
    ] {
        let e = load(args).expect_err("refused").to_string();
        assert!(e.contains(says), "{args:?}: {e}");
    }
    assert!(flags(&["--workload", "burstgpt:x.csv"]).is_err());
    assert!(flags(&["--input-len", "4K:normal:5K"]).is_err());
    assert!(flags(&["--time-scale", "0"]).is_err());
}

/// `--workload prompts:FILE`: the file is read and recorded (name, prompts, size, sha256) with
/// the flags, before any server is contacted; it takes `--output-len` (for lines without
/// `max_tokens`) but not `--input-len`, nor `--time-scale`; a bad line is refused in one line.
#[test]
fn a_prompts_workload_is_read_with_the_flags() {
    let dir = std::env::temp_dir().join(format!("llmib-prompts-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("p.jsonl");
    std::fs::write(&good, "{\"prompt\": \"abc\"}\n").expect("write");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\": \"abc\"}\n{\"max_tokens\": 4}\n").expect("write");
    let spec = |p: &std::path::Path| format!("prompts:{}", p.display());
    let (good, bad) = (spec(&good), spec(&bad));
    let load = |args: &[&str]| flags(args).expect("flags").load();
    let l = load(&[
        "--request-rate",
        "2",
        "--workload",
        &good,
        "--output-len",
        "8",
    ])
    .expect("prompts")
    .expect("open load");
    let p = l.prompts.expect("recorded");
    assert_eq!((p.name.as_str(), p.lines, p.bytes), ("p.jsonl", 1, 18));
    // The file's bytes' sha256 (sha256sum).
    assert_eq!(
        p.sha256,
        "a87cd28e1b308a3d2a53b34d16451a5f5f847aaa4df08f3fcdb1da68492f5617"
    );
    for (args, says) in [
        (
            &["--workload", good.as_str()][..],
            "--workload prompts:FILE applies to open load",
        ),
        (
            &[
                "--request-rate",
                "1",
                "--workload",
                &good,
                "--input-len",
                "1K",
            ][..],
            "drop --input-len",
        ),
        (
            &[
                "--request-rate",
                "1",
                "--workload",
                &good,
                "--time-scale",
                "2",
            ][..],
            "applies to a trace",
        ),
        (
            &["--request-rate", "1", "--workload", &bad][..],
            "bad.jsonl: line 2: has neither",
        ),
    ] {
        let e = format!("{:#}", load(args).expect_err("refused"));
        assert!(e.contains(says) && !e.contains('\n'), "{args:?}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn until_stable_is_a_run_setting() {
    let s = |v: &[&str]| flags(v).expect("flags").settings().expect("settings");
    assert_eq!(s(&[]).until_stable, None);
    let t = s(&["--until-stable", "2%"]).until_stable;
    assert_eq!(t.map(|t| t.fraction), Some(0.02));
    assert!(flags(&["--until-stable", "nope"]).is_err());
}

#[test]
fn the_guards_and_the_forced_token_reach_the_settings() {
    let s = flags(&[
        "--busy-timeout",
        "5s",
        "--no-loop-detection",
        "--forced-token-id",
        "1234",
    ])
    .expect("flags")
    .settings()
    .expect("settings");
    assert_eq!(s.busy_timeout_s, 5.0);
    assert!(!s.loop_detection);
    assert_eq!(s.request.forced_token_id, Some(1234));
    let d = flags(&[]).expect("flags").settings().expect("defaults");
    assert_eq!(d.busy_timeout_s, llmib_core::DEFAULT_BUSY_TIMEOUT_S);
    assert!(d.loop_detection);
    // A forced token is temperature 0 with EOS ignored: the flags that say otherwise are
    // refused rather than silently overridden.
    for other in [
        ["--temperature", "0.7"],
        ["--respect-eos", "--serial-server"],
    ] {
        let mut a = vec!["--forced-token-id", "7"];
        a.extend(other);
        let e = flags(&a).expect("flags").settings().expect_err("refused");
        assert!(
            e.to_string()
                .contains("--forced-token-id sets temperature 0"),
            "{e}"
        );
    }
}

#[test]
fn the_standard_matrix_fixes_its_cells_and_refuses_a_flag_that_changes_one() {
    let s = flags(&["--standard"])
        .expect("flags")
        .settings()
        .expect("v1");
    assert_eq!(s.standard.as_deref(), Some("v1"));
    assert_eq!(s.concurrency, vec![1, 8, 16]);
    assert_eq!(s.max_output, 1024);
    let named = flags(&["--standard", "v1"])
        .expect("flags")
        .settings()
        .expect("v1");
    assert_eq!(
        named,
        llmib_core::Settings {
            prompt_seed: named.prompt_seed,
            ..s
        }
    );
    let e = flags(&["--standard", "--concurrency", "4"])
        .expect("flags")
        .settings()
        .expect_err("refused");
    assert_eq!(
        e.to_string(),
        "--standard v1 fixes --concurrency: drop it (or drop --standard for a free-form run)"
    );
    let e = flags(&["--standard", "v7"])
        .expect("flags")
        .settings()
        .expect_err("unknown");
    assert!(
        e.to_string().contains("the published versions are v1"),
        "{e}"
    );
    // A config file names it too.
    let f = file("standard = \"v1\"\n")
        .expect("file")
        .settings()
        .expect("v1");
    assert_eq!(f.standard.as_deref(), Some("v1"));
}

/// The cost flags reach the settings (run.json's `economics`); the two prices exclude each
/// other, from flags or from a file and a flag; a price must be above 0 and `gpus` at least 1.
#[test]
fn the_cost_flags_reach_the_settings_and_one_price_at_most() {
    let s = flags(&["--gpu-hour-usd", "2.5", "--gpus", "8"])
        .expect("flags")
        .settings()
        .expect("settings");
    assert_eq!(s.economics.gpu_hour_usd, Some(2.5));
    assert_eq!(s.economics.gpus, Some(8));
    assert_eq!(s.economics.usd_per_hour().ok().map(|p| p.0), Some(20.0));
    let node = file("node_hour_usd = 30.0\n").expect("file").settings();
    assert_eq!(node.expect("settings").economics.node_hour_usd, Some(30.0));
    let none = flags(&[]).expect("flags").settings().expect("settings");
    assert!(none.economics.is_empty(), "no flag, no cost settings");
    // Both prices at once: clap refuses the flags, the settings a file plus a flag.
    let both = flags(&["--gpu-hour-usd", "2", "--node-hour-usd", "20"]).expect_err("refused");
    assert_eq!(both.kind(), clap::error::ErrorKind::ArgumentConflict);
    let mixed = flags(&["--gpu-hour-usd", "2"])
        .expect("flags")
        .merge_text("node_hour_usd = 20\n", "test.toml")
        .expect("merged");
    let e = mixed.settings().expect_err("refused").to_string();
    assert!(e.contains("exclude each other"), "{e}");
    for bad in ["--gpu-hour-usd=0", "--node-hour-usd=-1", "--gpus=0"] {
        let e = flags(&[bad])
            .expect("parses")
            .settings()
            .expect_err("refused")
            .to_string();
        let flag = bad.split('=').next().unwrap_or_default();
        assert!(e.contains(flag), "{bad}: {e}");
    }
    assert!(flags(&["--gpus", "two"]).is_err());
}

#[test]
fn percentiles_come_from_the_flag_or_the_file_and_bad_ones_are_refused() {
    let of = |a: RunArgs| a.settings().expect("settings").percentiles;
    assert_eq!(of(flags(&[]).expect("flags")), Vec::<f64>::new());
    let given = flags(&["--percentiles", "50,90,99,99.9"]).expect("flags");
    assert_eq!(of(given), vec![99.9]);
    assert_eq!(
        of(file("percentiles = [99.9, 75]\n").expect("file")),
        vec![75.0, 99.9]
    );
    for bad in ["0", "100.5", "abc"] {
        let e = flags(&["--percentiles", bad]).expect_err(bad).to_string();
        let line = e.lines().next().unwrap_or_default();
        assert!(line.contains("--percentiles") && line.contains(bad), "{e}");
        assert!(
            file(&format!("percentiles = \"{bad}\"\n")).is_err(),
            "{bad}"
        );
    }
}
