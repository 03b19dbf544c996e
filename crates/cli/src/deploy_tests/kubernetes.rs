//! The Kubernetes sharded-run files' numbers checked against each other: the Indexed Job
//! runs SHARDS pods at once (completion mode, completions, parallelism, no retries), each
//! pod's `run` is told the same SHARDS and writes `shard-$(JOB_COMPLETION_INDEX)` on the
//! results volume, and the merge Job reads exactly those SHARDS directories from the same
//! volume and settings. One wrong number among them fails a pod or a merge on the cluster
//! hours in; here it fails the test, and a test plants each wrong number to prove it.

use super::{config_map_data, containers, render, samples, string_list, yaml_documents};
use serde_norway::Value;
use std::collections::HashMap;

const SHARDS_FILE: &str = "deploy/kubernetes/shards.yaml";
const MERGE_FILE: &str = "deploy/kubernetes/merge-job.yaml";

/// The value after `flag` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// The results volume of a pod spec: (claim name, mount path in its first container).
fn results_volume(pod: &Value) -> (Option<String>, Option<String>) {
    let claim = pod["volumes"][0]["persistentVolumeClaim"]["claimName"]
        .as_str()
        .map(str::to_string);
    let mount = pod["containers"][0]["volumeMounts"][0]["mountPath"]
        .as_str()
        .map(str::to_string);
    (claim, mount)
}

/// What disagrees in the shard Job and the merge Job, in words (empty: they agree).
fn problems(shard_docs: &[Value], merge_docs: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    let vars: HashMap<String, String> = samples(&config_map_data(shard_docs));
    let Some(job) = shard_docs
        .iter()
        .find(|d| d["kind"] == "Job" && d["spec"]["completionMode"] == "Indexed")
    else {
        return vec!["no Job with completionMode: Indexed".into()];
    };
    let Some(shards) = vars.get("SHARDS").and_then(|s| s.parse::<u64>().ok()) else {
        return vec!["the ConfigMap has no numeric SHARDS".into()];
    };
    let spec = &job["spec"];
    for key in ["completions", "parallelism"] {
        if spec[key].as_u64() != Some(shards) {
            out.push(format!("{key} {:?} ≠ SHARDS {shards}", spec[key]));
        }
    }
    if spec["backoffLimit"].as_u64() != Some(0) {
        out.push("a retried shard misses its slots: backoffLimit must be 0".into());
    }
    let pod = &spec["template"]["spec"];
    if !pod["affinity"]["podAntiAffinity"].is_mapping() {
        out.push("the shard pods need a podAntiAffinity to spread over nodes".into());
    }
    let container = &pod["containers"][0];
    let from_secret = container["env"]
        .as_sequence()
        .into_iter()
        .flatten()
        .any(|e| e["name"] == "OPENAI_API_KEY" && e["valueFrom"]["secretKeyRef"].is_mapping());
    if !from_secret {
        out.push("OPENAI_API_KEY must come from a Secret".into());
    }
    let args = string_list(SHARDS_FILE, container, "args");
    let rendered = |w: &str| render(w, &vars).ok();
    if flag_value(&args, "--shard") != Some("auto") {
        out.push("the shard's run must say --shard auto (its index from the Job)".into());
    }
    let told = flag_value(&args, "--shards").and_then(rendered);
    if told.as_deref() != Some(shards.to_string().as_str()) {
        out.push(format!("run --shards {told:?} ≠ SHARDS {shards}"));
    }
    let (claim, mount) = results_volume(pod);
    let run_name = vars.get("RUN_NAME").cloned().unwrap_or_default();
    let want_output = format!("{}/{run_name}/shard-0", mount.clone().unwrap_or_default());
    let output = flag_value(&args, "--output").and_then(rendered);
    if output.as_deref() != Some(want_output.as_str()) {
        out.push(format!(
            "run --output {output:?} is not shard-$(JOB_COMPLETION_INDEX) under the results volume's {want_output:?}"
        ));
    }
    out.extend(merge_problems(merge_docs, shard_docs, (&claim, &mount)));
    out
}

