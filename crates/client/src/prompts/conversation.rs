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
use llmib_core::{
    AnswerKind, MessageKind, SessionReplay, TurnInput, WorkloadError, WorkloadKind, WorkloadSpec,
};
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
    /// Its own tool definitions, chat-shaped (a replayed agent's; `None`: `--tools`', if any).
    tools: Option<Value>,
    /// Tool calls made so far: the next call's id is `call_{calls}`.
    calls: u32,
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
            tools: None,
            calls: 0,
        }
    }

    /// Its tool definitions, chat-shaped, where it has its own.
    pub(crate) fn tools(&self) -> Option<&Value> {
        self.tools.as_ref()
    }

    /// Sends `tools` (chat-shaped) with every later request, or `--tools`' with `None`.
    pub(crate) fn set_tools(&mut self, tools: Option<Value>) {
        self.tools = tools;
    }

    /// Appends the model's `answer` to the last prompt: as its text, or as a tool call whose
    /// arguments carry it (`{"input": answer}`, one call of `run`). A completions prompt has
    /// no calls: the text is appended either way (an agent's trace is refused there).
    pub(crate) fn push_answer(&mut self, answer: &str, kind: AnswerKind) {
        match (&mut self.messages, kind) {
            (Some(m), AnswerKind::Text) => {
                m.push(json!({"role": "assistant", "content": answer}));
            }
            (Some(m), AnswerKind::ToolCall) => {
                self.calls += 1;
                let args = json!({ "input": answer }).to_string();
                m.push(json!({"role": "assistant", "content": "", "tool_calls": [
                    {"id": format!("call_{}", self.calls), "type": "function",
                     "function": {"name": "run", "arguments": args}}]}));
            }
            // The model continued the text; the next message starts a paragraph after it.
            (None, _) => self.text.push_str(answer),
        }
    }

    /// Appends a new message: a user's, or the result of the last tool call.
    pub(crate) fn push_message(&mut self, text: &str, kind: MessageKind) {
        match (&mut self.messages, kind) {
            (Some(m), MessageKind::User) => m.push(json!({"role": "user", "content": text})),
            (Some(m), MessageKind::ToolResult) => m.push(json!({"role": "tool",
                "tool_call_id": format!("call_{}", self.calls), "content": text})),
            (None, _) => {
                self.text.push_str("\n\n");
                self.text.push_str(text);
            }
        }
    }

    /// The prompt as a request sends it.
    pub(crate) fn input(&self) -> PromptInput {
        match &self.messages {
            Some(m) => PromptInput::Messages(Value::Array(m.clone())),
            None => PromptInput::Text(self.text.clone()),
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
            Some(m) => match count_on_route(engine, m, self.tools.as_ref()).await {
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
    tools: Option<&Value>,
) -> Result<Option<u64>, crate::server::engine::EngineError> {
    let all = Value::Array(m.to_vec());
    let Some(n) = engine.count_messages_with_tools(&all, tools).await? else {
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
    let fit = Fit {
        system,
        system_hint,
        context,
        tools: None,
    };
    fitted(builder, engine, chat, &fit, stream).await
}

/// What a history is fitted to: its system prompt, about how many tokens it takes, the whole
/// prompt's tokens, and its own tool definitions (chat-shaped), where it has them.
struct Fit<'a> {
    system: &'a str,
    system_hint: u64,
    context: u64,
    tools: Option<&'a Value>,
}

/// [`history`] with its own tools, counted with them.
async fn fitted(
    builder: &mut PromptBuilder,
    engine: &Engine,
    chat: bool,
    fit: &Fit<'_>,
    stream: u32,
) -> Result<Conversation, PromptError> {
    let (system, system_hint, context) = (fit.system, fit.system_hint, fit.context);
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
        let built = builder.build_text(want, stream).await?;
        let PromptInput::Text(user) = built.input else {
            return Err(PromptError::Inexact { context, closest });
        };
        let mut c = Conversation::new(chat, system, &user);
        c.set_tools(fit.tools.cloned());
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
/// counted by the server; `tools` (chat-shaped) its own tool definitions, where it has them.
pub(crate) async fn opening(
    builder: &mut PromptBuilder,
    engine: &Engine,
    (chat, tools): (bool, Option<&Value>),
    system: &str,
    system_hint: u64,
    input: &TurnInput,
    stream: u32,
) -> Result<Conversation, PromptError> {
    match input {
        TurnInput::Tokens(n) => {
            let fit = Fit {
                system,
                system_hint,
                context: *n,
                tools,
            };
            fitted(builder, engine, chat, &fit, stream).await
        }
        TurnInput::Text(t) => {
            let mut c = Conversation::new(chat, system, t);
            c.set_tools(tools.cloned());
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
    match spec.kind {
        WorkloadKind::Sessions => return llmib_core::parse_session_trace(&file, &text),
        WorkloadKind::Weka => return llmib_core::parse_weka_trace(&file, &text),
        _ => {}
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
