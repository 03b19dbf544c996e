//! The engine's tokenizer and the server's own token counts: tokenize and detokenize in each
//! engine's dialect, the server's count of a prompt (`usage.prompt_tokens`), and the length of
//! a chat prompt with its template. The prompt builder is their caller; they are a second
//! `impl` block apart from request building and metrics in `mod.rs`, as `reader.rs` is.

use super::{ChatCalibration, Engine, EngineError, PromptInput, TokenizerKind};
use llmib_core::{Api, EngineKind};
use serde_json::{Value, json};

impl Engine {
    /// The server's own count of `text` as a prompt (or as one chat message, template
    /// included): `usage.prompt_tokens` of a non-streamed request with `max_tokens = 1`. For
    /// endpoints without a tokenizer.
    pub async fn prompt_tokens_of(&self, text: &str) -> Result<u64, EngineError> {
        let body = self.completion_body(
            &self.model.served_model,
            PromptInput::Text(text.to_owned()),
            1,
            false,
        );
        let v = self.generate_json(&body).await?;
        let url = self.generate_url();
        super::agent_probe::answer_prompt_tokens(self.api, self.input_reading(), &v, &url)
    }

    /// Tokens the chat template adds around one user message (role markers, BOS, the
    /// generation prompt): a chat request with `content` and `max_tokens = 1`, its
    /// `usage.prompt_tokens` minus the message's own tokens. The prompt builder subtracts it
    /// so that a chat prompt is C tokens by the server's own count; it passes a sample that
    /// begins as its prompts do, since the template's last token and the message's first may
    /// merge (llama.cpp's ChatML: `\n[` is one token where `\nReply` is two).
    pub async fn chat_template_tokens(
        &self,
        content: &str,
    ) -> Result<ChatCalibration, EngineError> {
        // The agents' routes count the request their own way (another template path, a
        // system prompt of their own): their count is the one the cells must match.
        let (total, url) = if self.agent_api() {
            (
                self.agent_prompt_tokens(content).await?,
                self.generate_url(),
            )
        } else {
            let url = format!("{}/v1/chat/completions", self.base_url);
            let mut body = json!({
                "model": self.model.served_model,
                "messages": [{"role": "user", "content": content}],
                "max_tokens": 1,
                "stream": false,
            });
            // `--tools`: the template renders them into every prompt, so into this one too.
            if let Some(t) = self
                .request
                .structured
                .as_ref()
                .and_then(|s| s.chat_tools())
            {
                body["tools"] = t;
            }
            let v = self.post_json(&url, &body).await?;
            let n = super::agent_probe::answer_prompt_tokens(
                Api::Chat,
                self.input_reading(),
                &v,
                &url,
            )?;
            (n, url)
        };
        let own = self.tokenize(content, false).await?.len() as u64;
        let template = total.checked_sub(own).ok_or_else(|| EngineError::Parse {
            url,
            detail: format!(
                "usage.prompt_tokens ({total}) is below the message's own {own} tokens"
            ),
        })?;
        Ok(ChatCalibration { total, template })
    }

    /// The length of the whole chat prompt of one user message `content`, template included,
    /// counted by the server's own template and tokenizer without running the model (so no
    /// prefix cache is warmed): llama.cpp renders it with `/apply-template` and counts the text
    /// with `/tokenize` (special tokens added and parsed, as its chat endpoint does); vLLM
    /// counts `messages` in `/tokenize` directly. `Ok(None)` where the engine cannot: SGLang's
    /// and TGI's tokenize endpoints take text only, and an older llama.cpp has no
    /// `/apply-template` (an error status). A transport error is returned, not hidden.
    ///
    /// Counting the rendered prompt is what makes chat lengths exact: the template's last
    /// token and the message's first (or the message's last and the template's closing tag)
    /// may merge differently for each message, so a template overhead measured once on a
    /// sample can be one token off for some prompts.
    pub async fn chat_prompt_tokens(&self, content: &str) -> Result<Option<u64>, EngineError> {
        let messages = json!([{"role": "user", "content": content}]);
        self.count_messages(&messages).await
    }

