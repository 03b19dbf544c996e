//! The server's count of a whole request on the agents' routes (Messages, Responses), for the
//! prompt builder's calibration, and the run's reading of a Messages usage.
//!
//! The count is the route's own: a one-token streamed request's usage, which covers the
//! template and any system prompt the route adds. On Messages, once per run, a longer prompt of
//! the run's own (two cache blocks at least) is sent twice, cold then warm from the prefix
//! cache, and every usage report of both (each stream's `message_start` and `message_delta`)
//! goes to `llmib_core::infer_reading`: the reading under which they all agree is the
//! server's, and every measured stream reads its usage by it.

use serde_json::{Value, json};

use super::{Engine, EngineError, GENERATION_TIMEOUT, PromptInput};
use crate::wire::chunk::StreamItem;
use crate::wire::events::parse_event_of;
use crate::wire::sse::SseDecoder;
use llmib_core::{Api, MessagesUsage};

/// What one probe stream said about its prompt.
#[derive(Debug, Default)]
struct ProbeUsage {
    /// Messages: every usage report, in order.
    reports: Vec<MessagesUsage>,
    /// Responses (and chat's shape): the usage's prompt count.
    prompt_tokens: Option<u64>,
}

impl Engine {
    /// The whole request's prompt length for one user message `content` on this engine's
    /// agents' route, as the server counts it; on Messages, also learns the server's reading
    /// of `input_tokens` ([`Engine::input_reading`]).
    pub(crate) async fn agent_prompt_tokens(&self, content: &str) -> Result<u64, EngineError> {
        let url = self.generate_url();
        let body = self.completion_body(
            &self.model.served_model,
            PromptInput::Messages(json!([{"role": "user", "content": content}])),
            1,
            true,
        );
        let cold = self.probe_stream(&url, &body).await?;
        if self.api != Api::Messages {
            return cold
                .prompt_tokens
                .ok_or_else(|| no_usage(&url, "input_tokens"));
        }
        let reading = match self.reading.get() {
            Some(r) => *r,
            None => {
                let r = self.learn_reading(&url, content).await?;
                self.set_input_reading(r);
                r
            }
        };
        match llmib_core::request_prompt_tokens(&cold.reports, reading) {
            Ok(Some((n, _))) => Ok(n),
            Ok(None) => Err(no_usage(&url, "input_tokens")),
            Err(e) => Err(parse_error(&url, e.to_string())),
        }
    }

    /// The server's reading of a Messages usage's `input_tokens`: a prompt of this run alone
    /// (a fresh tag, so its first send is cold) and at least two of the server's cache blocks
    /// long (a shorter one is never cached, and then both readings agree), sent twice, cold
    /// then warm; every usage report of both goes to `llmib_core::infer_reading`, with the chat
    /// template's render of the same prompt as the tie-break where both readings agree.
    async fn learn_reading(
        &self,
        url: &str,
        sample: &str,
    ) -> Result<llmib_core::InputReading, EngineError> {
        let block = self.cache_block_tokens().unwrap_or(128).max(16);
        // The sample is about a hundred tokens; enough copies for two blocks and a spare.
        let copies = (2 * block + 64).div_ceil(80).max(4) as usize;
        let nonce = llmib_core::unix_now_ns();
        let text = format!("[{nonce}] {}", vec![sample; copies].join(" "));
        let messages = json!([{"role": "user", "content": text}]);
        let body = self.completion_body(
            &self.model.served_model,
            PromptInput::Messages(messages.clone()),
            1,
            true,
        );
        let cold = self.probe_stream(url, &body).await?;
        let warm = self.probe_stream(url, &body).await?;
        // The render's count where the engine can give it: the route may add a token or two.
        let near = self.count_messages(&messages).await.ok().flatten();
        llmib_core::infer_reading(&[cold.reports, warm.reports], near)
            .map_err(|e| parse_error(url, e.to_string()))
    }

    /// Sends one streamed probe and reads its whole answer's usage.
    async fn probe_stream(&self, url: &str, body: &Value) -> Result<ProbeUsage, EngineError> {
        let req = self
            .client
            .post(url)
            .header("accept", "text/event-stream")
            .json(body)
            .timeout(GENERATION_TIMEOUT);
        let text = self.send_text(req, url).await?;
        let mut dec = SseDecoder::new();
        dec.push(text.as_bytes());
        let mut got = ProbeUsage::default();
        let mut read = |ev: &crate::wire::sse::SseEvent<'_>| -> Result<(), EngineError> {
            match parse_event_of(self.api, ev).map_err(|e| parse_error(url, e.to_string()))? {
                StreamItem::Error(e) => Err(EngineError::Status(format!(
                    "{url} answered the probe with an error in its stream: {e}"
                ))),
                StreamItem::Chunk(c) | StreamItem::Final(c) => {
                    got.reports.extend(c.messages_usage);
                    if let Some(n) = c.usage.and_then(|u| u.prompt_tokens) {
                        got.prompt_tokens = Some(n);
                    }
                    Ok(())
                }
                StreamItem::Done => Ok(()),
            }
        };
        while let Some(ev) = dec.next_event() {
            read(&ev.map_err(|e| parse_error(url, e.to_string()))?)?;
        }
        if let Some(ev) = dec.finish() {
            read(&ev.map_err(|e| parse_error(url, e.to_string()))?)?;
        }
        Ok(got)
    }
}

/// The prompt count of a non-streamed answer on `api`'s route: chat's and completions'
/// `usage.prompt_tokens`, Responses' `usage.input_tokens`, Messages' usage read by `reading`.
pub(crate) fn answer_prompt_tokens(
    api: Api,
    reading: llmib_core::InputReading,
    v: &Value,
    url: &str,
) -> Result<u64, EngineError> {
    let at = |p: &str| v.pointer(p).and_then(Value::as_u64);
    let (field, n) = match api {
        Api::Completions | Api::Chat => ("prompt_tokens", at("/usage/prompt_tokens")),
        Api::Responses => ("input_tokens", at("/usage/input_tokens")),
        Api::Messages => (
            "input_tokens",
            at("/usage/input_tokens").map(|input| {
                reading.prompt_tokens(&MessagesUsage {
                    input_tokens: input,
                    cache_read: at("/usage/cache_read_input_tokens"),
                    cache_creation: at("/usage/cache_creation_input_tokens"),
                })
            }),
        ),
    };
    n.ok_or_else(|| no_usage(url, field))
}

/// The answer from `url` carries no `usage.<field>`.
fn no_usage(url: &str, field: &str) -> EngineError {
    parse_error(url, format!("no usage.{field} in the answer"))
}

fn parse_error(url: &str, detail: String) -> EngineError {
    EngineError::Parse {
        url: url.to_owned(),
        detail,
    }
}
