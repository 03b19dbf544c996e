//! `sweep`: start the server in each configuration of a grid, measure it with the same `run`
//! flags, stop it, and say which configuration serves best (the sweep report). The plan and
//! every decision are `llmib_core`'s (`combinations`, `render`, `frontier_points`,
//! `slo_picks`); this module starts processes, waits and writes `sweep.json` after each
//! combination, so an interrupted sweep keeps what it measured and `--resume` finishes it.
//!
//! Each combination is measured by this binary's own `run`, as a child process, into
//! `SWEEP/<combination>/`: an ordinary results directory (report, `compare`, `upload`), whose
//! `run.json` holds the exact server command as its launch command, redacted.

use crate::commands::run::Exit;
use anyhow::{Context as _, Result, bail};
use clap::Args;
use llmib_core::SWEEP_FILE;
use llmib_core::{
    Combination, ComboRecord, ComboState, Launcher, SWEEP_SCHEMA_VERSION, SweepFile, SweepSpec,
    check_templates, combinations, holds_redacted, now_rfc3339, own_run_flag, parse_grid,
    redact_args, stored_command,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Where a started server answers unless `--url` says otherwise.
const DEFAULT_URL: &str = "http://{host}:{port}";

/// Options of `sweep`. The `run` flags come after `--`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// The server command, with `{name}` placeholders for the grid's parameters and `{port}`
    /// for a free port the sweep picks: `--serve 'vllm serve M --max-num-seqs {seqs} --port
    /// {port}'`. Run with `sh -c` in a process group of its own.
    #[arg(long, value_name = "COMMAND")]
    pub serve: Option<String>,
    /// A parameter and its values, repeatable: `--grid seqs=64,128,256`. Combinations are the
    /// product of every parameter's values, the first parameter varying slowest.
    #[arg(long = "grid", value_name = "NAME=V1,V2")]
    pub grid: Vec<String>,
    /// Parameters that move together (their i-th values in one combination), repeatable:
    /// `--link tp,dp`.
    #[arg(long = "link", value_name = "A,B")]
    pub link: Vec<String>,
    /// Where a started server answers; `{host}` (127.0.0.1, or a Slurm job's node), `{port}`
    /// and the grid's placeholders are filled.
    #[arg(long, default_value = DEFAULT_URL)]
    pub url: String,
    /// How each server starts: a local process group, or a Slurm job (`sbatch --wrap`, reached
    /// at its node's address; its log must be on a file system the node shares).
    #[arg(long, value_enum, default_value_t = LauncherArg::Local)]
    pub launcher: LauncherArg,
    /// Extra `sbatch` arguments for `--launcher slurm`, as one string split on spaces:
    /// `--sbatch-args '--partition=gpu --gres=gpu:8 --time=2:00:00'`.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub sbatch_args: Option<String>,
    /// Servers already running, side by side: each URL is measured as a combination and
    /// nothing is started (instead of --serve).
    #[arg(long, value_delimiter = ',', value_name = "URL,…")]
    pub urls: Vec<String>,
    /// How long a started server has to answer `/v1/models`.
    #[arg(long, default_value = "10m", value_parser = crate::config::parse::duration)]
    pub start_timeout: Duration,
    /// Seconds between SIGTERM and SIGKILL when a server is stopped.
    #[arg(long, default_value = "15s", value_parser = crate::config::parse::duration)]
    pub stop_grace: Duration,
    /// The sweep's directory (a results directory per combination, the servers' logs, the
    /// sweep report); it must not exist, unless --force.
    #[arg(long, short, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Replace the output directory if it exists.
    #[arg(long)]
    pub force: bool,
    /// A TOML file with any of these flags as keys (`serve`, `grid = ["seqs=64,128"]`, `link`,
    /// `url`, `launcher`, `sbatch_args`, `urls`) and `run` for the run flags; the command
    /// line wins.
    #[arg(long, value_name = "TOML")]
    pub file: Option<PathBuf>,
    /// Finish an interrupted sweep: finished combinations are skipped, the one that was cut is
    /// measured again.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// The `run` flags every combination is measured with (after `--`).
    #[arg(last = true, value_name = "RUN FLAGS")]
    pub run_args: Vec<String>,
}

