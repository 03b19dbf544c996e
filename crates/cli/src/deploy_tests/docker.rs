//! The Dockerfiles (the tool's at the repository root, the hub's in `deploy/docker`) checked
//! without a Docker daemon or a registry, which the test machines do not have: each file is
//! read by a small parser (instructions, continuation lines, comments, stages) and held to the
//! rules an image of this binary must keep. The final stage runs as a user that is not root;
//! the only thing it takes from the builder is the binary; the build uses `--locked`; the
//! entrypoint is the binary; every flag its entrypoint and command pass is one the binary
//! accepts (parsed by [`Cli`](crate::Cli) through the deploy tests' own check); and
//! the hub's EXPOSE port is the port its `--listen` names. Each rule is proved by planting a
//! violation in the parsed text and seeing it fail.

use super::{BIN, Invocation, check_parses, read, samples};

/// The Dockerfiles, relative to the repository root.
const TOOL: &str = "Dockerfile";
const HUB: &str = "deploy/docker/hub.Dockerfile";

/// One instruction of a Dockerfile, its continuation lines joined.
#[derive(Debug, Clone)]
struct Instruction {
    /// Where it starts (1-based).
    line: usize,
    /// The keyword, upper case (`FROM`, `RUN`, `COPY`, …).
    keyword: String,
    /// The rest, continuation backslashes removed and lines joined by a space.
    args: String,
}

/// One build stage: its `FROM` and the instructions under it.
#[derive(Debug, Clone)]
struct Stage {
    /// The `AS` name, if any.
    name: Option<String>,
    /// The instructions after `FROM`.
    body: Vec<Instruction>,
}

/// The instructions of `text`: comment and blank lines dropped (inside a continuation too, as
/// Docker does), a line ending in `\` continued on the next.
fn instructions(text: &str) -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (k, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (body, continued) = match trimmed.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (trimmed, false),
        };
        let (line, mut acc) = pending.take().unwrap_or((k + 1, String::new()));
        if !acc.is_empty() {
            acc.push(' ');
        }
        acc.push_str(body);
        if continued {
            pending = Some((line, acc));
            continue;
        }
        let (keyword, args) = acc.split_once(char::is_whitespace).unwrap_or((&acc, ""));
        out.push(Instruction {
            line,
            keyword: keyword.to_ascii_uppercase(),
            args: args.trim().to_string(),
        });
    }
    out
}

/// The stages of `text`, in order.
fn stages(text: &str) -> Vec<Stage> {
    let mut out: Vec<Stage> = Vec::new();
    for i in instructions(text) {
        if i.keyword == "FROM" {
            let words: Vec<&str> = i.args.split_whitespace().collect();
            let name = match words.as_slice() {
                [_, as_, name] if as_.eq_ignore_ascii_case("as") => Some(name.to_string()),
                _ => None,
            };
            out.push(Stage {
                name,
                body: Vec::new(),
            });
        } else if let Some(stage) = out.last_mut() {
            stage.body.push(i);
        }
    }
    out
}

/// An exec-form (JSON array) instruction's words, or `None` for the shell form.
fn exec_form(args: &str) -> Option<Vec<String>> {
    serde_json::from_str(args).ok()
}

/// The last `keyword` instruction of `stage`.
fn last<'a>(stage: &'a Stage, keyword: &str) -> Option<&'a Instruction> {
    stage.body.iter().rev().find(|i| i.keyword == keyword)
}

/// The binary's path in the builder: its last `WORKDIR`, then cargo's release folder.
fn builder_binary(builder: &Stage) -> String {
    let dir = last(builder, "WORKDIR").map_or("/", |i| i.args.as_str());
    format!("{}/target/release/{BIN}", dir.trim_end_matches('/'))
}

/// What breaks the rules in the Dockerfile `text` (empty: none). The flags are checked apart,
/// by [`check_invocation`].
fn problems(text: &str) -> Vec<String> {
    let stages = stages(text);
    let (Some(runtime), Some(builder)) = (stages.last(), stages.first()) else {
        return vec!["no FROM".into()];
    };
    if stages.len() < 2 {
        return vec!["one stage: the image would carry the toolchain".into()];
    }
    let mut out = Vec::new();
    let builds: Vec<&Instruction> = builder
        .body
        .iter()
        .filter(|i| i.keyword == "RUN" && i.args.contains("cargo build"))
        .collect();
    if builds.is_empty() {
        out.push("the builder runs no `cargo build`".into());
    }
    for b in &builds {
        let words: Vec<&str> = b.args.split_whitespace().collect();
        for flag in ["--locked", "--release"] {
            if !words.contains(&flag) {
                out.push(format!("line {}: `cargo build` without {flag}", b.line));
            }
        }
    }
    match last(runtime, "USER").map(|u| u.args.split(':').next().unwrap_or("").trim()) {
        None => out.push("the final stage has no USER: it would run as root".into()),
        Some(u) if u.is_empty() || u == "root" || u == "0" => {
            out.push(format!("the final stage runs as `{u}`"));
        }
        Some(_) => {}
    }
    out.extend(copy_problems(runtime, builder));
    match last(runtime, "ENTRYPOINT").map(|e| exec_form(&e.args)) {
        Some(Some(words)) if words == [BIN] => {}
        other => out.push(format!("the ENTRYPOINT must be [\"{BIN}\"], not {other:?}")),
    }
    out
}

