//! The Kubernetes sweep file (`deploy/kubernetes/sweep.yaml`) checked against itself: a
//! Deployment and a Service per server configuration and one Job that sweeps them over
//! `--urls`. Its names and numbers only work together: a URL that names no Service (or the
//! wrong port), a Service that selects the other configuration's pods (the sweep would measure
//! one server twice and call it two), a probe or target port the server does not listen on, a
//! model or an API key the servers and the client disagree on, a retried Job, or results
//! written off the volume. On a cluster each of these costs GPUs held for an hour before it
//! shows, if it shows at all; here it fails the test, and a test plants each one to prove the
//! check finds it.
//!
//! Which flags the binary accepts is `deploy_tests`' check (this file is in its list); the run
//! flags after `--`, which the sweep's own parser only captures, are checked here the way the
//! sweep checks them before it starts.

use super::{BIN, Cli, Command, config_map_data, render, samples, string_list, yaml_documents};
use clap::Parser as _;
use serde_norway::Value;
use std::collections::HashMap;

const SWEEP_FILE: &str = "deploy/kubernetes/sweep.yaml";
const SHARDS_FILE: &str = "deploy/kubernetes/shards.yaml";

/// The Secret and key that hold the API key (`secret.example.yaml`).
const SECRET: (&str, &str) = ("llmib-api-key", "api-key");

/// What the sweep Job runs: the `sweep` flags that name the servers and the results, and the
/// run flags as `run` parses them.
struct Sweep {
    urls: Vec<String>,
    output: String,
    model: Option<String>,
    gpus: Option<u32>,
}

/// The documents of one kind.
fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

/// A document's name.
fn name(doc: &Value) -> &str {
    doc["metadata"]["name"].as_str().unwrap_or("?")
}

/// The value after `flag` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// A container's command and args, each word rendered with `vars` (a word that does not
/// render stays as written, so that the check that reads it names it).
fn words(c: &Value, vars: &HashMap<String, String>) -> Vec<String> {
    let raw = [
        string_list(SWEEP_FILE, c, "command"),
        string_list(SWEEP_FILE, c, "args"),
    ]
    .concat();
    raw.iter()
        .map(|w| render(w, vars).unwrap_or_else(|_| w.clone()))
        .collect()
}

/// The Job's sweep, parsed by this binary's own parser; its run flags parsed as `run`'s,
/// refused where the sweep would refuse them (a flag the sweep sets itself, a flag `run`
/// does not have, settings `run` refuses).
fn parse_sweep(job: &Value, vars: &HashMap<String, String>) -> Result<Sweep, String> {
    let argv = words(&job["spec"]["template"]["spec"]["containers"][0], vars);
    let cli = Cli::try_parse_from(&argv).map_err(|e| format!("the Job's command: {e}"))?;
    let Command::Sweep(sweep) = cli.command else {
        return Err(format!("the Job's command is not `{BIN} sweep`: {argv:?}"));
    };
    if let Some(flag) = llmib_core::own_run_flag(&sweep.run_args) {
        return Err(format!(
            "the run flags hold {flag}, which the sweep sets itself"
        ));
    }
    let run_argv = [BIN, "run", "--url", "http://127.0.0.1:1"]
        .into_iter()
        .map(str::to_string)
        .chain(sweep.run_args.iter().cloned());
    let run = Cli::try_parse_from(run_argv).map_err(|e| format!("the run flags: {e}"))?;
    let Command::Run(run) = run.command else {
        unreachable!("`run` parses as run");
    };
    run.load()
        .map_err(|e| format!("the run flags are refused: {e:#}"))?;
    Ok(Sweep {
        urls: sweep.urls.clone(),
        output: sweep
            .output
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        model: run.model.clone(),
        gpus: run.cost.gpus,
    })
}

/// A URL's host (up to its first dot: a Service's name, in whatever namespace form) and port
/// (the scheme's default where it names none).
fn host_port(url: &str) -> (String, Option<u64>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()),
        None => (authority, Some(if scheme == "https" { 443 } else { 80 })),
    };
    let service = host.split('.').next().unwrap_or_default();
    (service.to_string(), port)
}

