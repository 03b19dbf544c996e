//! How a route frames one generation on the wire: the [`Frames`] every generation route
//! implements (what goes out before the first token, with each engine step, at the end, on an
//! injected failure, as one JSON body), and the OpenAI routes' own ([`OpenAiFrames`]:
//! `/v1/completions` and `/v1/chat/completions`). The SSE driver (`sse`) runs any of them, so
//! faults, chunk stamps and aborts behave the same on every route, each in its own shape.
//! [`PromptSplit`] is the prefix-cache accounting the agent routes report (Anthropic's
//! `cache_creation_input_tokens` / `cache_read_input_tokens`, the Responses API's
//! `cached_tokens` / `cache_write_tokens`).

use crate::engine::{CACHE_BLOCK_TOKENS, Finish};
use crate::wire::{self, Kind, Writer};

/// One engine step as a route sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step<'a> {
    /// The text of the step's tokens.
    pub text: &'a str,
    /// Output tokens so far, these included.
    pub completion: u32,
    /// Set on the request's last step.
    pub finish: Option<Finish>,
    /// The step is the model's thinking (the first `reasoning_tokens` of a chat-like answer).
    pub reasoning: bool,
}

/// The events of one step, and which of them carries its tokens: the event the
/// malformed-chunk fault cuts and the chunk stamp marks (`None`: the step sent no tokens).
#[derive(Debug, Default)]
pub(crate) struct StepEvents {
    /// The SSE events, in order.
    pub events: Vec<String>,
    /// The index of the token-carrying event in `events`.
    pub carrier: Option<usize>,
}

/// The whole answer of a non-streamed request, thinking and text apart.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    /// The reasoning part (the first `reasoning_tokens` tokens).
    pub reasoning: String,
    /// The rest.
    pub text: String,
}

/// How a prompt's tokens divide between the prefix cache's reads, its writes and the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PromptSplit {
    /// Tokens neither read from nor written to the cache.
    pub uncached: u64,
    /// Tokens this request wrote to the cache as new whole blocks.
    pub creation: u64,
    /// Tokens the cache served.
    pub read: u64,
}

impl PromptSplit {
    /// The split of a `prompt`-token prompt that was served `cached` tokens: the cache reads
    /// those, writes the prompt's other whole blocks (none with the cache off), and the
    /// prompt's last partial block is neither. The three sum to the prompt.
    pub(crate) fn of(prompt: u64, cached: u64, cache_on: bool) -> PromptSplit {
        let read = cached.min(prompt);
        let block = CACHE_BLOCK_TOKENS as u64;
        let creation = if cache_on {
            (prompt / block * block).saturating_sub(read)
        } else {
            0
        };
        PromptSplit {
            uncached: prompt - read - creation,
            creation,
            read,
        }
    }
}

/// One route's framing of one request.
pub(crate) trait Frames: Send {
    /// The request's fixed facts (id, model, prompt and cached tokens).
    fn writer(&self) -> &Writer;

    /// Records the prompt tokens the prefix cache served (known from the first engine event).
    fn set_cached_tokens(&mut self, cached: u64);

    /// Events sent as soon as the request is accepted, before the engine's first step (the
    /// Responses API announces the response before prefill; chat says nothing until then).
    fn greeting(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// Events sent with the first engine step, before its tokens.
    fn opening(&mut self) -> Vec<String>;

    /// The events of one engine step.
    fn step(&mut self, s: &Step<'_>) -> StepEvents;

    /// The events after the last step (`completion` tokens in all, stopped for `finish`).
    fn closing(&mut self, completion: u32, finish: Finish) -> Vec<String>;

    /// The `stream_error` fault: what the route sends for a failure mid-stream; the body
    /// ends after these events.
    fn failure(&mut self, message: &str) -> Vec<String>;

    /// The half of an event a `disconnect_mid_event` drop leaves on the wire.
    fn torn_event(&self) -> &'static str;

    /// The non-streamed response body.
    fn body(&self, answer: &Answer, completion: u32, finish: Finish) -> String;
}

/// `/v1/completions` and `/v1/chat/completions`, in the engine's dialect (`wire`).
pub(crate) struct OpenAiFrames {
    /// The chunk writer.
    pub writer: Writer,
    /// `stream_options.include_usage`: a final `choices: []` usage chunk.
    pub include_usage: bool,
    /// `stream_options.continuous_usage_stats`: usage on every chunk.
    pub continuous_usage: bool,
}

impl Frames for OpenAiFrames {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    fn set_cached_tokens(&mut self, cached: u64) {
        self.writer.cached_tokens = cached;
    }

    fn opening(&mut self) -> Vec<String> {
        // Chat announces the assistant role first; completions start with text.
        match self.writer.kind {
            Kind::Chat => vec![self.writer.role_chunk(self.continuous_usage)],
            Kind::Completion => Vec::new(),
        }
    }

    fn step(&mut self, s: &Step<'_>) -> StepEvents {
        let events = self.writer.token_events(
            s.text,
            u64::from(s.completion),
            s.finish.map(Finish::as_str),
            self.continuous_usage,
            s.reasoning,
        );
        // The first chunk carries the text; SGLang's separate finish chunk none.
        StepEvents {
            events,
            carrier: Some(0),
        }
    }

    fn closing(&mut self, completion: u32, _finish: Finish) -> Vec<String> {
        let mut out = Vec::with_capacity(2);
        if self.include_usage {
            out.push(self.writer.usage_chunk(u64::from(completion)));
        }
        out.push(wire::DONE.to_string());
        out
    }

    fn failure(&mut self, message: &str) -> Vec<String> {
        vec![
            self.writer
                .stream_error(message, "InternalServerError", 500),
            wire::DONE.to_string(),
        ]
    }

    fn torn_event(&self) -> &'static str {
        "data: {\"id\":\"cut\",\"object\":\"text_completion\",\"choi"
    }

    fn body(&self, answer: &Answer, completion: u32, finish: Finish) -> String {
        // A non-streamed chat answer carries its thinking as content, as it always has here.
        let text = format!("{}{}", answer.reasoning, answer.text);
        self.writer
            .full_response(&text, u64::from(completion), finish.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_sums_to_the_prompt() {
        // Cold: 1758 tokens = 109 whole blocks (1744) written + 14 in the last partial block.
        assert_eq!(
            PromptSplit::of(1758, 0, true),
            PromptSplit {
                uncached: 14,
                creation: 1744,
                read: 0
            }
        );
        // Warm, served whole: nothing written, nothing left.
        assert_eq!(
            PromptSplit::of(1758, 1758, true),
            PromptSplit {
                uncached: 0,
                creation: 0,
                read: 1758
            }
        );
        // A longer prompt served its first 1744: the new whole blocks are written.
        let s = PromptSplit::of(1800, 1744, true);
        assert_eq!((s.read, s.creation, s.uncached), (1744, 48, 8));
        assert_eq!(PromptSplit::of(40, 0, false).uncached, 40);
    }
}
