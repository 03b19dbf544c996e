//! Tests of the resume decision: which settings may change on resume, which are refused.

use super::*;
use crate::config::{ContextList, Levels};
use llmib_core::ContextSpec;
use llmib_core::Plan;
use std::path::PathBuf;
use std::time::Duration;

fn saved() -> RunInfo {
    let settings = Settings {
        contexts: vec![ContextSpec::Tokens(1024)],
        concurrency: vec![1, 2],
        ..Settings::default()
    };
    RunInfo {
        schema_version: llmib_core::SCHEMA_VERSION,
        tool: llmib_core::ToolInfo::current(),
        state: llmib_core::RunState::Interrupted,
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: None,
        url: "http://h:1".into(),
        engine: llmib_core::EngineInfo {
            kind: Some(EngineKind::Vllm),
            ..Default::default()
        },
        model: llmib_core::ModelInfo {
            served_model: "m".into(),
            ..Default::default()
        },
        hardware: Default::default(),
        launch_command: None,
        launch_command_source: None,
        diagnostics: None,
        sweep: None,
        plan: Plan::build(settings, Some(100_000), None),
        notes: Vec::new(),
    }
}

fn dir() -> PathBuf {
    PathBuf::from("results/r")
}

fn decide_with(args: RunArgs) -> Result<Resumed> {
    decide(&saved(), &args, &dir(), None)
}

#[test]
fn nothing_given_resumes_with_the_saved_settings() {
    let r = decide_with(RunArgs::default()).expect("resume");
    assert_eq!(r.settings, saved().plan.settings);
    assert!(r.notes.is_empty());
}

#[test]
fn the_same_measurement_settings_are_accepted() {
    let r = decide_with(RunArgs {
        contexts: Some(ContextList(vec![ContextSpec::Tokens(1024)])),
        concurrency: Some(Levels(vec![1, 2])),
        model: Some("m".into()),
        output: Some(dir()),
        ..Default::default()
    })
    .expect("same settings");
    assert!(r.notes.is_empty());
}

#[test]
fn a_change_of_measurement_is_refused_by_name() {
    let cases: Vec<(&str, RunArgs)> = vec![
        (
            "--contexts",
            RunArgs {
                contexts: Some(ContextList(vec![ContextSpec::Tokens(2048)])),
                ..Default::default()
            },
        ),
        (
            "--concurrency",
            RunArgs {
                concurrency: Some(Levels(vec![4])),
                ..Default::default()
            },
        ),
        (
            "--duration",
            RunArgs {
                duration: Some(Duration::from_secs(5)),
                ..Default::default()
            },
        ),
        (
            "--max-output",
            RunArgs {
                max_output: Some(16),
                ..Default::default()
            },
        ),
        (
            "--api",
            RunArgs {
                api: Some(crate::config::ApiArg::Chat),
                ..Default::default()
            },
        ),
        (
            "--model",
            RunArgs {
                model: Some("other".into()),
                ..Default::default()
            },
        ),
        (
            "--respect-eos",
            RunArgs {
                respect_eos: true,
                ..Default::default()
            },
        ),
        (
            "--request-count",
            RunArgs {
                request_count: Some(3),
                ..Default::default()
            },
        ),
        (
            "--output",
            RunArgs {
                output: Some("elsewhere".into()),
                ..Default::default()
            },
        ),
        (
            "--force",
            RunArgs {
                force: true,
                ..Default::default()
            },
        ),
    ];
    for (flag, args) in cases {
        let e = decide_with(args).expect_err(flag).to_string();
        assert!(e.contains(flag), "{flag}: {e}");
    }
}

#[test]
fn a_change_of_how_the_run_proceeds_is_applied_and_noted() {
    let r = decide_with(RunArgs {
        idle_timeout: Some(Duration::from_secs(300)),
        max_time: Some(Duration::from_secs(3600)),
        save_requests: true,
        tokenizer: Some("t.json".into()),
        retry_failed: true,
        ..Default::default()
    })
    .expect("resume");
    assert_eq!(r.settings.idle_timeout_s, 300.0);
    assert_eq!(r.settings.max_time_s, Some(3600.0));
    assert!(r.settings.save_requests);
    assert_eq!(r.settings.tokenizer_file.as_deref(), Some("t.json"));
    for flag in [
        "--idle-timeout",
        "--max-time",
        "--save-requests",
        "--tokenizer",
        "--retry-failed",
    ] {
        assert!(
            r.notes.iter().any(|n| n.contains(flag)),
            "{flag}: {:?}",
            r.notes
        );
    }
}