/// Each URL names a Service of the file at one of its ports, and each Service is swept (one
/// left out holds its GPU and is never measured).
fn url_problems(urls: &[String], services: &[&Value]) -> Vec<String> {
    let mut out = Vec::new();
    for url in urls {
        let (host, port) = host_port(url);
        let Some(svc) = services.iter().find(|s| name(s) == host) else {
            out.push(format!("--urls {url}: no Service named {host:?}"));
            continue;
        };
        let ports: Vec<u64> = svc["spec"]["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|p| p["port"].as_u64())
            .collect();
        if port.is_none_or(|p| !ports.contains(&p)) {
            out.push(format!(
                "--urls {url}: port {port:?} is not Service {host}'s ({ports:?})"
            ));
        }
    }
    for svc in services {
        if !urls.iter().any(|u| host_port(u).0 == name(svc)) {
            out.push(format!(
                "Service {} is not in --urls: its server is never measured",
                name(svc)
            ));
        }
    }
    out
}

/// The pod template's labels of a Deployment.
fn pod_labels(d: &Value) -> &Value {
    &d["spec"]["template"]["metadata"]["labels"]
}

/// Whether every key of `selector` (a non-empty mapping) has its value in `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    match selector.as_mapping() {
        Some(m) if !m.is_empty() => m.iter().all(|(k, v)| labels.get(k) == Some(v)),
        _ => false,
    }
}

/// The server container of a Deployment (its first).
fn server(d: &Value) -> &Value {
    &d["spec"]["template"]["spec"]["containers"][0]
}

/// The port numbers a container declares.
fn container_ports(c: &Value) -> Vec<u64> {
    let ports = c["ports"].as_sequence().into_iter().flatten();
    ports.filter_map(|p| p["containerPort"].as_u64()).collect()
}

/// A port as a Service's targetPort or a probe names it (a number, or a port's name) in
/// container `c`, as a number; `None` where a name is not one of the container's.
fn resolve_port(c: &Value, port: &Value) -> Option<u64> {
    if let Some(n) = port.as_u64() {
        return Some(n);
    }
    let name = port.as_str()?;
    let ports = c["ports"].as_sequence().into_iter().flatten();
    ports
        .filter(|p| p["name"].as_str() == Some(name))
        .find_map(|p| p["containerPort"].as_u64())
}

/// Each Service selects exactly one Deployment's pods, at a port that Deployment's server
/// declares; and each Deployment has exactly one Service (two Services selecting one server
/// would have the sweep measure it twice under two names).
fn selector_problems(services: &[&Value], deployments: &[&Value]) -> Vec<String> {
    let mut out = Vec::new();
    let mut served = vec![0; deployments.len()];
    for svc in services {
        let selector = &svc["spec"]["selector"];
        let matched: Vec<usize> = (0..deployments.len())
            .filter(|&k| selects(selector, pod_labels(deployments[k])))
            .collect();
        let [k] = matched[..] else {
            out.push(format!(
                "Service {}'s selector matches {} Deployments' pods, not one",
                name(svc),
                matched.len()
            ));
            continue;
        };
        served[k] += 1;
        let c = server(deployments[k]);
        let want = container_ports(c);
        for p in svc["spec"]["ports"].as_sequence().into_iter().flatten() {
            let target = resolve_port(c, &p["targetPort"]);
            if target.is_none_or(|t| !want.contains(&t)) {
                out.push(format!(
                    "Service {}'s targetPort {:?} is not Deployment {}'s containerPort {want:?}",
                    name(svc),
                    p["targetPort"],
                    name(deployments[k])
                ));
            }
        }
    }
    for (d, n) in deployments.iter().zip(served) {
        if n != 1 {
            out.push(format!(
                "Deployment {} is selected by {n} Services",
                name(d)
            ));
        }
    }
    out
}