/// What the final stage takes besides the binary: its only COPY must be the builder's binary.
fn copy_problems(runtime: &Stage, builder: &Stage) -> Vec<String> {
    let from = format!("--from={}", builder.name.as_deref().unwrap_or("0"));
    let binary = builder_binary(builder);
    let copies: Vec<&Instruction> = runtime
        .body
        .iter()
        .filter(|i| i.keyword == "COPY" || i.keyword == "ADD")
        .collect();
    let mut out = Vec::new();
    for c in &copies {
        let words: Vec<&str> = c.args.split_whitespace().collect();
        let ok = c.keyword == "COPY"
            && matches!(words.as_slice(), [f, src, dest]
                if *f == from && *src == binary && dest.starts_with('/'));
        if !ok {
            out.push(format!(
                "line {}: the final stage may copy only `{from} {binary}`, not `{} {}`",
                c.line, c.keyword, c.args
            ));
        }
    }
    if copies.is_empty() {
        out.push(format!("the final stage does not copy {binary}"));
    }
    out
}

/// The command the image runs by default: its ENTRYPOINT's words, then its CMD's.
fn default_command(file: &str, text: &str) -> Invocation {
    let stages = stages(text);
    let runtime = stages.last().expect("a stage");
    let mut argv = Vec::new();
    let mut word_places = Vec::new();
    for keyword in ["ENTRYPOINT", "CMD"] {
        if let Some(i) = last(runtime, keyword) {
            let words = exec_form(&i.args)
                .unwrap_or_else(|| panic!("{file} line {}: {keyword} is not exec form", i.line));
            word_places.extend(words.iter().map(|_| format!("line {}", i.line)));
            argv.extend(words);
        }
    }
    Invocation {
        file: file.to_string(),
        place: "ENTRYPOINT + CMD".into(),
        argv,
        word_places,
    }
}

/// `inv` parsed by the binary's own command line, as the deploy files' invocations are; a
/// bare request for help or the version (the tool's default CMD) is accepted as it is.
fn check_invocation(inv: &Invocation) {
    let help = ["--help", "-h", "--version", "-V"];
    if inv.argv.len() == 2 && help.contains(&inv.argv[1].as_str()) {
        return;
    }
    check_parses(inv, &samples(&[]), &[]);
}

/// The port of the hub's `--listen` in `inv`, and the ports the file's final stage EXPOSEs.
fn hub_ports(text: &str, inv: &Invocation) -> (Option<String>, Vec<String>) {
    let listen = inv
        .argv
        .windows(2)
        .find(|w| w[0] == "--listen")
        .map(|w| w[1].clone())
        .or_else(|| {
            inv.argv
                .iter()
                .find_map(|a| a.strip_prefix("--listen=").map(str::to_string))
        });
    let port = listen.and_then(|l| l.rsplit_once(':').map(|(_, p)| p.to_string()));
    let stages = stages(text);
    let exposed = stages
        .last()
        .map(|s| {
            s.body
                .iter()
                .filter(|i| i.keyword == "EXPOSE")
                .flat_map(|i| i.args.split_whitespace())
                .map(|p| p.split('/').next().unwrap_or(p).to_string())
                .collect()
        })
        .unwrap_or_default();
    (port, exposed)
}

/// Whether the hub's `--listen` port is the one port its final stage EXPOSEs.
fn hub_port_problem(text: &str) -> Option<String> {
    let inv = default_command(HUB, text);
    match hub_ports(text, &inv) {
        (Some(port), exposed) if exposed == [port.clone()] => None,
        (port, exposed) => Some(format!("--listen port {port:?}, EXPOSE {exposed:?}")),
    }
}