#[test]
fn a_moved_server_is_noted() {
    let r = decide(
        &saved(),
        &RunArgs::default(),
        &dir(),
        Some("http://other:2"),
    )
    .expect("resume");
    assert!(
        r.notes.iter().any(|n| n.contains("http://other:2")),
        "{:?}",
        r.notes
    );
}

#[test]
fn open_load_settings_are_fixed_on_resume() {
    let e = decide_with(RunArgs {
        request_rate: Some("2,4".parse().expect("rates")),
        ..RunArgs::default()
    })
    .expect_err("a run saved without open load");
    assert!(e.to_string().contains("request-rate"), "{e}");
}

#[test]
fn a_shard_is_never_resumed() {
    // A saved shard: its timetable has passed.
    let mut info = saved();
    info.plan.settings.shard = llmib_core::ShardSpec::new(1, 4);
    let e = decide(&info, &RunArgs::default(), &dir(), None).expect_err("refused");
    assert!(e.to_string().contains("new --start-at"), "{e}");
    // Nor is an unsharded run resumed as a shard.
    let mut args = RunArgs::default();
    args.sharding.shard = Some(llmib_core::ShardArg::Fixed(
        llmib_core::ShardSpec::new(0, 2).expect("shard"),
    ));
    let e = decide_with(args).expect_err("refused");
    assert!(e.to_string().contains("cannot be resumed"), "{e}");
}

#[test]
fn mixed_prefill_and_probes_are_fixed_on_resume() {
    let mixed = |span_ms: u64| RunArgs {
        mixed: crate::config::mixed_args::MixedArgs {
            mixed_prefill: Some(ContextList(vec![ContextSpec::Tokens(4096)])),
            mixed_span: Some(Duration::from_millis(span_ms)),
            ..Default::default()
        },
        ..RunArgs::default()
    };
    let e = decide_with(mixed(500)).expect_err("a run saved without mixed prefill");
    assert!(e.to_string().contains("mixed-prefill"), "{e}");
    // Saved with them: the same again is accepted, another span refused.
    let mut info = saved();
    info.plan.settings.mixed_prefill = mixed(500).mixed.settings().expect("settings");
    assert!(decide(&info, &mixed(500), &dir(), None).is_ok());
    let e = decide(&info, &mixed(600), &dir(), None).expect_err("another span");
    assert!(e.to_string().contains("mixed-span"), "{e}");
    let probe = RunArgs {
        probe: crate::config::probe_args::ProbeArgs {
            probe_rate: Some(0.5),
            ..Default::default()
        },
        ..RunArgs::default()
    };
    let e = decide_with(probe).expect_err("a run saved without probes");
    assert!(e.to_string().contains("probe-rate"), "{e}");
}

/// The adapters and their assignment are fixed on resume (the random seed is the saved one).
#[test]
fn lora_adapters_are_fixed_on_resume() {
    use crate::config::lora_args::{LoraArgs, LoraAssignArg};
    let lora = |names: &[&str], assign: Option<LoraAssignArg>| RunArgs {
        lora: LoraArgs {
            lora: Some(names.iter().map(|n| n.to_string()).collect()),
            lora_assign: assign,
        },
        ..Default::default()
    };
    let e = decide_with(lora(&["a", "b"], None)).expect_err("a run saved without adapters");
    assert!(e.to_string().contains("--lora"), "{e}");
    let mut info = saved();
    info.plan.settings.lora = lora(&["a", "b"], None).lora.settings(77).expect("settings");
    let r = decide(&info, &lora(&["a", "b"], None), &dir(), None).expect("the same adapters");
    assert_eq!(r.settings.lora.as_ref().map(|l| l.seed), Some(77));
    assert!(decide(&info, &RunArgs::default(), &dir(), None).is_ok());
    let e = decide(&info, &lora(&["a", "c"], None), &dir(), None).expect_err("another list");
    assert!(e.to_string().contains("lora"), "{e}");
    let random = lora(&["a", "b"], Some(LoraAssignArg::Random));
    let e = decide(&info, &random, &dir(), None).expect_err("another assignment");
    assert!(e.to_string().contains("lora-assign"), "{e}");
}

