//! The open-load lengths checked against the server before anything is sent (issue 20): a
//! workload file is read (ShareGPT turns counted by the server's tokenizer) and every request
//! must fit the server's context, as must the longest `--input-len` with the longest
//! `--output-len`. A bad file stops the run here with one line naming the file and line,
//! before the first request; the open-load section reads it again when its turn comes.

use anyhow::{Result, bail};
use llmib_client::Engine;
use llmib_core::LoadSettings;

/// Refuses a workload or a length that cannot run against `engine` (its probed context
/// length, where it reported one).
pub async fn check(load: Option<&LoadSettings>, engine: &Engine) -> Result<()> {
    let Some(load) = load else {
        return Ok(());
    };
    let context = engine.info().context_length.as_ref().map(|c| c.value);
    if let Some(spec) = &load.workload {
        let w = llmib_client::load_workload(engine, spec).await?;
        if let Some(c) = context {
            w.check_fits(c)?;
        }
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