#[test]
fn deploy_docker_parser_joins_continuations_and_splits_stages() {
    let text = "# c\nFROM a AS b\nRUN x \\\n  # inside\n  && y\n\nfrom c\ncopy --from=b /p /q\n";
    let all = instructions(text);
    let kinds: Vec<(usize, &str, &str)> = all
        .iter()
        .map(|i| (i.line, i.keyword.as_str(), i.args.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (2, "FROM", "a AS b"),
            (3, "RUN", "x && y"),
            (7, "FROM", "c"),
            (8, "COPY", "--from=b /p /q")
        ]
    );
    let s = stages(text);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].name.as_deref(), Some("b"));
    assert_eq!(s[1].body.len(), 1);
}

#[test]
fn deploy_dockerfiles_keep_the_image_rules() {
    for file in [TOOL, HUB] {
        let text = read(file);
        let found = problems(&text);
        assert!(found.is_empty(), "{file}: {found:#?}");
        let inv = default_command(file, &text);
        assert_eq!(inv.argv.first().map(String::as_str), Some(BIN), "{file}");
        check_invocation(&inv);
    }
    let hub = read(HUB);
    assert_eq!(hub_port_problem(&hub), None, "{HUB}");
    let inv = default_command(HUB, &hub);
    assert_eq!(
        inv.argv.get(1..3),
        Some(&["hub".into(), "serve".into()][..])
    );
    assert!(
        inv.argv.iter().any(|a| a.starts_with("/data/")) && hub.contains("VOLUME /data"),
        "{HUB}: the database must live on the /data volume: {:?}",
        inv.argv
    );
}

/// `text` with `from` replaced by `to`, which must be there.
fn plant(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "nothing to plant: `{from}` is not in the file"
    );
    text.replacen(from, to, 1)
}

#[test]
fn deploy_docker_check_refuses_planted_violations() {
    let copy = format!("COPY --from=builder /src/target/release/{BIN} /usr/local/bin/{BIN}");
    let entry = format!("ENTRYPOINT [\"{BIN}\"]");
    for file in [TOOL, HUB] {
        let text = read(file);
        let planted = [
            ("root user", plant(&text, "USER 10001:10001", "USER root")),
            ("uid 0", plant(&text, "USER 10001:10001", "USER 0:0")),
            ("no user", plant(&text, "USER 10001:10001", "")),
            (
                "no --locked",
                plant(
                    &text,
                    "cargo build --release --locked",
                    "cargo build --release",
                ),
            ),
            (
                "a folder copied",
                plant(&text, &copy, &copy.replace(&format!("/{BIN} "), " ")),
            ),
            (
                "the context copied",
                plant(&text, &copy, &format!("{copy}\nCOPY . /src")),
            ),
            (
                "a second file",
                plant(&text, &copy, &format!("{copy}\nADD x.tar /")),
            ),
            ("no binary", plant(&text, &copy, "")),
            (
                "a shell entrypoint",
                plant(&text, &entry, "ENTRYPOINT [\"sh\", \"-c\"]"),
            ),
            (
                "a shell-form entrypoint",
                plant(&text, &entry, &format!("ENTRYPOINT {BIN}")),
            ),
            ("one stage", plant(&text, "FROM debian:bookworm-slim", "")),
        ];
        for (what, bad) in planted {
            assert!(!problems(&bad).is_empty(), "{file}: {what} was not caught");
        }
    }
}

#[test]
fn deploy_docker_check_refuses_planted_flags_and_ports() {
    let hub = read(HUB);
    let flags = [
        plant(&hub, "\"--listen\"", "\"--listen-on\""),
        plant(&hub, "\"serve\"", "\"serv\""),
        plant(
            &hub,
            "\"--db\", \"/data/hub.db\"",
            "\"--data\", \"/data/hub.db\"",
        ),
    ];
    for bad in flags {
        let inv = default_command(HUB, &bad);
        let caught = std::panic::catch_unwind(|| check_invocation(&inv));
        assert!(caught.is_err(), "{:?} was not refused", inv.argv);
    }
    let tool = plant(&read(TOOL), "CMD [\"--help\"]", "CMD [\"--halp\"]");
    let inv = default_command(TOOL, &tool);
    assert!(std::panic::catch_unwind(|| check_invocation(&inv)).is_err());
    for (what, bad) in [
        ("another EXPOSE", plant(&hub, "EXPOSE 8080", "EXPOSE 9090")),
        ("no EXPOSE", plant(&hub, "EXPOSE 8080", "")),
        (
            "a second EXPOSE",
            plant(&hub, "EXPOSE 8080", "EXPOSE 8080 9090"),
        ),
        (
            "another --listen",
            plant(&hub, "0.0.0.0:8080", "0.0.0.0:8081"),
        ),
    ] {
        assert!(
            hub_port_problem(&bad).is_some(),
            "{HUB}: {what} was not caught"
        );
    }
}
