//! The `llm-inference-bench` binary: parses arguments, calls one library function per command
//! and maps the outcome to an exit code. Everything else lives in the library crates.

#[macro_use]
mod say;
mod commands;
mod config;
mod live;
mod sweep;

use clap::{CommandFactory, Parser, Subcommand};

use llmib_core::{redact_text, sanitize_terminal, terminal_line};
use std::process::ExitCode;

/// Measures an LLM inference server: prefill per context and sustained decode per
/// context × concurrency, with statuses, as a speed test matrix.
#[derive(Debug, Parser)]
#[command(name = "llm-inference-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the speed test matrix of a running server.
    Run(Box<commands::upload::RunCommandArgs>),
    /// Run the full default matrix against the built-in simulator (no GPU needed).
    Demo(commands::run::DemoArgs),
    /// Serve the built-in simulated inference engine.
    Sim(commands::sim::SimArgs),
    /// Render a results directory as HTML, Markdown, CSV or JSON.
    Report(commands::report::ReportArgs),
    /// Set two or more runs side by side, with per-cell ratios to the first (two eval runs:
    /// paired by item, with the McNemar test).
    Compare(commands::report::CompareArgs),
    /// Score an accuracy profile (GSM8K, MMLU-Pro, GPQA Diamond) against a server.
    Eval(Box<commands::eval::EvalArgs>),
    /// Merge the results of a run's shards (`run --shard I/N` on several client machines)
    /// into one results directory, figures recomputed from every shard's requests.
    Merge(commands::merge::MergeArgs),
    /// Turn another tool's result files (`vllm:FILE`) into a results directory.
    Import(commands::import::ImportArgs),
    /// The results hub: serve it (runs from many machines, listed, shown and compared in a
    /// browser), and manage its upload tokens.
    Hub(commands::hub::HubArgs),
    /// Upload results directories to a hub.
    Upload(commands::upload::UploadArgs),
    /// Start the server in each configuration of a grid, measure each with the same `run`
    /// flags (after `--`), stop it, and report which serves best: a table, the Pareto frontier
    /// of tok/s per GPU against tok/s per user, and the best at each SLO.
    Sweep(Box<commands::sweep::SweepArgs>),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(commands::completions::CompletionsArgs),
    /// Print the man page (roff) to stdout, or write one page per command with `--output DIR`.
    Man(commands::completions::ManArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A value its parser refused (`--duration 99…9`, `--contexts 8Q`, `--profile nope`) is
        // bad input like any other: one line (with the possible values, where clap lists
        // them) and exit code 1, as the run's own checks give.
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
            ) =>
        {
            let text = e.to_string();
            let line: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect();
            errln!("{}", sanitize_terminal(&line.join(" ")));
            return ExitCode::from(1);
        }
        Err(e) => e.exit(),
    };
    // The hub opens its store before any runtime exists (the PostgreSQL client is blocking).
    let command = match cli.command {
        Command::Hub(a) => return finish(commands::hub::run(a)),
        other => other,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = rt.block_on(async move {
        match command {
            Command::Run(a) => commands::upload::run(*a).await,
            Command::Upload(a) => sweep::upload::upload(a).await,
            // Returned above, before the runtime was built.
            Command::Hub(_) => unreachable!("hub commands run outside the runtime"),
            Command::Demo(a) => commands::run::demo(a).await,
            Command::Sim(a) => commands::sim::run(a).await.map(|_| commands::run::Exit::Ok),
            Command::Report(a) => commands::report::run(a).map(|_| commands::run::Exit::Ok),
            Command::Eval(a) => commands::eval::run(*a)
                .await
                .map(|_| commands::run::Exit::Ok),
            Command::Merge(a) => commands::merge::run(a).map(|_| commands::run::Exit::Ok),
            Command::Import(a) => commands::import::run(a).map(|_| commands::run::Exit::Ok),
            Command::Compare(a) => {
                commands::report::run_compare(a).map(|_| commands::run::Exit::Ok)
            }
            Command::Sweep(a) => commands::sweep::run(*a).await,
            Command::Completions(a) => commands::completions::completions(&a, Cli::command()),
            Command::Man(a) => commands::completions::man(&a, Cli::command()),
        }
    });
    finish(result)
}

/// The exit code of a command's result; an error is printed first, as one redacted line.
fn finish(result: anyhow::Result<commands::run::Exit>) -> ExitCode {
    match result {
        Ok(exit) => exit.code(),
        Err(e) => {
            // One line: the chain of causes joined, so the user sees what to do next.
            // A URL's password, the key, or a server's echo of it never reaches the terminal.
            let secrets = given_secrets();
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            let line = redact_text(&one_line(&e), &secrets);
            // A server's error body may be a megabyte: the line is cut (`terminal_line`).
            errln!("error: {}", terminal_line(&line));
            ExitCode::from(1)
        }
    }
}

/// Flags whose value is a secret: the server's API key and the hub's tokens.
const SECRET_FLAGS: [&str; 3] = ["--api-key", "--token", "--upload-token"];

/// The secrets this invocation was given (`--api-key`, `OPENAI_API_KEY`, a hub token by flag or
/// `LLMIB_HUB_TOKEN`, the password of a URL in any argument, in `OPENAI_BASE_URL` or in
/// `LLMIB_HUB_DB`), to redact.
fn given_secrets() -> Vec<String> {
    let mut v: Vec<String> = ["OPENAI_API_KEY", commands::upload::TOKEN_ENV]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .collect();
    let args: Vec<String> = std::env::args().collect();
    for (i, a) in args.iter().enumerate() {
        for flag in SECRET_FLAGS {
            if a == flag {
                v.extend(args.get(i + 1).cloned());
            } else if let Some(k) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                v.push(k.to_string());
            }
        }
        v.extend(llmib_core::url_password(a).map(str::to_string));
    }
    for var in ["OPENAI_BASE_URL", commands::hub::DB_ENV] {
        if let Ok(u) = std::env::var(var) {
            v.extend(llmib_core::url_password(&u).map(str::to_string));
        }
    }
    v.retain(|k| !k.is_empty());
    v
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

#[cfg(test)]
mod deploy_tests;