    /// The length of a whole chat prompt of `messages` (a session's history and its new
    /// message), template and generation prompt included, counted as
    /// [`Engine::chat_prompt_tokens`] counts one message: without running the model.
    /// `Ok(None)` where the engine cannot count a chat.
    pub async fn count_messages(&self, messages: &Value) -> Result<Option<u64>, EngineError> {
        self.count_messages_with_tools(messages, None).await
    }

    /// [`Engine::count_messages`] with `tools` (chat-shaped: a replayed agent session's own)
    /// in place of `--tools`'.
    pub(crate) async fn count_messages_with_tools(
        &self,
        messages: &Value,
        tools: Option<&Value>,
    ) -> Result<Option<u64>, EngineError> {
        // `--tools`: the template renders the tool definitions into every prompt (vLLM's
        // tokenize route and llama.cpp's apply-template take them as the chat route does).
        let tools = tools.cloned().or_else(|| {
            self.request
                .structured
                .as_ref()
                .and_then(|s| s.chat_tools())
        });
        let with_tools = |mut body: Value| {
            if let (Some(t), Value::Object(m)) = (&tools, &mut body) {
                m.insert("tools".into(), t.clone());
            }
            body
        };
        let counted = match self.dialect.tokenizer {
            TokenizerKind::LlamaCpp => {
                let url = format!("{}/apply-template", self.base_url);
                let Some(v) = self
                    .post_json_if_served(&url, &with_tools(json!({ "messages": messages })))
                    .await?
                else {
                    return Ok(None);
                };
                let Some(prompt) = v.get("prompt").and_then(Value::as_str) else {
                    return Ok(None);
                };
                let url = format!("{}/tokenize", self.base_url);
                let body = json!({"content": prompt, "add_special": true, "parse_special": true});
                let v = self.post_json(&url, &body).await?;
                parse_tokens(&v).map(|t| t.len() as u64)
            }
            TokenizerKind::OpenAiStyle if self.kind == EngineKind::Vllm => {
                let url = format!("{}/tokenize", self.base_url);
                let body = with_tools(json!({
                    "model": self.model.served_model,
                    "messages": messages,
                    "add_generation_prompt": true,
                }));
                let Some(v) = self.post_json_if_served(&url, &body).await? else {
                    return Ok(None);
                };
                parse_tokens(&v).map(|t| t.len() as u64)
            }
            _ => return Ok(None),
        };
        counted.map(Some).ok_or_else(|| EngineError::Parse {
            url: format!("{}/tokenize", self.base_url),
            detail: "no token list in the answer to a chat prompt".into(),
        })
    }

    /// What the generation route counts for a conversation beyond the chat template's render
    /// of it ([`Engine::count_messages`]): 0 on chat; on the agents' routes measured once, on a
    /// sample, as the route's own count minus the render's (vLLM's Responses route adds a
    /// second BOS, +1). A session's turns add it, so their prompts stay exact on every route.
    pub async fn route_extra_tokens(&self) -> Result<i64, EngineError> {
        if !self.agent_api() {
            return Ok(0);
        }
        if let Some(v) = self.route_extra.get() {
            return Ok(*v);
        }
        let sample = "Reply with one word: which colour is the sky on a clear day?";
        let Some(rendered) = self.chat_prompt_tokens(sample).await? else {
            // Nothing to add to: a conversation cannot be counted on this engine at all.
            return Ok(0);
        };
        let route = self.agent_prompt_tokens(sample).await?;
        let extra = route as i64 - rendered as i64;
        Ok(*self.route_extra.get_or_init(|| extra))
    }