/// `--launcher`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LauncherArg {
    /// A local process group.
    Local,
    /// A Slurm job.
    Slurm,
}

impl SweepArgs {
    /// The flags with a sweep file's keys filled in where the command line left them unset
    /// (or at their defaults: `--url`, `--launcher`).
    fn with_file(mut self, f: crate::sweep::file::SweepToml) -> Result<SweepArgs> {
        fn unset<T>(mine: &mut Vec<T>, theirs: Option<Vec<T>>) {
            if mine.is_empty() {
                *mine = theirs.unwrap_or_default();
            }
        }
        self.serve = self.serve.or(f.serve);
        unset(&mut self.grid, f.grid);
        unset(&mut self.link, f.link);
        unset(&mut self.urls, f.urls);
        unset(&mut self.run_args, f.run);
        self.sbatch_args = self.sbatch_args.or(f.sbatch_args);
        if let (true, Some(u)) = (self.url == DEFAULT_URL, f.url) {
            self.url = u;
        }
        if let (LauncherArg::Local, Some(l)) = (self.launcher, f.launcher) {
            self.launcher = match l.as_str() {
                "local" => LauncherArg::Local,
                "slurm" => LauncherArg::Slurm,
                other => bail!("--file: launcher {other:?} is local or slurm"),
            };
        }
        Ok(self)
    }

    /// The launcher the flags ask for.
    fn launcher(&self) -> Result<Launcher> {
        let args: Vec<String> = self
            .sbatch_args
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        match self.launcher {
            LauncherArg::Local if !args.is_empty() => {
                bail!("--sbatch-args applies to --launcher slurm")
            }
            LauncherArg::Local => Ok(Launcher::Local),
            LauncherArg::Slurm => Ok(Launcher::Slurm { sbatch_args: args }),
        }
    }
}

/// The sweep as planned: its directory, `sweep.json`'s contents, and the user's own words
/// (secrets included) for the commands this process starts.
struct Planned {
    dir: PathBuf,
    file: SweepFile,
    serve: Option<String>,
    run_args: Vec<String>,
}

/// Runs the sweep; the exit code says whether any combination was measured.
pub async fn run(args: SweepArgs) -> Result<Exit> {
    let args = match args.file.clone() {
        Some(f) => args.with_file(crate::sweep::file::read(&f)?)?,
        None => args,
    };
    let mut p = match &args.resume {
        Some(dir) => resume(dir, &args)?,
        None => plan(&args)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, Ordering::SeqCst);
        }
    });
    write_file(&p)?;
    let total = p.file.combinations.len();
    for i in 0..total {
        if p.file.combinations[i].state.finished() {
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let name = p.file.combinations[i].name.clone();
        errln!("sweep [{}/{total}] {name}", i + 1);
        let record = crate::sweep::combo::measure(
            &p.dir,
            &p.file,
            i,
            p.serve.as_deref(),
            &p.run_args,
            &stop,
        )
        .await;
        errln!("sweep [{}/{total}] {name}: {}", i + 1, state_words(&record));
        p.file.combinations[i] = record;
        write_file(&p)?;
        report(&p.dir);
    }
    finish(&mut p, &stop)
}

/// The end: `finished_at` where every combination ended, the report, and the exit code.
fn finish(p: &mut Planned, stop: &AtomicBool) -> Result<Exit> {
    let all_done = p.file.combinations.iter().all(|c| c.state.finished());
    if all_done {
        p.file.finished_at = Some(now_rfc3339());
    }
    write_file(p)?;
    report(&p.dir);
    print_summary(&p.dir);
    errln!("sweep: {}", p.dir.display());
    let measured = p
        .file
        .combinations
        .iter()
        .filter(|c| c.state == ComboState::Measured)
        .count();
    Ok(if stop.load(Ordering::SeqCst) && !all_done {
        errln!(
            "sweep stopped: {measured} combination(s) measured; finish it with `llm-inference-bench sweep --resume {}`",
            p.dir.display()
        );
        Exit::Interrupted
    } else if measured == 0 {
        Exit::NothingMeasured
    } else {
        Exit::Ok
    })
}

