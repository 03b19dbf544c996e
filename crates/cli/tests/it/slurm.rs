//! Shards on a real one-node Slurm cluster (Debian's `slurm-wlm`, started by the test command
//! with `scripts/slurm/start.sh`, which exports `SLURM_CONF`): `deploy/slurm/submit.sh` is
//! submitted as a user would, an array of three shards against the simulator and the merge
//! chained after it (`afterok`). The merged run must send every scheduled request once, at the
//! rate one process achieves, and its report must carry the Shards section. A second
//! submission with one shard made to fail must leave the merge not run, with the failed task
//! and the cancelled merge visible in `sacct`.
//!
//! Outside CI, without `SLURM_CONF`, the tests say SKIPPED; in CI (`CI` set) a missing cluster
//! fails them, so a broken install step cannot pass silently.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The cluster's configuration, or `None` (after saying why) outside CI.
pub(crate) fn cluster() -> Option<String> {
    match std::env::var("SLURM_CONF") {
        Ok(conf) if Path::new(&conf).is_file() => Some(conf),
        _ if std::env::var_os("CI").is_some() => panic!(
            "no Slurm cluster: run `eval \"$(scripts/slurm/start.sh)\"` first (the test command does)"
        ),
        _ => {
            eprintln!("SKIPPED Slurm test: set SLURM_CONF (eval \"$(scripts/slurm/start.sh)\")");
            None
        }
    }
}

/// The cluster to this test alone, taken after the test's slot: the Slurm tests read the
/// cluster's job lists (a job of another test's submission would read as theirs) and fill its
/// CPUs, and the test command runs timed tests side by side.
pub(crate) fn cluster_to_myself() -> std::sync::MutexGuard<'static, ()> {
    static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    CLUSTER.lock().unwrap_or_else(|p| p.into_inner())
}

/// The plan every shard runs (the shards.sbatch knobs), and the same as flags for one process.
const PLAN: &[(&str, &str, &str)] = &[
    ("LLMIB_MODEL", "--model", "sim/tiny"),
    ("LLMIB_CONTEXTS", "--contexts", "512"),
    ("LLMIB_CONCURRENCY", "--concurrency", "3"),
    ("LLMIB_RATES", "--request-rate", "10"),
    ("LLMIB_DURATION", "--duration", "3s"),
    ("LLMIB_MAX_OUTPUT", "--max-output", "32"),
    ("LLMIB_SEED", "--seed", "11"),
    ("LLMIB_READINESS_TIMEOUT", "--readiness-timeout", "2s"),
    ("LLMIB_DRAIN_TIMEOUT", "--drain-timeout", "1s"),
];

/// An RFC 3339 instant `secs` from now.
fn instant_in(secs: u64) -> String {
    llmib_core::rfc3339(std::time::SystemTime::now() + Duration::from_secs(secs))
}

