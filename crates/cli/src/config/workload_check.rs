//! The open-load lengths checked against the server before anything is sent (issue 20): a
//! workload file is read (ShareGPT turns counted by the server's tokenizer) and every request
//! must fit the server's context, as must the longest `--input-len` with the longest
//! `--output-len`. A bad file stops the run here with one line naming the file and line,
//! before the first request; the open-load section reads it again when its turn comes. A
//! `prompts:FILE` file (the user's own prompts, sent as written) must be the one the run
//! recorded (its sha256: a resumed run reads it again) and its chats need an API that carries
//! them; `sharegpt-text:FILE` likewise (ShareGPT's human messages, sent with their words).
//!
//! A session replay's file ([`check_replay`]) is read here too: a session trace
//! (`sessions:FILE`, `weka:FILE`) is parsed whole and an agent's trace checked against the API
//! and `--shard`, a ShareGPT file's shape checked (its turns are counted by the server when
//! its cell runs), so that a typo in the path or a broken line stops the run in one line
//! before the matrix is measured, not as a failed row at its end.

use anyhow::{Result, bail};
use llmib_client::Engine;
use llmib_core::{LoadSettings, WorkloadKind, WorkloadSpec};

/// Refuses a workload or a length that cannot run against `engine` (its probed context
/// length, where it reported one).
pub async fn check(load: Option<&LoadSettings>, engine: &Engine) -> Result<()> {
    let Some(load) = load else {
        return Ok(());
    };
    let context = engine.info().context_length.as_ref().map(|c| c.value);
    match &load.workload {
        Some(spec) if spec.kind.is_texts() => {
            let (prompts, now) = crate::config::load::read_prompts(spec)?;
            if let Some(recorded) = &load.prompts {
                recorded.check_same(&now)?;
            }
            prompts.check_api(engine.api())?;
        }
        Some(spec) => {
            let w = llmib_client::load_workload(engine, spec).await?;
            if let Some(c) = context {
                w.check_fits(c)?;
            }
        }
        None => {}
    }
    if let (Some(c), Some(input)) = (context, load.input_len) {
        let output = load.output_len.map_or(0, |o| o.max());
        let longest = input.max().saturating_add(output);
        if longest > c {
            bail!(
                "--input-len {input} reaches {} tokens and --output-len {} more, above the server's context of {c} tokens: lower them",
                input.max(),
                output
            );
        }
    }
    Ok(())
}

/// Refuses a session replay (`replay`, the `--workload` of a replay as written) whose file
/// cannot be read or parsed, or an agent's trace the API or `--shard` cannot run (`chat`: the
/// API carries conversations; `sharded`: a shard of several). The replay's cell reads the file
/// again when its turn comes.
pub fn check_replay(replay: Option<&str>, chat: bool, sharded: bool) -> Result<()> {
    let Some(replay) = replay else {
        return Ok(());
    };
    let spec: WorkloadSpec = replay.parse()?;
    let file = spec.path.display().to_string();
    let text = std::fs::read_to_string(&spec.path)
        .map_err(|e| anyhow::anyhow!("{file}: cannot read the session replay: {e}"))?;
    let parsed = match spec.kind {
        WorkloadKind::Sessions => llmib_core::parse_session_trace(&file, &text)?,
        WorkloadKind::Weka => llmib_core::parse_weka_trace(&file, &text)?,
        // ShareGPT's turns are counted by the server's tokenizer when the cell reads them; its
        // shape (JSON, conversations, turns) is checked now with every turn counted as one.
        _ => llmib_core::parse_sharegpt_sessions(&file, &text, &|_| 1)?,
    };
    if let Some(why) = parsed.agent_refusal(&file, chat, sharded) {
        bail!("{why}");
    }
    Ok(())
}