/// One line of what became of a combination.
fn state_words(r: &ComboRecord) -> String {
    let state = serde_json::to_value(r.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match &r.reason {
        Some(why) => format!("{state}: {why}"),
        None => state,
    }
}

/// The grid and links of the flags.
fn grid_of(args: &SweepArgs) -> Result<(Vec<llmib_core::GridParam>, Vec<Vec<String>>)> {
    let grid = args
        .grid
        .iter()
        .map(|g| parse_grid(g))
        .collect::<Result<Vec<_>, _>>()?;
    let links = args
        .link
        .iter()
        .map(|l| l.split(',').map(|s| s.trim().to_string()).collect())
        .collect();
    Ok((grid, links))
}

/// A new sweep from the flags, checked before anything starts.
fn plan(args: &SweepArgs) -> Result<Planned> {
    if let Some(flag) = own_run_flag(&args.run_args) {
        bail!("{flag} is set by the sweep for each combination: leave it out of the run flags");
    }
    check_run_flags(&args.run_args)?;
    let (grid, links) = grid_of(args)?;
    let launcher = args.launcher()?;
    let combos: Vec<Combination> = match (&args.serve, args.urls.is_empty()) {
        (Some(_), false) => bail!(
            "give --serve (the sweep starts each server) or --urls (servers already running), not both"
        ),
        (Some(serve), true) => {
            check_templates(serve, &args.url, &grid, &launcher)?;
            if grid.is_empty() {
                bail!("--serve needs at least one --grid NAME=V1,V2");
            }
            combinations(&grid, &links)?
        }
        (None, false) if !grid.is_empty() => {
            bail!("--grid fills --serve's placeholders: give --serve too, or drop --grid")
        }
        (None, false) => url_combinations(&args.urls),
        (None, true) => bail!("nothing to sweep: give --serve with --grid, or --urls"),
    };
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| crate::commands::run::default_output("sweep"));
    prepare_dir(&dir, args.force)?;
    let spec = SweepSpec {
        serve: args.serve.as_deref().map(stored_command),
        url: args.serve.as_ref().map(|_| args.url.clone()),
        grid,
        links,
        urls: args
            .urls
            .iter()
            .map(|u| llmib_core::strip_url_userinfo(u))
            .collect(),
        run_args: redact_args(&args.run_args),
        start_timeout_s: args.start_timeout.as_secs_f64(),
        stop_grace_s: args.stop_grace.as_secs_f64(),
        launcher,
    };
    Ok(Planned {
        dir,
        file: SweepFile {
            schema_version: SWEEP_SCHEMA_VERSION,
            id: llmib_core::sweep_id(llmib_core::unix_now_ns()),
            spec,
            combinations: combos.iter().map(ComboRecord::pending).collect(),
            started_at: now_rfc3339(),
            finished_at: None,
        },
        serve: args.serve.clone(),
        run_args: args.run_args.clone(),
    })
}

/// Each URL of a list as a combination named by its host and port.
fn url_combinations(urls: &[String]) -> Vec<Combination> {
    urls.iter()
        .enumerate()
        .map(|(i, u)| {
            let bare = llmib_core::strip_url_userinfo(u);
            let host: String = bare
                .split("://")
                .nth(1)
                .unwrap_or(&bare)
                .split('/')
                .next()
                .unwrap_or("")
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            Combination {
                name: format!("{}-{host}", i + 1),
                params: [("url".to_string(), bare)].into_iter().collect(),
            }
        })
        .collect()
}