/// Submits `deploy/slurm/submit.sh` from `work` with `shards` shards; returns (array, merge) ids.
fn submit(conf: &str, url: &str, work: &Path, shards: u32, lead_s: u64) -> (u64, u64) {
    let bin_dir = bin().parent().expect("bin dir").to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(repo_root().join("deploy/slurm/submit.sh"));
    cmd.current_dir(work)
        .env("SLURM_CONF", conf)
        .env("PATH", path)
        .env("SHARDS", shards.to_string())
        .env("START_AT", instant_in(lead_s))
        .env("RESULTS", work.join("res"))
        .env("LLMIB_URL", url)
        .env("LLMIB_SHARD_PREP_SECONDS", "3")
        // A one-node cluster: each shard takes one CPU and shares the node, where a real
        // cluster gives each its own node (the script's --exclusive).
        .env("SBATCH_OPTS", "--cpus-per-task=1 --oversubscribe")
        .env_remove("OPENAI_API_KEY");
    for (var, _, value) in PLAN {
        cmd.env(var, value);
    }
    let o = cmd.output().expect("run submit.sh");
    let out = text(&o);
    assert!(o.status.success(), "submit.sh failed:\n{out}");
    // "start at T: shards job A (N tasks), merge job M"
    let id_after = |word: &str| -> u64 {
        let at = out
            .find(word)
            .unwrap_or_else(|| panic!("no `{word}` in:\n{out}"))
            + word.len();
        out[at..]
            .split(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .and_then(|s| s.parse().ok())
            .expect("a job id")
    };
    (id_after("shards job "), id_after("merge job "))
}

/// Waits until Slurm has no job of `ids` queued or running (at most `limit`).
fn wait_for(conf: &str, ids: &[u64], limit: Duration) {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    let start = Instant::now();
    loop {
        let o = Command::new("squeue")
            .env("SLURM_CONF", conf)
            .args(["-h", "-o", "%i %T", "-j", &ids.join(",")])
            .output()
            .expect("squeue");
        // squeue names finished jobs nowhere (an unknown id is an error once they age out).
        let listed = String::from_utf8_lossy(&o.stdout).to_string();
        if listed.trim().is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "jobs still queued after {limit:?}:\n{listed}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// One job as `sacct --completion` reports it (the cluster keeps job completions in a file, no
/// slurmdbd).
#[derive(Debug)]
struct Job {
    id: u64,
    name: String,
    state: String,
    exit: String,
}

fn jobs(conf: &str) -> Vec<Job> {
    let o = Command::new("sacct")
        .env("SLURM_CONF", conf)
        .args([
            "--completion",
            "-n",
            "-P",
            "-o",
            "JobID,JobName,State,ExitCode",
        ])
        .output()
        .expect("sacct");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            Some(Job {
                id: f.first()?.trim().parse().ok()?,
                name: f.get(1)?.to_string(),
                state: f.get(2)?.trim().to_string(),
                exit: f.get(3)?.trim().to_string(),
            })
        })
        .collect()
}

/// The jobs of one submission: the array's tasks (`llmib-shards`, the first with the array's
/// id, the others with ids of their own from it on) and the merge.
fn submission(conf: &str, array: u64, merge: u64) -> (Vec<Job>, Option<Job>) {
    let mut tasks = Vec::new();
    let mut merged = None;
    for j in jobs(conf) {
        if j.id == merge {
            merged = Some(j);
        } else if j.id >= array && j.name.starts_with("llmib-shards") {
            // A task split out of the array takes the next free id when it starts: after the
            // merge's if the merge was submitted first, before it otherwise (seen on CI). The
            // cluster's earlier submissions have lower ids.
            tasks.push(j);
        }
    }
    (tasks, merged)
}

/// [`submission`], once `sacct` has the merge's and every task's completion: the jobs leave
/// `squeue` as they end, and a cancelled merge's line may reach the completion file a moment
/// after (at most 10 s waited).
fn completed(conf: &str, array: u64, merge: u64, shards: u64) -> (Vec<Job>, Option<Job>) {
    let start = Instant::now();
    loop {
        let (tasks, merged) = submission(conf, array, merge);
        let all = merged.is_some() && tasks.len() as u64 == shards;
        if all || start.elapsed() > Duration::from_secs(10) {
            return (tasks, merged);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// What a failed assertion shows: `sacct`'s completions, the jobs' logs (the scripts'
/// `#SBATCH --output` under `work/results`) and the controller's last lines, so a failure on a
/// CI runner says which job did what without a rerun.
fn evidence(conf: &str, work: &Path) -> String {
    let logs = std::fs::read_dir(work.join("results"))
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let body = std::fs::read_to_string(e.path()).unwrap_or_default();
                    format!("{}:\n{body}", e.path().display())
                })
                .collect::<Vec<_>>()
                .join("\n----\n")
        })
        .unwrap_or_default();
    let ctld = Path::new(conf).with_file_name("log/slurmctld.log");
    let ctld = std::fs::read_to_string(&ctld).unwrap_or_default();
    let tail: Vec<&str> = ctld.lines().rev().take(30).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!(
        "sacct: {:?}\nlogs:\n{logs}\nslurmctld.log (last lines):\n{}",
        jobs(conf),
        tail.join("\n")
    )
}

fn row<'a>(rows: &'a [Value], phase: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["phase"] == phase)
        .unwrap_or_else(|| panic!("no {phase} row in {rows:#?}"))
}

/// One process running the same plan, for the rate the shards must match.
fn one_process(url: &str) -> Vec<Value> {
    let dir = out_dir("slurm-one");
    let d = dir.to_string_lossy().to_string();
    let mut args = vec!["run", "--url", url, "--output", &d, "--save-requests"];
    for (_, flag, value) in PLAN {
        args.extend_from_slice(&[flag, value]);
    }
    args.extend_from_slice(&["--no-hw-monitor", "--display", "plain", "--format", "none"]);
    let o = run_bin(&args);
    assert!(o.status.success(), "{}", text(&o));
    cells(&dir)
}