    /// Keeps what the prompt builder's calibration measured as the route's count beyond the
    /// render (the same difference, on its own sample), so [`Engine::route_extra_tokens`] need
    /// not measure it again; the first measure stays.
    pub(crate) fn note_route_extra(&self, extra: i64) {
        if self.agent_api() {
            let _ = self.route_extra.set(extra);
        }
    }

    /// Whether the engine has a tokenize endpoint.
    pub fn has_tokenizer(&self) -> bool {
        self.dialect.tokenizer != TokenizerKind::None
    }

    /// Whether the engine has a detokenize endpoint (TGI has only tokenize).
    pub fn has_detokenizer(&self) -> bool {
        matches!(
            self.dialect.tokenizer,
            TokenizerKind::OpenAiStyle | TokenizerKind::LlamaCpp
        )
    }

    /// Whether a text prompt gets the model's special tokens (BOS) added by the server. Then
    /// `tokenize(text, true)` is what the prompt costs. This matters for llama.cpp, whose
    /// `/tokenize` adds no BOS by default while its completion endpoint does.
    pub fn prompt_adds_bos(&self) -> bool {
        // A chat message is wrapped by the template, whose tokens (BOS included) are measured
        // apart (`chat_template_tokens`).
        self.has_tokenizer() && self.api == Api::Completions
    }

    /// Tokenizes `text` with the engine's tokenizer; `add_special` adds BOS/special tokens as
    /// the model's tokenizer does for a prompt.
    pub async fn tokenize(&self, text: &str, add_special: bool) -> Result<Vec<u32>, EngineError> {
        let url = format!("{}/tokenize", self.base_url);
        let body = match self.dialect.tokenizer {
            TokenizerKind::OpenAiStyle => json!({
                "model": self.model.served_model,
                "prompt": text,
                "add_special_tokens": add_special,
            }),
            TokenizerKind::LlamaCpp => json!({"content": text, "add_special": add_special}),
            TokenizerKind::Tgi => json!({"inputs": text, "add_special_tokens": add_special}),
            TokenizerKind::None => return Err(self.no_tokenizer()),
        };
        let v = self.post_json(&url, &body).await?;
        parse_tokens(&v).ok_or_else(|| EngineError::Parse {
            url,
            detail: "no token list in the answer".into(),
        })
    }

    /// Turns token ids back into text with the engine's tokenizer.
    pub async fn detokenize(&self, ids: &[u32]) -> Result<String, EngineError> {
        let url = format!("{}/detokenize", self.base_url);
        let body = match self.dialect.tokenizer {
            TokenizerKind::OpenAiStyle => json!({"model": self.model.served_model, "tokens": ids}),
            TokenizerKind::LlamaCpp => json!({"tokens": ids}),
            TokenizerKind::Tgi => {
                return Err(EngineError::Unsupported(
                    "TGI has no detokenize endpoint".into(),
                ));
            }
            TokenizerKind::None => return Err(self.no_tokenizer()),
        };
        let v = self.post_json(&url, &body).await?;
        ["prompt", "text", "content"]
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_str))
            .map(str::to_owned)
            .ok_or_else(|| EngineError::Parse {
                url,
                detail: "no text in the answer".into(),
            })
    }

    fn no_tokenizer(&self) -> EngineError {
        EngineError::Unsupported(format!("{} exposes no tokenize endpoint", self.kind.name()))
    }
}

/// Token ids from any tokenize answer: `{"tokens": [ids]}`, `{"tokens": [{"id": …}]}`
/// (llama.cpp with pieces), or TGI's `[{"id": …}]`.
fn parse_tokens(v: &Value) -> Option<Vec<u32>> {
    let list = match v {
        Value::Array(a) => a,
        Value::Object(o) => o.get("tokens")?.as_array()?,
        _ => return None,
    };
    list.iter()
        .map(|t| {
            let n = match t {
                Value::Number(n) => n.as_u64(),
                Value::Object(o) => o.get("id").and_then(Value::as_u64),
                _ => None,
            }?;
            u32::try_from(n).ok()
        })
        .collect()
}
