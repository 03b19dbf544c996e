//! `completions` and `man`: shell completion scripts and man pages, generated from the same
//! `Cli` definition that parses the arguments, so a new flag or command reaches the shell's
//! completion and the manual without anyone editing them by hand. Both print through `out!`
//! (a closed stdout, as in `completions bash | head`, ends them quietly); `man --output DIR`
//! writes one page per command and subcommand and lists the files it wrote.

use anyhow::{Context, anyhow};
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// The name the scripts complete and the pages are titled by, whatever the binary's file is
/// called (a test's or a package's build may name it differently).
const BIN_NAME: &str = "llm-inference-bench";

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command and subcommand (`llm-inference-bench.1`,
    /// `llm-inference-bench-run.1`, …) into this directory, created if missing, instead of
    /// printing the top-level page.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` to stdout. `cli` is the whole command line
/// (`Cli::command()`, given by main.rs, which this module may not import: it imports this one).
pub fn completions(
    args: &CompletionsArgs,
    cli: clap::Command,
) -> anyhow::Result<crate::commands::run::Exit> {
    let mut cmd = cli.bin_name(BIN_NAME);
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, BIN_NAME, &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(crate::commands::run::Exit::Ok)
}

/// Prints the top-level man page, or writes every page into `--output` and lists them; `cli` as
/// for [`completions`].
pub fn man(args: &ManArgs, cli: clap::Command) -> anyhow::Result<crate::commands::run::Exit> {
    let cli = cli.bin_name(BIN_NAME);
    match &args.output {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cli)
                .render(&mut page)
                .context("cannot render the man page")?;
            out!("{}", String::from_utf8_lossy(&page));
        }
        Some(dir) => {
            for path in write_pages(dir, cli)? {
                outln!("{}", path.display());
            }
        }
    }
    Ok(crate::commands::run::Exit::Ok)
}

/// Writes the page of every command into `dir`; the paths written, top-level page first.
fn write_pages(dir: &Path, cli: clap::Command) -> anyhow::Result<Vec<PathBuf>> {
    let hint = "give --output a directory you can write to";
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow!("cannot create {}: {e} ({hint})", dir.display()))?;
    // As `clap_mangen::generate_to` does: no page for the `help` subcommand, and the command
    // built first, so that each subcommand's page is titled by its full name
    // (`llm-inference-bench-hub-serve`).
    let mut root = cli.disable_help_subcommand(true);
    root.build();
    let mut pages = Vec::new();
    collect(root, &mut pages);
    let mut written = Vec::new();
    for page in pages {
        let path = page.generate_to(dir).map_err(|e| {
            anyhow!(
                "cannot write a man page into {}: {e} ({hint})",
                dir.display()
            )
        })?;
        written.push(path);
    }
    Ok(written)
}

/// The pages of `cmd` and of its visible subcommands, depth first, `cmd`'s own first.
fn collect(cmd: clap::Command, pages: &mut Vec<clap_mangen::Man>) {
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .cloned()
        .collect();
    pages.push(clap_mangen::Man::new(cmd));
    for sub in subs {
        collect(sub, pages);
    }
}
