//! The deployment files (`deploy/kubernetes`, `deploy/slurm`) checked against this binary's
//! own command line: every `llm-inference-bench` invocation they hold is found (a container's
//! command and args, a `sh -c` script, a Slurm script's `srun` line), rendered with sample
//! values for its variables, and parsed by [`Cli`] exactly as the binary would. A flag that
//! was renamed or removed, a value the parser refuses, or a sharded run the shard rules refuse
//! fails here with the file and the line, instead of on a cluster at the start instant.
//!
//! Why a small shell splitter rather than running the scripts: the scripts call `srun` and
//! `sbatch`, which a developer's machine does not have; what matters is the words the binary
//! would receive, and those follow from POSIX quoting, which the splitter implements for the
//! forms the files use (quotes, backslash escapes and continuations, comments, operators).

use super::{Cli, Command};
use clap::Parser;
use serde_norway::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod docker;
mod kubernetes;
mod kubernetes_sweep;

/// The Kubernetes files, relative to the repository root.
const KUBERNETES: &[&str] = &[
    "deploy/kubernetes/shards.yaml",
    "deploy/kubernetes/merge-job.yaml",
    "deploy/kubernetes/secret.example.yaml",
    "deploy/kubernetes/hub.yaml",
    "deploy/kubernetes/sweep.yaml",
];

/// The Slurm scripts, relative to the repository root.
const SLURM: &[&str] = &[
    "deploy/slurm/shards.sbatch",
    "deploy/slurm/merge.sbatch",
    "deploy/slurm/submit.sh",
];

/// The binary's name as the files call it.
const BIN: &str = "llm-inference-bench";

/// A valid start instant for every `$START_AT`.
const SAMPLE_START_AT: &str = "2026-12-04T23:00:00Z";

/// One word or shell operator of a script, with the line it starts on (1-based).
#[derive(Debug, Clone, PartialEq)]
struct Token {
    /// The word with its quotes removed, or the operator.
    text: String,
    /// An operator (`;`, `&`, `|`, `(`, `)`, or a newline): it ends a command.
    op: bool,
    /// Where it starts.
    line: usize,
}

/// One `llm-inference-bench` invocation found in a deploy file.
#[derive(Debug, Clone)]
struct Invocation {
    /// The file, relative to the repository root.
    file: String,
    /// Where it is: the source line (or the container's name), for the failure message.
    place: String,
    /// The words, the binary's name first, variables not yet rendered.
    argv: Vec<String>,
    /// Where each word is (its source line, or its item of `args`), to name the offending one.
    word_places: Vec<String>,
}

/// The repository root (the crate is `crates/cli`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A deploy file's text.
fn read(rel: &str) -> String {
    let path = repo_root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

/// Appends the `$…` expansion that starts at `chars[*i]` (a `$(` or `${`) to `word` verbatim
/// through its matching close, so that a `$(VAR)` is one word and not an operator.
fn copy_expansion(chars: &[char], i: &mut usize, word: &mut String) {
    let (open, close) = if chars[*i + 1] == '(' {
        ('(', ')')
    } else {
        ('{', '}')
    };
    let mut depth = 0;
    while *i < chars.len() {
        let c = chars[*i];
        word.push(c);
        *i += 1;
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return;
            }
        }
    }
}

