//! `completions` and `man`: the scripts and pages generated from the CLI definition are valid
//! for the tools that read them (`bash -n`, `man -l`), name the real commands and flags, and a
//! directory the pages cannot be written to is one line and a non-zero exit.

use crate::common::{out_dir, run_bin, text};
use std::path::Path;
use std::process::Command;

/// Stdout of a successful run of the binary with `args`.
fn stdout_of(args: &[&str]) -> String {
    let o = run_bin(args);
    assert!(o.status.success(), "{args:?} failed: {}", text(&o));
    String::from_utf8(o.stdout).expect("the output is UTF-8")
}

/// Whether `bash -n` accepts the script in `file`, with its stderr for the failure message.
fn bash_parses(file: &Path) -> (bool, String) {
    let o = Command::new("bash")
        .arg("-n")
        .arg(file)
        .output()
        .expect("run bash -n");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bash_completions_parse_and_name_the_commands() {
    let script = stdout_of(&["completions", "bash"]);
    let file = out_dir("completions_bash").join("llm-inference-bench.bash");
    std::fs::write(&file, &script).expect("write the script");
    let (ok, err) = bash_parses(&file);
    assert!(ok, "bash -n rejects the completions: {err}");
    for word in ["run", "sweep", "hub", "--contexts"] {
        assert!(script.contains(word), "no {word:?} in the bash completions");
    }
}

/// The planted failure: the `bash -n` check does reject a script with a syntax error, so the
/// test above would catch a broken generator.
#[test]
fn bash_n_rejects_a_broken_script() {
    let file = out_dir("completions_broken").join("broken.bash");
    std::fs::write(&file, "_f() {\n  if [ -n \"$1\" ]; then\n    echo x\n}\n").expect("write");
    let (ok, _) = bash_parses(&file);
    assert!(!ok, "bash -n accepted a script with an unclosed `if`");
}

#[test]
fn zsh_and_fish_completions_are_for_the_binary() {
    let zsh = stdout_of(&["completions", "zsh"]);
    assert!(
        zsh.starts_with("#compdef llm-inference-bench"),
        "zsh completions start with {:?}",
        zsh.lines().next()
    );
    let fish = stdout_of(&["completions", "fish"]);
    assert!(
        fish.contains("__fish_use_subcommand") || fish.contains("complete -c llm-inference-bench"),
        "the fish completions do not complete the binary:\n{fish}"
    );
}

#[test]
fn man_prints_the_top_level_page() {
    let page = stdout_of(&["man"]);
    assert!(
        page.lines().any(|l| l.starts_with(".TH")),
        "no .TH in the page:\n{page}"
    );
    assert!(page.starts_with('.'), "not roff:\n{page}");
    assert!(page.contains("run"), "the page does not name `run`");
}

#[test]
fn man_output_writes_a_page_per_command() {
    let dir = out_dir("man_pages").join("man1");
    let listed = stdout_of(&["man", "--output", dir.to_str().expect("UTF-8 path")]);
    for name in [
        "llm-inference-bench.1",
        "llm-inference-bench-run.1",
        "llm-inference-bench-sweep.1",
        "llm-inference-bench-hub-serve.1",
    ] {
        let file = dir.join(name);
        assert!(file.is_file(), "{name} not written; listed:\n{listed}");
        assert!(listed.contains(name), "{name} not listed:\n{listed}");
    }
    assert!(!dir.join("llm-inference-bench-help.1").exists());
    render_with_man(&dir.join("llm-inference-bench-run.1"));
}

/// `man -l` renders the page without error, where `man` is installed (skipped otherwise).
fn render_with_man(page: &Path) {
    let has_man = Command::new("sh")
        .args(["-c", "command -v man"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_man {
        return;
    }
    let o = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .expect("run man -l");
    assert!(
        o.status.success(),
        "man -l {}: {}",
        page.display(),
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("llm-inference-bench"),
        "man -l rendered nothing: {}",
        text(&o)
    );
}

#[test]
fn man_output_under_a_file_is_one_line_error() {
    let base = out_dir("man_unwritable");
    let file = base.join("a-file");
    std::fs::write(&file, "not a directory").expect("write");
    let target = file.join("man1");
    let o = run_bin(&["man", "--output", target.to_str().expect("UTF-8 path")]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{}", text(&o));
    assert!(err.starts_with("error:"), "{}", text(&o));
    assert!(
        err.contains("--output"),
        "no hint on what to do: {}",
        text(&o)
    );
}