/// A Deployment's server: probed on /health at the port it declares, listening (`--port`,
/// where given) on that port, holding GPUs (as many as the run's `--gpus`, where given).
fn server_problems(d: &Value, vars: &HashMap<String, String>, gpus: Option<u32>) -> Vec<String> {
    let mut out = Vec::new();
    let c = server(d);
    let ports = container_ports(c);
    if ports.len() != 1 {
        out.push(format!(
            "Deployment {}: one containerPort, not {ports:?}",
            name(d)
        ));
    }
    let probe = &c["readinessProbe"]["httpGet"];
    let at = resolve_port(c, &probe["port"]);
    if at.is_none_or(|p| !ports.contains(&p)) || probe["path"] != "/health" {
        out.push(format!(
            "Deployment {}: the readinessProbe ({:?} {:?}) is not /health on containerPort {ports:?}",
            name(d),
            probe["path"],
            probe["port"]
        ));
    }
    let argv = words(c, vars);
    // Where the command names no --port the engine's default holds; not checked here.
    let listens = flag_value(&argv, "--port");
    if !listens.is_none_or(|p| p.parse().is_ok_and(|p: u64| ports.contains(&p))) {
        out.push(format!(
            "Deployment {}: the server listens on --port {}, not containerPort {ports:?}",
            name(d),
            listens.unwrap_or_default()
        ));
    }
    let held = c["resources"]["limits"]["nvidia.com/gpu"].as_u64();
    let wrong = match gpus {
        Some(n) => held != Some(u64::from(n)),
        None => held.is_none_or(|n| n == 0),
    };
    if wrong {
        out.push(format!(
            "Deployment {}: nvidia.com/gpu limit {held:?}, the run's --gpus {gpus:?}",
            name(d)
        ));
    }
    out
}

/// The model a server serves: its `--served-model-name`, else its `--model`, else the first
/// word after `serve` (`vllm serve MODEL`).
fn served_model(argv: &[String]) -> Option<String> {
    if let Some(m) = flag_value(argv, "--served-model-name").or(flag_value(argv, "--model")) {
        return Some(m.to_string());
    }
    let at = argv.iter().position(|w| w == "serve")?;
    argv.get(at + 1).filter(|w| !w.starts_with('-')).cloned()
}

/// Every server serves one model, the one the sweep asks for (where it names one): a model
/// the server does not serve fails every request of that combination.
fn model_problems(
    deployments: &[&Value],
    vars: &HashMap<String, String>,
    asked: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Option<String> = asked.map(str::to_string);
    for d in deployments {
        let served = served_model(&words(server(d), vars));
        match (&served, &seen) {
            (None, _) => out.push(format!(
                "Deployment {}: no --served-model-name, --model or `serve MODEL` names its model",
                name(d)
            )),
            (Some(m), Some(want)) if m != want => out.push(format!(
                "Deployment {} serves {m:?}, the sweep asks for {want:?}",
                name(d)
            )),
            _ => seen = seen.or(served),
        }
    }
    out
}

/// Whether container `c` reads environment variable `var` from the API key's Secret (any
/// variable, where `var` is `None`).
fn key_from_secret(c: &Value, var: Option<&str>) -> bool {
    c["env"].as_sequence().into_iter().flatten().any(|e| {
        let r = &e["valueFrom"]["secretKeyRef"];
        var.is_none_or(|v| e["name"] == v) && r["name"] == SECRET.0 && r["key"] == SECRET.1
    })
}

/// The client's key and every server's come from the one Secret key, and none is on a
/// command line (where it shows in the pod spec, in `ps` and in vLLM's logged arguments).
fn key_problems(job: &Value, deployments: &[&Value]) -> Vec<String> {
    let mut out = Vec::new();
    let client = &job["spec"]["template"]["spec"]["containers"][0];
    if !key_from_secret(client, Some("OPENAI_API_KEY")) {
        out.push(format!(
            "the Job's OPENAI_API_KEY must come from Secret {} key {}",
            SECRET.0, SECRET.1
        ));
    }
    for d in deployments {
        if !key_from_secret(server(d), None) {
            out.push(format!(
                "Deployment {}: the server's key must come from Secret {} key {}",
                name(d),
                SECRET.0,
                SECRET.1
            ));
        }
        let args = string_list(SWEEP_FILE, server(d), "args");
        if args.iter().any(|a| a.starts_with("--api-key")) {
            out.push(format!(
                "Deployment {}: the key on the command line (--api-key): read it from the environment",
                name(d)
            ));
        }
    }
    out
}