/// The images' count, sizes and format are fixed on resume (their seed is the saved one).
#[test]
fn images_are_fixed_on_resume() {
    use crate::config::image_args::ImageArgs;
    let images = |k: u32, sizes: &[&str]| RunArgs {
        images: ImageArgs {
            images: Some(k),
            image_size: Some(sizes.iter().map(|s| s.parse().expect("size")).collect()),
            image_format: None,
        },
        ..Default::default()
    };
    let e = decide_with(images(1, &["8x8"])).expect_err("a run saved without images");
    assert!(e.to_string().contains("--images"), "{e}");
    let mut info = saved();
    info.plan.settings.images = images(2, &["8x8"])
        .images
        .settings(Some(llmib_core::Api::Chat), 77)
        .expect("settings");
    let r = decide(&info, &images(2, &["8x8"]), &dir(), None).expect("the same images");
    assert_eq!(r.settings.images.as_ref().map(|i| i.seed), Some(77));
    assert!(decide(&info, &RunArgs::default(), &dir(), None).is_ok());
    let mut jpeg = images(2, &["8x8"]);
    jpeg.images.image_format = Some(crate::config::image_args::ImageFormatArg::Jpeg);
    for other in [
        images(1, &["8x8"]),
        images(2, &["16x8"]),
        images(0, &["8x8"]),
        jpeg,
    ] {
        let e = decide(&info, &other, &dir(), None).expect_err("another count, size or format");
        assert!(e.to_string().contains("images"), "{e}");
    }
}

/// The schema, the tools and the choice are fixed on resume, by the files' sha256; another
/// control given again is compared without them.
#[test]
fn structured_output_is_fixed_on_resume() {
    use crate::config::structured_args::StructuredArgs;
    let d = std::env::temp_dir().join(format!("llmib-resume-structured-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("dir");
    let (a, b) = (d.join("a.json"), d.join("b.json"));
    std::fs::write(&a, r#"{"type":"object"}"#).expect("write");
    std::fs::write(&b, r#"{"type":"array"}"#).expect("write");
    let with = |p: &std::path::Path| RunArgs {
        structured: StructuredArgs {
            response_format: Some(format!("json_schema:{}", p.display())),
            ..Default::default()
        },
        ..Default::default()
    };
    let e = decide_with(with(&a)).expect_err("a run saved without a schema");
    assert!(e.to_string().contains("--response-format"), "{e}");
    let mut info = saved();
    info.plan.settings.request = with(&a).request_controls().expect("controls");
    assert!(
        decide(&info, &with(&a), &dir(), None).is_ok(),
        "the same file"
    );
    assert!(decide(&info, &RunArgs::default(), &dir(), None).is_ok());
    let e = decide(&info, &with(&b), &dir(), None).expect_err("another schema");
    assert!(e.to_string().contains("response-format"), "{e}");
    let temp = RunArgs {
        temperature: info.plan.settings.request.temperature,
        seed: Some(1),
        ..Default::default()
    };
    info.plan.settings.request.seed = Some(1);
    assert!(
        decide(&info, &temp, &dir(), None).is_ok(),
        "the schema is not a control's change"
    );
}

#[test]
fn percentiles_are_fixed_on_resume() {
    let with = |p: Vec<f64>| RunArgs {
        percentiles: Some(crate::config::parse::Percentiles(p)),
        ..RunArgs::default()
    };
    // Saved without the flag: asking for p99.9 now would summarise half the rows otherwise.
    let e = decide_with(with(vec![99.9])).expect_err("another list");
    assert!(e.to_string().contains("--percentiles"), "{e}");
    // The same (empty) list again is accepted.
    assert!(decide_with(with(Vec::new())).is_ok());
}