#[test]
fn slurm_array_of_three_shards_and_its_merge_match_one_process() {
    let Some(conf) = cluster() else { return };
    let _serial = timing_lock();
    let _cluster = cluster_to_myself();
    let sim = Sim::start(crate::run::exact_sim());
    let single = one_process(&sim.url);
    let work = out_dir("slurm-array");
    let (array, merge) = submit(&conf, &sim.url, &work, 3, 15);
    wait_for(&conf, &[array, merge], Duration::from_secs(240));
    let merged_dir = work.join("res/merged");
    assert!(
        merged_dir.join("cells.jsonl").is_file(),
        "no merged run; {}",
        evidence(&conf, &work)
    );
    let merged = cells(&merged_dir);
    let (r1, rm) = (row(&single, "rate"), row(&merged, "rate"));
    assert_eq!(rm["status"], "valid", "{rm:#}");
    assert_eq!(rm["merged"]["complete"], true, "{rm:#}");
    assert_eq!(rm["merged"]["shards"].as_array().map(Vec::len), Some(3));
    let scheduled = r1["rate"]["scheduled"].as_u64().expect("scheduled");
    assert_eq!(rm["rate"]["scheduled"].as_u64(), Some(scheduled), "{rm:#}");
    // Every scheduled request once: the union of the shards' records is 0..scheduled.
    let indices: Vec<u64> = requests(&merged_dir)
        .values()
        .flatten()
        .filter(|r| r["cell"]["phase"] == "rate")
        .filter_map(|r| r["stream"].as_u64())
        .collect();
    let mut sorted = indices.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..scheduled).collect::<Vec<_>>(),
        "each request once"
    );
    assert_close(
        "achieved request rate",
        num(rm, "achieved_request_rate"),
        num(r1, "achieved_request_rate"),
        1.0,
    );
    assert_eq!(row(&merged, "decode")["merged"]["complete"], true);
    let page = std::fs::read_to_string(merged_dir.join("report.html")).expect("report.html");
    assert!(page.contains("id=\"shards\""), "no Shards section");
    let (tasks, merged) = completed(&conf, array, merge, 3);
    let why = || evidence(&conf, &work);
    assert_eq!(tasks.len(), 3, "{}", why());
    assert!(tasks.iter().all(|t| t.state == "COMPLETED"), "{}", why());
    let merged = merged.map(|m| m.state);
    assert_eq!(merged.as_deref(), Some("COMPLETED"), "{}", why());
}

#[test]
fn a_failed_shard_leaves_the_merge_not_run_and_says_so_in_sacct() {
    let Some(conf) = cluster() else { return };
    let _serial = timing_lock();
    let _cluster = cluster_to_myself();
    let sim = Sim::start(crate::run::exact_sim());
    let work = out_dir("slurm-failed");
    // Shard 1 cannot create its results directory: a file is in the way.
    std::fs::create_dir_all(work.join("res")).expect("res");
    std::fs::write(work.join("res/shard-1"), "in the way").expect("block shard 1");
    // 20 s ahead: this is often the fresh cluster's first submission, and a shard that starts
    // past its slot fails on purpose (core::slot_lateness), which would make two failed shards.
    let (array, merge) = submit(&conf, &sim.url, &work, 2, 20);
    wait_for(&conf, &[array, merge], Duration::from_secs(180));
    let why = || evidence(&conf, &work);
    assert!(
        !work.join("res/merged").exists(),
        "the merge ran; {}",
        why()
    );
    let (tasks, merged) = completed(&conf, array, merge, 2);
    let merged = merged.unwrap_or_else(|| panic!("the merge job not in sacct; {}", why()));
    assert_eq!(merged.state, "CANCELLED", "{merged:?}; {}", why());
    assert!(merged.name.starts_with("llmib-merge"), "{merged:?}");
    let failed: Vec<&Job> = tasks.iter().filter(|t| t.state == "FAILED").collect();
    assert_eq!(failed.len(), 1, "one failed shard: {tasks:?}; {}", why());
    assert_ne!(failed[0].exit, "0:0", "{failed:?}");
    assert!(
        tasks.iter().any(|t| t.state == "COMPLETED"),
        "the other shard ran: {tasks:?}; {}",
        why()
    );
}