/// The sweep's `--output` lies inside a mount of a PersistentVolumeClaim of the Job (the
/// container's own file system goes with the pod).
fn output_problems(job: &Value, output: &str) -> Vec<String> {
    let pod = &job["spec"]["template"]["spec"];
    let claims: Vec<&str> = pod["volumes"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter(|v| v["persistentVolumeClaim"]["claimName"].is_string())
        .filter_map(|v| v["name"].as_str())
        .collect();
    let mounts = pod["containers"][0]["volumeMounts"].as_sequence();
    let on_volume = mounts.into_iter().flatten().any(|m| {
        let (Some(vol), Some(path)) = (m["name"].as_str(), m["mountPath"].as_str()) else {
            return false;
        };
        let base = path.trim_end_matches('/');
        claims.contains(&vol)
            && output
                .strip_prefix(base)
                .is_some_and(|r| r.starts_with('/'))
    });
    if on_volume {
        Vec::new()
    } else {
        vec![format!(
            "the sweep's --output {output:?} is not under the results volume's mount"
        )]
    }
}

/// The Job's init containers wait for every server's /health before the sweep starts: the
/// sweep over `--urls` starts nothing and measures at once. The wait reads the URLs from the
/// variable the sweep's `--urls` is (or names each URL itself).
fn wait_problems(job: &Value, urls: &[String]) -> Vec<String> {
    let pod = &job["spec"]["template"]["spec"];
    let raw = string_list(SWEEP_FILE, &pod["containers"][0], "args");
    let var = flag_value(&raw, "--urls")
        .and_then(|w| w.strip_prefix("$("))
        .and_then(|w| w.strip_suffix(')'));
    let waits = pod["initContainers"]
        .as_sequence()
        .into_iter()
        .flatten()
        .any(|c| {
            let script = string_list(SWEEP_FILE, c, "args").join("\n");
            let names_all = match var {
                Some(v) => {
                    script.contains(&format!("${v}")) || script.contains(&format!("${{{v}}}"))
                }
                None => urls.iter().all(|u| script.contains(u.as_str())),
            };
            names_all && script.contains("/health")
        });
    if waits {
        Vec::new()
    } else {
        vec!["no init container waits for every --urls server's /health".into()]
    }
}

/// What disagrees in the sweep file, in words (empty: it all agrees).
fn problems(docs: &[Value]) -> Vec<String> {
    let vars = samples(&config_map_data(docs));
    let (deployments, services) = (of_kind(docs, "Deployment"), of_kind(docs, "Service"));
    let Some(job) = of_kind(docs, "Job").into_iter().next() else {
        return vec!["no sweep Job".into()];
    };
    if deployments.len() < 2 {
        return vec![format!(
            "a sweep compares configurations: {} Deployment(s)",
            deployments.len()
        )];
    }
    let sweep = match parse_sweep(job, &vars) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let mut out = url_problems(&sweep.urls, &services);
    out.extend(selector_problems(&services, &deployments));
    for d in &deployments {
        out.extend(server_problems(d, &vars, sweep.gpus));
    }
    out.extend(model_problems(&deployments, &vars, sweep.model.as_deref()));
    out.extend(key_problems(job, &deployments));
    if job["spec"]["backoffLimit"].as_u64() != Some(0) {
        out.push("a retried sweep finds its own results directory: backoffLimit must be 0".into());
    }
    out.extend(output_problems(job, &sweep.output));
    out.extend(wait_problems(job, &sweep.urls));
    out
}

/// A claim both files declare is declared the same: the second `kubectl apply` would
/// otherwise fail on (or change) the first one's volume.
fn shared_claim_problems(sweep: &[Value], shards: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for mine in of_kind(sweep, "PersistentVolumeClaim") {
        for theirs in of_kind(shards, "PersistentVolumeClaim") {
            if name(mine) == name(theirs) && mine["spec"] != theirs["spec"] {
                out.push(format!(
                    "claim {}: sweep.yaml's spec differs from shards.yaml's",
                    name(mine)
                ));
            }
        }
    }
    out
}

#[test]
fn deploy_kubernetes_sweep_servers_services_and_job_agree() {
    let docs = yaml_documents(SWEEP_FILE);
    assert_eq!(problems(&docs), Vec::<String>::new());
    let shards = yaml_documents(SHARDS_FILE);
    assert_eq!(shared_claim_problems(&docs, &shards), Vec::<String>::new());
}

/// Index of the `n`-th document of `kind`.
fn nth(docs: &[Value], kind: &str, n: usize) -> usize {
    let at = docs.iter().enumerate().filter(|(_, d)| d["kind"] == kind);
    at.map(|(k, _)| k)
        .nth(n)
        .unwrap_or_else(|| panic!("{SWEEP_FILE}: no {kind} #{n}"))
}

/// The first container of a Deployment's or Job's pod template.
fn first_container(doc: &mut Value) -> &mut Value {
    &mut doc["spec"]["template"]["spec"]["containers"][0]
}

/// Replaces the first item of `args` equal to `from` with `to` (all of them must exist, or
/// the plant would plant nothing).
fn replace_arg(c: &mut Value, from: &str, to: &str) {
    let args = c["args"].as_sequence_mut().expect("args");
    let item = args
        .iter_mut()
        .find(|a| a.as_str() == Some(from))
        .unwrap_or_else(|| panic!("no arg {from:?} to plant over"));
    *item = Value::from(to);
}

/// Replaces `from` with `to` once in the ConfigMap's `key`.
fn edit_setting(docs: &mut [Value], key: &str, from: &str, to: &str) {
    let data = &mut docs[nth(docs, "ConfigMap", 0)]["data"][key];
    let old = data.as_str().expect("a setting").to_string();
    assert!(old.contains(from), "{key} has no {from:?} to plant over");
    *data = Value::from(old.replacen(from, to, 1));
}

/// Each planted disagreement: what it breaks, words of the problem it must be reported as,
/// and the edit.
type Plant = (&'static str, &'static str, fn(&mut Vec<Value>));
const PLANTS: [Plant; 19] = [
    (
        "wrong Service port in --urls",
        "is not Service llmib-vllm-seqs-64's",
        |d| edit_setting(d, "SWEEP_URLS", ":8000", ":8001"),
    ),
    (
        "--urls names no Service",
        "no Service named \"llmib-vllm-nope\"",
        |d| edit_setting(d, "SWEEP_URLS", "llmib-vllm-seqs-64", "llmib-vllm-nope"),
    ),
    (
        "a Service left out of --urls",
        "Service llmib-vllm-seqs-256 is not in --urls",
        |d| edit_setting(d, "SWEEP_URLS", ",http://llmib-vllm-seqs-256:8000", ""),
    ),
    (
        "selector names the other configuration",
        "Deployment llmib-vllm-seqs-64 is selected by 0 Services",
        |d| {
            let s = nth(d, "Service", 0);
            d[s]["spec"]["selector"]["app.kubernetes.io/instance"] = Value::from("vllm-seqs-256");
        },
    ),
    (
        "selector matches every configuration",
        "selector matches 2 Deployments",
        |d| {
            let s = nth(d, "Service", 0);
            let sel = d[s]["spec"]["selector"].as_mapping_mut().expect("selector");
            sel.remove("app.kubernetes.io/instance");
        },
    ),
    ("wrong targetPort", "targetPort Number(8001)", |d| {
        let s = nth(d, "Service", 1);
        d[s]["spec"]["ports"][0]["targetPort"] = Value::from(8001);
    }),
    ("probe port wrong", "the readinessProbe", |d| {
        let k = nth(d, "Deployment", 0);
        first_container(&mut d[k])["readinessProbe"]["httpGet"]["port"] = Value::from(8001);
    }),
    ("server listens elsewhere", "listens on --port 8001", |d| {
        let k = nth(d, "Deployment", 1);
        replace_arg(first_container(&mut d[k]), "8000", "8001");
    }),
    (
        "model mismatch in a Deployment",
        "serves \"Qwen/Qwen2.5-14B-Instruct\"",
        |d| {
            let k = nth(d, "Deployment", 1);
            replace_arg(
                first_container(&mut d[k]),
                "$(SERVED_MODEL)",
                "Qwen/Qwen2.5-14B-Instruct",
            );
        },
    ),
    (
        "model mismatch in the Job",
        "the sweep asks for \"other/model\"",
        |d| {
            let j = nth(d, "Job", 0);
            replace_arg(first_container(&mut d[j]), "$(SERVED_MODEL)", "other/model");
        },
    ),
    (
        "client key not from the Secret",
        "the Job's OPENAI_API_KEY must come from",
        |d| {
            let j = nth(d, "Job", 0);
            first_container(&mut d[j])["env"][0] =
                serde_norway::from_str("{name: OPENAI_API_KEY, value: sk-literal}").expect("yaml");
        },
    ),
    (
        "server key from another Secret",
        "the server's key must come from",
        |d| {
            let k = nth(d, "Deployment", 0);
            first_container(&mut d[k])["env"][0]["valueFrom"]["secretKeyRef"]["name"] =
                Value::from("other-key");
        },
    ),
    ("backoffLimit 1", "backoffLimit must be 0", |d| {
        let j = nth(d, "Job", 0);
        d[j]["spec"]["backoffLimit"] = Value::from(1);
    }),
    (
        "output outside the volume",
        "is not under the results volume",
        |d| {
            let j = nth(d, "Job", 0);
            replace_arg(
                first_container(&mut d[j]),
                "/results/$(SWEEP_NAME)",
                "/tmp/$(SWEEP_NAME)",
            );
        },
    ),
    (
        "the wait reads other URLs",
        "no init container waits",
        |d| {
            let j = nth(d, "Job", 0);
            let init = &mut d[j]["spec"]["template"]["spec"]["initContainers"][0]["args"][0];
            let script = init
                .as_str()
                .expect("script")
                .replace("$SWEEP_URLS", "$OTHER_URLS");
            *init = Value::from(script);
        },
    ),
    (
        "GPUs and --gpus disagree",
        "nvidia.com/gpu limit Some(2)",
        |d| {
            let k = nth(d, "Deployment", 0);
            first_container(&mut d[k])["resources"]["limits"]["nvidia.com/gpu"] = Value::from(2);
        },
    ),
    ("a run flag run does not have", "the run flags:", |d| {
        let j = nth(d, "Job", 0);
        replace_arg(
            first_container(&mut d[j]),
            "--no-hw-monitor",
            "--no-hw-monitr",
        );
    }),
    (
        "run settings run refuses",
        "the run flags are refused",
        |d| {
            // Without --find-capacity nothing asks for open load, which --skip-decode belongs to.
            let j = nth(d, "Job", 0);
            replace_arg(
                first_container(&mut d[j]),
                "--find-capacity",
                "--skip-decode",
            );
        },
    ),
    (
        "a run flag the sweep sets itself",
        "which the sweep sets itself",
        |d| {
            let j = nth(d, "Job", 0);
            let c = first_container(&mut d[j]);
            replace_arg(c, "--display", "--url");
            replace_arg(c, "plain", "http://elsewhere:8000");
        },
    ),
];

/// Each planted disagreement is found.
#[test]
fn deploy_kubernetes_sweep_check_finds_each_planted_disagreement() {
    let docs = yaml_documents(SWEEP_FILE);
    for (what, words, plant) in PLANTS {
        let mut d = docs.clone();
        plant(&mut d);
        assert_ne!(d, docs, "planted {what}: nothing changed");
        let found = problems(&d);
        assert!(
            found.iter().any(|p| p.contains(words)),
            "planted {what}: no problem says {words:?}, only {found:?}"
        );
    }
    let shards = yaml_documents(SHARDS_FILE);
    let mut other = shards.clone();
    let at = other
        .iter()
        .position(|d| d["kind"] == "PersistentVolumeClaim")
        .expect("shards.yaml's claim");
    other[at]["spec"]["accessModes"] = serde_norway::from_str("[ReadWriteOnce]").expect("yaml");
    assert!(
        !shared_claim_problems(&docs, &other).is_empty(),
        "planted a different claim in shards.yaml: not found"
    );
}