/// The merge Job against the shard Job: same settings, same volume, the shards' directories.
fn merge_problems(
    merge_docs: &[Value],
    shard_docs: &[Value],
    (claim, mount): (&Option<String>, &Option<String>),
) -> Vec<String> {
    let mut out = Vec::new();
    let Some(job) = merge_docs.iter().find(|d| d["kind"] == "Job") else {
        return vec!["no merge Job".into()];
    };
    let pod = &job["spec"]["template"]["spec"];
    let config = shard_docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .and_then(|d| d["metadata"]["name"].as_str());
    let reads = pod["containers"][0]["envFrom"][0]["configMapRef"]["name"].as_str();
    if reads.is_none() || reads != config {
        out.push(format!(
            "the merge reads ConfigMap {reads:?}, the shards {config:?}"
        ));
    }
    let (merge_claim, merge_mount) = results_volume(pod);
    if merge_claim != *claim || merge_mount != *mount {
        out.push(format!(
            "the merge mounts {merge_claim:?} at {merge_mount:?}, the shards {claim:?} at {mount:?}"
        ));
    }
    let script: String = containers(job)
        .into_iter()
        .flat_map(|c| string_list(MERGE_FILE, c, "args"))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = format!("{}/$RUN_NAME/shard-$i", mount.clone().unwrap_or_default());
    for needle in [dir.as_str(), "-lt \"$SHARDS\"", "i=0"] {
        if !script.contains(needle) {
            out.push(format!(
                "the merge does not list shard 0 … SHARDS-1 as {dir} (no `{needle}`)"
            ));
        }
    }
    out
}

#[test]
fn deploy_kubernetes_jobs_agree_on_the_number_of_shards_and_the_volume() {
    let (shards, merge) = (yaml_documents(SHARDS_FILE), yaml_documents(MERGE_FILE));
    assert_eq!(problems(&shards, &merge), Vec::<String>::new());
}

/// Each planted wrong number (or name) is found.
#[test]
fn deploy_kubernetes_check_finds_each_planted_disagreement() {
    let (shards, merge) = (yaml_documents(SHARDS_FILE), yaml_documents(MERGE_FILE));
    let job_at = shards
        .iter()
        .position(|d| d["kind"] == "Job")
        .expect("the shard Job");
    let map_at = shards
        .iter()
        .position(|d| d["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    let merge_at = merge
        .iter()
        .position(|d| d["kind"] == "Job")
        .expect("the merge Job");
    assert_eq!(
        merge_at, 0,
        "the plants below edit the merge file's first document"
    );
    type Plant = fn(&mut Vec<Value>, &mut Vec<Value>, usize, usize);
    let plants: [(&str, Plant); 8] = [
        ("completions", |s, _, j, _| {
            s[j]["spec"]["completions"] = Value::from(3)
        }),
        ("parallelism", |s, _, j, _| {
            s[j]["spec"]["parallelism"] = Value::from(5)
        }),
        ("completionMode", |s, _, j, _| {
            s[j]["spec"]["completionMode"] = Value::from("NonIndexed")
        }),
        ("backoffLimit", |s, _, j, _| {
            s[j]["spec"]["backoffLimit"] = Value::from(2)
        }),
        ("SHARDS", |s, _, _, m| {
            s[m]["data"]["SHARDS"] = Value::from("3")
        }),
        ("run --shards", |s, _, j, _| {
            let args = &mut s[j]["spec"]["template"]["spec"]["containers"][0]["args"];
            if let Some(seq) = args.as_sequence_mut() {
                for a in seq.iter_mut().filter(|a| a.as_str() == Some("$(SHARDS)")) {
                    *a = Value::from("4");
                }
            }
        }),
        ("merge volume", |_, g, _, _| {
            g[0]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] =
                Value::from("other-results")
        }),
        ("merge settings", |_, g, _, _| {
            g[0]["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"] =
                Value::from("other-settings")
        }),
    ];
    for (what, plant) in plants {
        let (mut s, mut g) = (shards.clone(), merge.clone());
        plant(&mut s, &mut g, job_at, map_at);
        // "SHARDS = 4" in a pod's --shards agrees only while the ConfigMap says 4: plant a
        // different literal than the ConfigMap's.
        if what == "run --shards" {
            s[map_at]["data"]["SHARDS"] = Value::from("6");
            s[job_at]["spec"]["completions"] = Value::from(6);
            s[job_at]["spec"]["parallelism"] = Value::from(6);
        }
        assert!(!problems(&s, &g).is_empty(), "planted {what}: not found");
    }
}