/// `--resume DIR`: the saved sweep, its unfinished combinations measured now. A secret the
/// saved flags lost to redaction must be given again (the same flags after `--`, or `--serve`).
fn resume(dir: &Path, args: &SweepArgs) -> Result<Planned> {
    let path = dir.join(SWEEP_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot resume: {} cannot be read", path.display()))?;
    let mut file: SweepFile = serde_json::from_str(&text)
        .with_context(|| format!("cannot resume: {} is not a sweep file", path.display()))?;
    let run_args = if args.run_args.is_empty() {
        file.spec.run_args.clone()
    } else {
        args.run_args.clone()
    };
    if redact_args(&run_args) != file.spec.run_args {
        bail!(
            "cannot resume: the run flags after -- differ from the sweep's ({}); give the same ones, or none",
            file.spec.run_args.join(" ")
        );
    }
    if run_args.iter().any(|a| holds_redacted(a)) {
        bail!(
            "cannot resume: the sweep's run flags held a secret; give them again after -- (or the key as OPENAI_API_KEY)"
        );
    }
    let serve = match (&file.spec.serve, &args.serve) {
        (Some(saved), Some(given)) if stored_command(given) == *saved => Some(given.clone()),
        (Some(_), Some(_)) => {
            bail!("cannot resume: --serve differs from the sweep's server command")
        }
        (Some(saved), None) if holds_redacted(saved) => {
            bail!("cannot resume: the server command held a secret; give --serve again")
        }
        (saved, _) => saved.clone(),
    };
    for c in &mut file.combinations {
        if c.state == ComboState::Interrupted {
            c.state = ComboState::Pending;
        }
    }
    file.finished_at = None;
    if file.id.is_empty() {
        // A sweep begun before sweeps had identities: its runs from now on share a new one.
        file.id = llmib_core::sweep_id(llmib_core::unix_now_ns());
    }
    Ok(Planned {
        dir: dir.to_path_buf(),
        file,
        serve,
        run_args,
    })
}

/// The run flags parse as `run`'s, so a typo fails the sweep before any server starts.
fn check_run_flags(run_args: &[String]) -> Result<()> {
    use clap::Parser as _;
    /// `run`'s flags alone, as its subcommand parses them.
    #[derive(clap::Parser)]
    struct RunFlags {
        #[command(flatten)]
        _run: crate::commands::upload::RunCommandArgs,
    }
    let argv = ["run", "--url", "http://127.0.0.1:1"]
        .into_iter()
        .map(str::to_string)
        .chain(run_args.iter().cloned());
    match RunFlags::try_parse_from(argv) {
        Ok(_) => Ok(()),
        Err(e) => {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            bail!("the run flags after -- do not parse: {first}")
        }
    }
}

/// Creates the sweep's directory: a new one, or `--force` over an old one.
fn prepare_dir(dir: &Path, force: bool) -> Result<()> {
    let busy = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if busy && !force {
        bail!(
            "{} exists and is not empty: give another --output, --force to replace it, or --resume to finish it",
            dir.display()
        );
    }
    if busy {
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("cannot replace {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// Writes `sweep.json` atomically (a temporary file renamed over it).
fn write_file(p: &Planned) -> Result<()> {
    let path = p.dir.join(SWEEP_FILE);
    let tmp = p.dir.join(format!("{SWEEP_FILE}.tmp"));
    let text = serde_json::to_string_pretty(&p.file).context("sweep.json")?;
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))
}

/// Prints `sweep.md` (every combination's figures, the frontier, the picks) on stdout at the
/// end, as `run` prints its tables: each combination's own output scrolled by above it, and
/// the comparison is what the sweep was for. Nothing when the report could not be written.
fn print_summary(dir: &Path) {
    if let Ok(text) = std::fs::read_to_string(dir.join("sweep.md")) {
        outln!();
        outln!("{}", text.trim_end());
    }
}

/// Writes the sweep report; a report that fails is a warning (sweep.json has every record).
fn report(dir: &Path) {
    if let Err(e) = llmib_report::write_sweep_report(dir) {
        errln!("warning: the sweep report cannot be written: {e}");
    }
}
