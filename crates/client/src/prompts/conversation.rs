//! A session's conversation (METHOD.md, "Sessions"): its history of exactly C tokens (a
//! system prompt, shared by a group of sessions, and a first user message), then turn after
//! turn the model's own answer and a new user message appended. A chat server gets the history
//! as `messages`; a completions server as one text, each part a blank line after the last.
//!
//! Every prompt is counted whole by the server's own tokenizer and template before it is sent
//! (`Engine::count_messages`, or `/tokenize` of the text): an answer's text may tokenize
//! differently where it meets the next message, so adding counts would drift.

use crate::prompts::prompt::{PromptBuilder, PromptError};
use crate::server::engine::{Engine, PromptInput};
use llmib_core::{SessionReplay, TurnInput, WorkloadError, WorkloadKind, WorkloadSpec};
use serde_json::{Value, json};

/// How many times the history's first message is resized to hit C exactly.
const FIT_TRIES: usize = 4;

/// One session's conversation so far.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    /// `messages` for a chat server; `None`: one text.
    messages: Option<Vec<Value>>,
    text: String,
    /// The prompt's tokens as the server counted it last.
    pub tokens: u64,
}

impl Conversation {
    fn new(chat: bool, system: &str, user: &str) -> Conversation {
        let messages = chat.then(|| {
            vec![
                json!({"role": "system", "content": system}),
                json!({"role": "user", "content": user}),
            ]
        });
        let text = if chat {
            String::new()
        } else {
            format!("{system}\n\n{user}")
        };
        Conversation {
            messages,
            text,
            tokens: 0,
        }
    }

    /// The prompt as a request sends it.
    pub(crate) fn input(&self) -> PromptInput {
        match &self.messages {
            Some(m) => PromptInput::Messages(Value::Array(m.clone())),
            None => PromptInput::Text(self.text.clone()),
        }
    }

    /// Appends the model's `answer` to the last prompt and a new `user` message.
    pub(crate) fn push_turn(&mut self, answer: &str, user: &str) {
        match &mut self.messages {
            Some(m) => {
                m.push(json!({"role": "assistant", "content": answer}));
                m.push(json!({"role": "user", "content": user}));
            }
            None => {
                // The model continued the text; the next message starts a paragraph after it.
                self.text.push_str(answer);
                self.text.push_str("\n\n");
                self.text.push_str(user);
            }
        }
    }

    /// Counts the whole prompt with the server's tokenizer (and template), and keeps it.
    pub(crate) async fn count(&mut self, engine: &Engine) -> Result<u64, PromptError> {
        let fail = |detail: String, transport: bool| PromptError::Tokenize {
            context: self.tokens,
            detail,
            transport,
        };
        let n = match &self.messages {
            Some(m) => match count_on_route(engine, m).await {
                Ok(Some(n)) => n,
                Ok(None) => {
                    return Err(fail(
                        "this engine cannot count a chat prompt without running it, so a session's turns cannot be exact: use --api completions for sessions".into(),
                        false,
                    ));
                }
                Err(e) => {
                    let transport = matches!(e, crate::server::engine::EngineError::Transport(_));
                    return Err(fail(format!("counting a session's prompt: {e}"), transport));
                }
            },
            None => match engine.tokenize(&self.text, engine.prompt_adds_bos()).await {
                Ok(ids) => ids.len() as u64,
                Err(e) => {
                    let transport = matches!(e, crate::server::engine::EngineError::Transport(_));
                    return Err(fail(format!("counting a session's prompt: {e}"), transport));
                }
            },
        };
        self.tokens = n;
        Ok(n)
    }
}

/// The route's count of a conversation: the chat template's render, plus what the agents'
/// routes add to it (`Engine::route_extra_tokens`).
async fn count_on_route(
    engine: &Engine,
    m: &[Value],
) -> Result<Option<u64>, crate::server::engine::EngineError> {
    let Some(n) = engine.count_messages(&Value::Array(m.to_vec())).await? else {
        return Ok(None);
    };
    let extra = engine.route_extra_tokens().await?;
    Ok(Some(n.saturating_add_signed(extra)))
}

/// The history of one session: `system`, then a first user message sized so that the whole
/// prompt is exactly `context` tokens by the server's count (`stream` tags the message, so no
/// two sessions' histories share more than the system prompt). `system_hint`: about how many
/// tokens the system prompt takes, the first guess.
pub(crate) async fn history(
    builder: &mut PromptBuilder,
    engine: &Engine,
    chat: bool,
    system: &str,
    system_hint: u64,
    context: u64,
    stream: u32,
) -> Result<Conversation, PromptError> {
    let short = || PromptError::Tokenize {
        context,
        detail: format!(
            "a history of {context} tokens leaves no room for a message after the system prompt (about {system_hint} tokens): raise the context or lower --system-prompt-len"
        ),
        transport: false,
    };
    let mut want = context
        .checked_sub(system_hint)
        .filter(|w| *w > 0)
        .ok_or_else(short)?;
    let mut closest = 0;
    for _ in 0..FIT_TRIES {
        let built = builder.build(want, stream).await?;
        let PromptInput::Text(user) = built.input else {
            return Err(PromptError::Inexact { context, closest });
        };
        let mut c = Conversation::new(chat, system, &user);
        let n = c.count(engine).await?;
        if n == context {
            return Ok(c);
        }
        closest = n;
        // The system prompt and the joins cost what the counts differ by; resize by it.
        let next = want as i64 + context as i64 - n as i64;
        want = u64::try_from(next)
            .ok()
            .filter(|w| *w > 0)
            .ok_or_else(short)?;
    }
    Err(PromptError::Inexact { context, closest })
}

/// A replayed session's first prompt: `system`, then its first message: a filler sized so that
/// the whole prompt is exactly `n` tokens (a trace), or the recorded text as it is (ShareGPT),
/// counted by the server.
pub(crate) async fn opening(
    builder: &mut PromptBuilder,
    engine: &Engine,
    chat: bool,
    system: &str,
    system_hint: u64,
    input: &TurnInput,
    stream: u32,
) -> Result<Conversation, PromptError> {
    match input {
        TurnInput::Tokens(n) => {
            history(builder, engine, chat, system, system_hint, *n, stream).await
        }
        TurnInput::Text(t) => {
            let mut c = Conversation::new(chat, system, t);
            c.count(engine).await?;
            Ok(c)
        }
    }
}

/// Reads a replay's file: a session trace, or ShareGPT's conversations with each recorded
/// reply counted by the server's tokenizer (each distinct text once; the core's parser is
/// synchronous, so the file is parsed once to collect the texts and again with their counts).
pub(crate) async fn load_replay(
    engine: &Engine,
    spec: &WorkloadSpec,
) -> Result<SessionReplay, WorkloadError> {
    let file = spec.path.display().to_string();
    let text = std::fs::read_to_string(&spec.path).map_err(|e| WorkloadError::Read {
        file: file.clone(),
        error: e.to_string(),
    })?;
    if spec.kind == WorkloadKind::Sessions {
        return llmib_core::parse_session_trace(&file, &text);
    }
    let texts = std::cell::RefCell::new(Vec::new());
    llmib_core::parse_sharegpt_sessions(&file, &text, &|t| {
        texts.borrow_mut().push(t.to_string());
        1
    })?;
    let counts =
        crate::prompts::block_prompt::count_texts(engine, &file, texts.into_inner()).await?;
    llmib_core::parse_sharegpt_sessions(&file, &text, &|t| counts.get(t).copied().unwrap_or(0))
}