/// Splits a shell script into words and operators as POSIX `sh` would before expansion:
/// quotes removed, backslash escapes and line continuations applied, comments dropped,
/// `$(…)`/`${…}` kept whole for [`render`]. Errors on an unterminated quote.
fn split_words(script: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = script.chars().collect();
    // line_at[i]: the line of chars[i], so that a token knows where it started.
    let mut line_at = Vec::with_capacity(chars.len());
    let mut line = 1;
    for &c in &chars {
        line_at.push(line);
        line += usize::from(c == '\n');
    }
    let mut out = Vec::new();
    // The word being read and its line; `Some` from its first character or quote on, so
    // that `""` is an (empty) word.
    let mut word: Option<(String, usize)> = None;
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        let here = line_at[i];
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') if matches!(next, Some('$' | '`' | '"' | '\\' | '\n')) => {
                let w = &mut word.get_or_insert_with(|| (String::new(), here)).0;
                w.extend(next.filter(|&n| n != '\n'));
                i += 1;
            }
            (_, '$') if quote != Some('\'') && matches!(next, Some('(' | '{')) => {
                let w = &mut word.get_or_insert_with(|| (String::new(), here)).0;
                copy_expansion(&chars, &mut i, w);
                continue;
            }
            (Some(_), _) => word.get_or_insert_with(|| (String::new(), here)).0.push(c),
            // A backslash-newline joins two lines; any other escaped character is literal.
            (None, '\\') if next == Some('\n') => i += 1,
            (None, '\\') => {
                let w = &mut word.get_or_insert_with(|| (String::new(), here)).0;
                w.extend(next);
                i += 1;
            }
            (None, '\'' | '"') => {
                word.get_or_insert_with(|| (String::new(), here));
                quote = Some(c);
            }
            (None, '#') if word.is_none() => {
                while i + 1 < chars.len() && chars[i + 1] != '\n' {
                    i += 1;
                }
            }
            (None, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')') => {
                if let Some((text, line)) = word.take() {
                    out.push(Token {
                        text,
                        op: false,
                        line,
                    });
                }
                if !matches!(c, ' ' | '\t') {
                    out.push(Token {
                        text: c.to_string(),
                        op: true,
                        line: here,
                    });
                }
            }
            (None, _) => word.get_or_insert_with(|| (String::new(), here)).0.push(c),
        }
        i += 1;
    }
    if let Some(q) = quote {
        return Err(format!("unterminated {q} quote"));
    }
    if let Some((text, line)) = word {
        out.push(Token {
            text,
            op: false,
            line,
        });
    }
    Ok(out)
}

/// Every `llm-inference-bench …` command in `script` (after `srun`, `exec` or anything else),
/// up to the operator that ends it. `line0` is the script's first line in `file`.
fn invocations_in_script(file: &str, script: &str, line0: usize) -> Vec<Invocation> {
    let tokens = split_words(script).unwrap_or_else(|e| panic!("{file}: cannot split: {e}"));
    let lines: Vec<&str> = script.lines().collect();
    let mut found = Vec::new();
    for (k, t) in tokens.iter().enumerate() {
        if t.op || !(t.text == BIN || t.text.ends_with(&format!("/{BIN}"))) {
            continue;
        }
        let words: Vec<&Token> = tokens[k..].iter().take_while(|t| !t.op).collect();
        let place = |line: usize| {
            let source = lines.get(line - 1).map_or("", |l| l.trim());
            format!("line {}: {source}", line0 + line - 1)
        };
        found.push(Invocation {
            file: file.to_string(),
            place: place(t.line),
            argv: words.iter().map(|t| t.text.clone()).collect(),
            word_places: words.iter().map(|t| place(t.line)).collect(),
        });
    }
    found
}

/// A variable's name at the start of `s`: `[A-Za-z_][A-Za-z0-9_]*`.
fn name_len(s: &str) -> usize {
    let ok = |(k, c): &(usize, char)| {
        c.is_ascii_alphabetic() || *c == '_' || (*k > 0 && c.is_ascii_digit())
    };
    s.char_indices().take_while(ok).count()
}

/// `word` with each `$NAME`, `${NAME}`, `${NAME[@]}`, `${NAME:-default}` (shell) and
/// `$(NAME)` (Kubernetes) replaced from `vars`; an unknown name or any other expansion (a
/// command substitution, arithmetic) is an error, so that nothing reaches the parser
/// unrendered.
fn render(word: &str, vars: &HashMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (inner, used) = if let Some(t) = tail.strip_prefix('{') {
            let end = t
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in `{word}`"))?;
            (&t[..end], end + 2)
        } else if let Some(t) = tail.strip_prefix('(') {
            let end = t
                .find(')')
                .ok_or_else(|| format!("unclosed $( in `{word}`"))?;
            (&t[..end], end + 2)
        } else {
            let n = name_len(tail);
            (&tail[..n], n)
        };
        let n = name_len(inner);
        let (name, after) = inner.split_at(n);
        let value = match (vars.get(name), after) {
            (_, _) if n == 0 => Err(format!("cannot render `${inner}` in `{word}`")),
            (Some(v), "" | "[@]") => Ok(v.clone()),
            (Some(v), a) if a.starts_with(":-") => Ok(v.clone()),
            (None, a) if a.starts_with(":-") => Ok(a[2..].to_string()),
            (None, "" | "[@]") => Err(format!("no sample value for ${name} in `{word}`")),
            _ => Err(format!("cannot render `${inner}` in `{word}`")),
        }?;
        out.push_str(&value);
        rest = &tail[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The sample values every file may use, with `extra` on top (a ConfigMap's data, a
/// script's defaults).
fn samples(extra: &[(String, String)]) -> HashMap<String, String> {
    let base = [
        ("START_AT", SAMPLE_START_AT),
        ("JOB_COMPLETION_INDEX", "0"),
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SHARDS", "4"),
        ("LLMIB_URL", "http://gpu-node-1:8000"),
        ("RESULTS", "results"),
        // The hub's database, from its Secret.
        ("LLMIB_HUB_DB", "/data/hub.db"),
        // A loop's variable and the merge's list of shard directories: one word suffices
        // for the parser.
        ("i", "0"),
        ("dirs", "results/shard-0"),
    ];
    let mut vars: HashMap<String, String> = base
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    vars.extend(extra.iter().cloned());
    vars
}

/// Parses `inv` rendered with `vars` as the binary would, and a sharded run's shard rules
/// with `env` as the job engine's environment; panics naming the file and the line.
fn check_parses(inv: &Invocation, vars: &HashMap<String, String>, env: &[(&str, &str)]) -> Cli {
    let at = format!("{} ({})", inv.file, inv.place);
    let argv: Vec<String> = inv
        .argv
        .iter()
        .map(|w| render(w, vars).unwrap_or_else(|e| panic!("{at}: {e}")))
        .collect();
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| {
        let line = offending_place(inv, &argv, &e);
        panic!("{at}: the binary refuses {line}:\n{e}\nall words: {argv:?}")
    });
    assert!(
        !argv.iter().any(|a| a.starts_with("--api-key")),
        "{at}: the API key belongs in OPENAI_API_KEY, not on the command line"
    );
    if let Command::Run(args) = &cli.command {
        let lookup = |k: &str| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let sharded = args
            .sharded(&lookup)
            .unwrap_or_else(|e| panic!("{at}: the shard rules refuse {argv:?}: {e:#}"));
        assert!(
            sharded.is_some(),
            "{at}: a deploy file's run must be a shard (--shard)"
        );
    }
    // The same path must refuse a flag the binary does not have, or it checks nothing.
    let mut wrong = argv.clone();
    wrong.insert(2.min(wrong.len()), "--shard-typo".to_string());
    let e = Cli::try_parse_from(&wrong).expect_err("--shard-typo was accepted");
    assert_eq!(
        e.kind(),
        clap::error::ErrorKind::UnknownArgument,
        "{at}: --shard-typo: {e}"
    );
    cli
}

/// Where the word that clap's error `e` names is: its source line, or the invocation's
/// place where the error names no word of it.
fn offending_place(inv: &Invocation, argv: &[String], e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let named = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(a)) => a.split_whitespace().next().unwrap_or_default(),
        _ => "",
    };
    let k = argv
        .iter()
        .position(|w| !named.is_empty() && (w == named || w.starts_with(&format!("{named}="))));
    match k.and_then(|k| inv.word_places.get(k)) {
        Some(place) => format!("`{named}` at {place}"),
        None => format!("the command at {}", inv.place),
    }
}

/// Whether `argv` holds `--shard auto` (or `--shard=auto`) and a `--start-at`.
fn is_auto_shard(argv: &[String]) -> bool {
    let auto = argv.windows(2).any(|w| w[0] == "--shard" && w[1] == "auto")
        || argv.iter().any(|a| a == "--shard=auto");
    auto && argv
        .iter()
        .any(|a| a == "--start-at" || a.starts_with("--start-at="))
}

/// `bash -n` on a script: its syntax, as the shell that runs it reads it.
fn bash_syntax(what: &str, script: &str) {
    let out = std::process::Command::new("bash")
        .args(["-n", "-c", script])
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash -n for {what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: bash -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every YAML document of a Kubernetes file (empty ones, a leading comment, dropped).
fn yaml_documents(rel: &str) -> Vec<Value> {
    let text = read(rel);
    let mut docs = Vec::new();
    for (k, doc) in serde_norway::Deserializer::from_str(&text).enumerate() {
        let value = <Value as serde::Deserialize>::deserialize(doc)
            .unwrap_or_else(|e| panic!("{rel}: document {k} is not YAML: {e}"));
        if !value.is_null() {
            docs.push(value);
        }
    }
    assert!(!docs.is_empty(), "{rel}: no YAML document");
    docs
}

/// Every container (and init container) anywhere in a document.
fn containers(v: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    match v {
        Value::Mapping(m) => {
            for (k, child) in m {
                let key = k.as_str().unwrap_or_default();
                match (key, child) {
                    ("containers" | "initContainers", Value::Sequence(s)) => out.extend(s),
                    _ => out.extend(containers(child)),
                }
            }
        }
        Value::Sequence(s) => s.iter().for_each(|c| out.extend(containers(c))),
        _ => {}
    }
    out
}

/// A container's `command` or `args` as strings (Kubernetes takes only strings there).
fn string_list(rel: &str, c: &Value, key: &str) -> Vec<String> {
    let Some(list) = c.get(key) else {
        return Vec::new();
    };
    let seq = list
        .as_sequence()
        .unwrap_or_else(|| panic!("{rel}: {key} is not a list"));
    seq.iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("{rel}: {key} item {v:?} is not a string"))
                .to_string()
        })
        .collect()
}

/// The invocations in a container: its command + args when the command is the binary, or
/// the `llm-inference-bench` lines of a `sh -c` / `bash -c` script (checked with `bash -n`).
fn container_invocations(rel: &str, c: &Value) -> Vec<Invocation> {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
    let words: Vec<String> = [string_list(rel, c, "command"), string_list(rel, c, "args")].concat();
    let is_shell = |w: &str| w.ends_with("/sh") || w.ends_with("/bash") || w == "sh" || w == "bash";
    match words.as_slice() {
        [first, ..] if first == BIN || first.ends_with(&format!("/{BIN}")) => vec![Invocation {
            file: rel.to_string(),
            place: format!("container {name}"),
            argv: words.clone(),
            word_places: (0..words.len())
                .map(|k| format!("container {name}, command + args item {k}"))
                .collect(),
        }],
        [shell, flag, script, ..] if is_shell(shell) && flag == "-c" => {
            bash_syntax(&format!("{rel}: container {name}"), script);
            invocations_in_script(rel, script, 1)
                .into_iter()
                .map(|mut inv| {
                    inv.place = format!("container {name}, script {}", inv.place);
                    for p in &mut inv.word_places {
                        *p = format!("container {name}, script {p}");
                    }
                    inv
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The data of every ConfigMap in the documents, as sample values.
fn config_map_data(docs: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in docs
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("ConfigMap"))
    {
        let Some(Value::Mapping(data)) = d.get("data") else {
            continue;
        };
        for (k, v) in data {
            let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                panic!("ConfigMap data {k:?}: {v:?} must be strings");
            };
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// A script's `NAME="${NAME:-default}"` lines, as sample values (what the script runs with
/// when the caller sets nothing).
fn script_defaults(script: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in script.lines() {
        let Some((name, value)) = line.trim().split_once('=') else {
            continue;
        };
        let prefix = format!("\"${{{name}:-");
        if let Some(default) = value
            .strip_prefix(&prefix)
            .and_then(|v| v.strip_suffix("}\""))
        {
            out.push((name.to_string(), default.to_string()));
        }
    }
    out
}

#[test]
fn deploy_splitter_follows_shell_quoting() {
    let words = |s: &str| -> Vec<String> {
        split_words(s)
            .expect("splits")
            .into_iter()
            .map(|t| {
                if t.op {
                    format!("<{}>", t.text.escape_default())
                } else {
                    t.text
                }
            })
            .collect()
    };
    assert_eq!(
        words("srun a \\\n  --x \"$V\" 'q w' \"\" e\\ f # note\nnext;b"),
        [
            "srun", "a", "--x", "$V", "q w", "", "e f", "<\\n>", "next", "<;>", "b"
        ]
    );
    assert_eq!(
        words("x $(A) \"${B:-c d}\"&&y"),
        ["x", "$(A)", "${B:-c d}", "<&>", "<&>", "y"]
    );
    assert!(split_words("a 'b").is_err());
    let lines: Vec<usize> = split_words("a \\\nb\nc")
        .expect("splits")
        .iter()
        .map(|t| t.line)
        .collect();
    assert_eq!(lines, [1, 2, 2, 3]);
    let vars = samples(&[("X".into(), "1".into())]);
    assert_eq!(
        render("a$X-${X}/$(X)${Y:-z}", &vars).expect("renders"),
        "a1-1/1z"
    );
    assert!(render("$(date)", &vars).is_err());
    assert!(render("$NOPE", &vars).is_err());
}

#[test]
fn deploy_kubernetes_manifests_name_only_flags_the_binary_accepts() {
    let docs: Vec<(&str, Vec<Value>)> =
        KUBERNETES.iter().map(|f| (*f, yaml_documents(f))).collect();
    let all: Vec<Value> = docs.iter().flat_map(|(_, d)| d.iter().cloned()).collect();
    let vars = samples(&config_map_data(&all));
    let env = [
        ("JOB_COMPLETION_INDEX", "0"),
        ("SHARDS", vars["SHARDS"].as_str()),
    ];
    let mut invocations = Vec::new();
    for (rel, file_docs) in &docs {
        for c in file_docs.iter().flat_map(containers) {
            invocations.extend(container_invocations(rel, c));
        }
    }
    let mut subcommands = Vec::new();
    for inv in &invocations {
        check_parses(inv, &vars, &env);
        subcommands.push(inv.argv.get(1).cloned().unwrap_or_default());
    }
    assert!(
        invocations
            .iter()
            .any(|i| i.argv[1] == "run" && is_auto_shard(&i.argv)),
        "deploy/kubernetes: no `run --shard auto --start-at …` among {subcommands:?}"
    );
    assert!(
        subcommands.iter().any(|s| s == "merge"),
        "deploy/kubernetes: no merge Job"
    );
    assert!(
        invocations
            .iter()
            .any(|i| i.argv.get(1..3) == Some(&["hub".to_string(), "serve".to_string()][..])),
        "deploy/kubernetes: no `hub serve` Deployment"
    );
}

#[test]
fn deploy_slurm_scripts_name_only_flags_the_binary_accepts() {
    let env = [
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ];
    let mut invocations = Vec::new();
    for rel in SLURM {
        let script = read(rel);
        bash_syntax(rel, &script);
        let vars = samples(&script_defaults(&script));
        for inv in invocations_in_script(rel, &script, 1) {
            check_parses(&inv, &vars, &env);
            invocations.push(inv);
        }
    }
    assert!(
        invocations
            .iter()
            .any(|i| i.argv[1] == "run" && is_auto_shard(&i.argv)),
        "deploy/slurm: no `run --shard auto --start-at …`"
    );
    assert!(
        invocations.iter().any(|i| i.argv[1] == "merge"),
        "deploy/slurm: no merge"
    );
    let shards = read("deploy/slurm/shards.sbatch");
    assert!(
        shards.contains("#SBATCH --array="),
        "shards.sbatch: no array"
    );
    let submit = read("deploy/slurm/submit.sh");
    assert!(
        submit.contains("--dependency=\"afterok:$array_id\""),
        "submit.sh must hold the merge until every shard succeeded"
    );
}

#[test]
fn deploy_check_refuses_a_wrong_flag_and_a_wrong_value() {
    let vars = samples(&[]);
    let inv = |argv: &[&str]| Invocation {
        file: "test".into(),
        place: "here".into(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        word_places: argv.iter().map(|_| "here".to_string()).collect(),
    };
    let env = [("JOB_COMPLETION_INDEX", "0")];
    let good = [
        "llm-inference-bench",
        "run",
        "--shard",
        "auto",
        "--shards",
        "$SHARDS",
    ];
    let good = [
        &good[..],
        &["--start-at", "$START_AT", "--url", "$LLMIB_URL"],
    ]
    .concat();
    check_parses(&inv(&good), &vars, &env);
    for bad in [
        &["--shard-typo", "1"][..],
        &["--duration", "soon"],
        &["--find-capacity"],
    ] {
        let argv = [&good[..], bad].concat();
        let caught = std::panic::catch_unwind(|| check_parses(&inv(&argv), &vars, &env));
        assert!(caught.is_err(), "{bad:?} was not refused");
    }
}
