//! The demo end to end: `demo` against the built-in simulator reproduces the seed matrix's
//! status staircase (split from run.rs, which holds the matrix runner's other tests).

use crate::common::*;

#[test]
fn demo_reproduces_the_seeds_status_staircase() {
    let _serial = timing_lock();
    let dir = out_dir("demo");
    let o = run_bin(&[
        "demo",
        "--duration",
        "250ms",
        "--output",
        dir.to_str().unwrap_or_default(),
        "--format",
        "md",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    // The seed's decode rows, scaled by 1/64: (context label, Over capacity from this N on).
    // Seed: 8K none, 16K 128, 32K 64, 64K 32, 128K 16, 256K 8, 512K 8, 1019K 4.
    let seed: [(u64, u64); 7] = [
        (128, 256),
        (256, 128),
        (512, 64),
        (1024, 32),
        (2048, 16),
        (4096, 8),
        (8192, 8),
    ];
    for (ctx, first_over) in seed {
        for n in [1u64, 2, 4, 8, 16, 32, 64, 128] {
            let r = cell(&rows, "decode", ctx, n);
            let expect = if n >= first_over {
                "over_capacity"
            } else {
                "valid"
            };
            assert_eq!(r["status"], expect, "C={ctx} N={n}: {r:#}");
        }
    }
    // The `max` row (the seed's 1019K): N = 1, 2 fit, 4 and up are Over capacity.
    let max_ctx = rows
        .iter()
        .filter(|r| r["phase"] == "decode")
        .filter_map(|r| r["context_tokens"].as_u64())
        .max()
        .expect("decode rows");
    assert!(max_ctx > 8192 && max_ctx < 16384, "{max_ctx}");
    for n in [1u64, 2] {
        assert!(
            ["valid", "requests_queued"].contains(
                &cell(&rows, "decode", max_ctx, n)["status"]
                    .as_str()
                    .unwrap_or("")
            )
        );
    }
    for n in [4u64, 8, 16, 32, 64, 128] {
        assert_eq!(cell(&rows, "decode", max_ctx, n)["status"], "over_capacity");
    }
    // Nine prefill rows, the full context among them, all Valid, and the report.
    let prefill: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["phase"] == "prefill").collect();
    assert_eq!(prefill.len(), 9);
    assert!(
        prefill.iter().all(|r| r["status"] == "valid"),
        "{prefill:#?}"
    );
    assert!(dir.join("report.md").is_file());
    let run = run_json(&dir);
    // The simulator runs on no GPU: no startup diagnostics of this machine.
    assert!(run.get("diagnostics").is_none());
    assert_eq!(run["engine"]["name"], "sglang");
    assert_eq!(run["engine"]["version"], "0.5.6.post3.dev11345+g028ac64f7");
    assert_eq!(run["engine"]["quantization"], "FP8");
    assert_eq!(run["engine"]["backend"], "cuda");
    assert_eq!(run["engine"]["repository"], "github.com/sgl-project/sglang");
    assert_eq!(run["model"]["served_model"], "zai-org/GLM-5.3-Flash");

    // The launch command is rebuilt from SGLang's server_args exactly as the seed prints it, but
    // for the binary's path, the scaled context length and the simulator's address.
    let seed_page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/seed-run/seed-page.txt"
    ))
    .expect("seed page");
    let seed_cmd = seed_page
        .lines()
        .skip_while(|l| *l != "Launch command")
        .nth(1)
        .expect("seed launch command");
    let ours = run["launch_command"].as_str().expect("launch command");
    let normalise = |cmd: &str| -> Vec<String> {
        let mut words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        for flag in ["--context-length", "--host", "--port"] {
            if let Some(i) = words.iter().position(|w| w == flag) {
                words[i + 1] = "*".into();
            }
        }
        words.into_iter().skip(1).collect() // the binary's path
    };
    assert_eq!(normalise(ours), normalise(seed_cmd), "ours: {ours}");

    // The simulator's API key was used for every request and is in no file of the run.
    for entry in std::fs::read_dir(&dir).expect("results dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-sim-seed"),
            "API key leaked into {}",
            path.display()
        );
    }
}
