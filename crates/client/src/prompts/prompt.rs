//! Prompts of exactly C tokens by the server's own tokenizer, one per (run, context, stream).
//!
//! Each prompt starts with a unique tag (run seed, context, stream), so no two prompts share a
//! prefix and a prefix cache cannot serve one from another; the rest is deterministic filler
//! text, or the run's `--prompt-text` file from an offset per stream (`crate::prompts::text`).
//! Exactness comes from the server: the text is tokenized once, cut at C tokens by
//! detokenizing the first C ids, and re-tokenized to verify; boundary effects (a word that
//! merges differently when cut) are corrected in a few steps. Where the text cannot hit C exactly
//! and the engine takes token-id prompts, the first C ids are sent as ids instead. A chat
//! prompt is counted whole (template included) by the server without running the model where
//! the engine can (`Engine::chat_prompt_tokens`), since the template's joins with a message may
//! merge differently for each message.
//!
//! Cost: one tokenize of ~C tokens, one detokenize, one or two verifying tokenizes. For a
//! 1M-token prompt that is a few seconds on a real server, not minutes.
//! With `--token-targeting ids` (`Targeting::Ids`) a prompt is token ids instead, exact by
//! construction and built with no server call (`prompts::id_prompt`).

use crate::prompts::filler::{self, TextMaker};
use crate::prompts::id_prompt::{IdWords, LearnError};
use crate::prompts::text::{Body, PromptText};
use crate::server::engine::{Engine, EngineError, PromptInput};
use llmib_core::{Api, Targeting, estimate_tolerance};
use std::collections::HashMap;
use std::sync::Arc;

/// A grown filler text: exact as it is, or its token ids to cut at C.
enum Grown {
    Exact(String),
    Ids(Vec<u32>),
}

/// A prompt ready to send.
#[derive(Debug, Clone)]
pub struct BuiltPrompt {
    /// What goes into the request's `prompt`.
    pub input: PromptInput,
    /// Its exact token count as the server counts it (special tokens included).
    pub tokens: u64,
}

/// Why a prompt could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The engine has no tokenizer endpoint.
    #[error(
        "the server exposes no tokenize endpoint, so exact-length prompts cannot be built; pass --token-targeting estimate (lengths from the server's usage, within 0.5%) or use an engine with /tokenize"
    )]
    NoTokenizer,
    /// Tokenize/detokenize failed.
    #[error("building a {context}-token prompt failed: {detail}")]
    Tokenize {
        /// The context.
        context: u64,
        /// The cause.
        detail: String,
        /// The call got no HTTP answer (the server is down or unreachable), rather than an
        /// answer the tool could not use.
        transport: bool,
    },
    /// The text could not be made exactly C tokens long and ids are not accepted.
    #[error(
        "could not build a prompt of exactly {context} tokens (closest: {closest}); the engine does not take token-id prompts"
    )]
    Inexact {
        /// The context.
        context: u64,
        /// The closest count reached.
        closest: u64,
    },
}

impl PromptError {
    /// The error kind a row records: `prompt_connect` when the server could not be reached
    /// (a crash cut the cell: `--resume` measures it again), `prompt` otherwise.
    pub fn kind(&self) -> &'static str {
        match self {
            PromptError::Tokenize {
                transport: true, ..
            } => "prompt_connect",
            _ => "prompt",
        }
    }

    /// A failed server call while building the `context` prompt: `what` names the call (empty:
    /// the engine's own words suffice), and a transport error stays marked as one.
    fn engine(context: u64, what: &str, e: EngineError) -> PromptError {
        let transport = matches!(e, EngineError::Transport(_));
        let detail = if what.is_empty() {
            e.to_string()
        } else {
            format!("{what}: {e}")
        };
        PromptError::Tokenize {
            context,
            detail,
            transport,
        }
    }
}

/// Builds exact prompts for one run.
pub struct PromptBuilder {
    engine: Arc<Engine>,
    seed: u64,
    /// What follows each prompt's tag: the filler, or the run's `--prompt-text`.
    body: Body,
    /// Tokens per word of the body (filler or text), measured once.
    tokens_per_word: Option<f64>,
    /// Tokens per filler word where the body is a text: a session's new messages stay filler
    /// ([`TextMaker`]) and are sized by it.
    filler_per_word: Option<f64>,
    /// Special tokens the server adds to a string prompt (BOS).
    special: Option<u64>,
    /// Tokens the chat template adds around the message (chat requests; 0 for completions).
    template: Option<u64>,
    /// How a prompt's length is counted (set by the calibration).
    chat: ChatCount,
    /// Exact (tokenizer) or estimated (server usage) lengths.
    targeting: Targeting,
    /// Estimated targeting: filler words that make each context's prompt C tokens by the
    /// server's count, found once per context and reused for every stream.
    estimated: HashMap<u64, usize>,
    /// Estimated targeting: the server's tokens per probe word at the last context found
    /// (the next context's first guess).
    estimated_per_word: Option<f64>,
    /// Token-id targeting: the filler words' ids, learned at the first prompt.
    ids: Option<Arc<IdWords>>,
}

/// How the builder counts a prompt's tokens as the server will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChatCount {
    /// A completion's string prompt: the tokenizer's count of the text.
    Completions,
    /// A chat message, rendered and counted by the server without running the model
    /// (`Engine::chat_prompt_tokens`); `offset` is what the chat endpoint counted beyond that
    /// on the calibration sample (0 where they agree).
    Rendered {
        /// Chat endpoint's count minus the rendered count.
        offset: i64,
    },
    /// A chat message on an engine that cannot count a rendered prompt: the message's own
    /// tokens plus the template's, measured once. Every message starts and ends as the
    /// calibration sample does (see [`filler::chat_message`]), so that its joins with the template
    /// tokenize the same way in every prompt.
    Subtracted,
}

impl PromptBuilder {
    /// A builder for a run with the given seed (unique per run).
    pub fn new(engine: Arc<Engine>, seed: u64) -> Self {
        PromptBuilder {
            engine,
            seed,
            body: Body::Filler,
            tokens_per_word: None,
            filler_per_word: None,
            special: None,
            template: None,
            chat: ChatCount::Completions,
            targeting: Targeting::Exact,
            estimated: HashMap::new(),
            estimated_per_word: None,
            ids: None,
        }
    }

    /// Prompts hit their length this way from now on.
    pub fn with_targeting(mut self, t: Targeting) -> Self {
        self.targeting = t;
        self
    }

    /// Prompts are cut from this text instead of the filler words (`--prompt-text`): a source
    /// without its text (a run read back from `run.json`) leaves the filler.
    pub fn with_prompt_text(mut self, source: Option<&llmib_core::PromptTextSource>) -> Self {
        if let Some(t) = source
            .and_then(|s| s.text.clone())
            .and_then(PromptText::new)
        {
            self.body = Body::Text(Arc::new(t));
        }
        self
    }

    /// An estimated prompt: the tag, then stream 0's filler (or stream 0's passage of the
    /// `--prompt-text` file: one length per context holds for every stream only on the same
    /// words), so that the streams of a context differ only in the tag (a token or two) while
    /// no two share a prefix. A `probe` text has
    /// a tag of the same shape from another seed: the server's prefix cache must not keep a
    /// probe for the measured prompt (the prefill scout would time a cache hit).
    fn estimated_text(&self, context: u64, stream: u32, words: usize, probe: bool) -> String {
        let seed = if probe { !self.seed } else { self.seed };
        // The stream number has a fixed width, so that every stream's tag is as many tokens
        // as the probe's: the length found for stream 0 then holds for stream 127 too (with
        // `S5` against `S127` the tags differ by a token or two, which a 1K context's 0.5 %
        // cannot absorb).
        let mut text = format!("[{seed:016x} C{context} S{stream:010}] ");
        self.filler(context, 0, words, &mut text);
        text
    }

    /// The server's count of a probe of `words` filler words (estimated targeting). A guess
    /// longer than the server's window is refused with an error status: the probe is retried
    /// with fewer words, by steps that grow (0.5 %, 2 %, 8 %, 25 %, 50 %), so a context a few
    /// tokens under the window (`full`) is found from above within its 0.5 %, and a first
    /// guess far off still gets in. Returns the words actually probed and their count.
    ///
    /// The third value is the fewest words the server refused on the way, if any: an upper
    /// bound the caller's search must stay under.
    async fn probe(
        &self,
        context: u64,
        mut words: usize,
    ) -> Result<(usize, u64, Option<usize>), PromptError> {
        const SHRINK: [f64; 5] = [0.995, 0.98, 0.92, 0.75, 0.5];
        let mut shrinks = SHRINK.iter();
        let mut refused = None;
        loop {
            match self
                .server_count(context, &self.estimated_text(context, 0, words, true))
                .await
            {
                Ok(n) => return Ok((words, n, refused)),
                Err(
                    e @ PromptError::Tokenize {
                        transport: false, ..
                    },
                ) => match shrinks.next() {
                    Some(f) if words > 1 => {
                        refused = Some(words);
                        words = ((words as f64 * f) as usize).clamp(1, words - 1);
                    }
                    _ => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// The server's count of `text` (estimated targeting).
    async fn server_count(&self, context: u64, text: &str) -> Result<u64, PromptError> {
        self.engine.prompt_tokens_of(text).await.map_err(|e| {
            PromptError::engine(context, "counting a prompt with the server's usage", e)
        })
    }

    /// Estimated targeting: probe requests (`max_tokens = 1`) read the server's count; the word
    /// count is corrected by secant steps until the count is within
    /// `llmib_core::estimate_tolerance` of C (exact when it lands). At most 8 probes.
    async fn build_estimated(
        &mut self,
        context: u64,
        stream: u32,
    ) -> Result<BuiltPrompt, PromptError> {
        if let Some(&words) = self.estimated.get(&context) {
            return Ok(BuiltPrompt {
                input: PromptInput::Text(self.estimated_text(context, stream, words, false)),
                tokens: context,
            });
        }
        let tol = estimate_tolerance(context);
        let c = context as f64;
        // A first guess from the tokens per word of the last context found (1.3 before the
        // first), then the ratio, then secant steps.
        let per_word = self.estimated_per_word.unwrap_or(1.3);
        let (mut w0, mut p0, mut above) = self
            .probe(context, ((c / per_word) as usize).max(1))
            .await?;
        let mut w1 = w0;
        let mut p1 = p0;
        for _ in 0..7 {
            if p1.abs_diff(context) <= tol {
                break;
            }
            let next = if p1 != p0 && w1 != w0 {
                let slope = (p1 as f64 - p0 as f64) / (w1 as f64 - w0 as f64);
                w1 as f64 + (c - p1 as f64) / slope.max(1e-3)
            } else {
                w1 as f64 * c / (p1.max(1) as f64)
            };
            let mut next = (next.round() as usize).max(1);
            // Never at or past a length the server refused: bisect towards it instead (the
            // `full` context sits a token or two under the window).
            if let Some(a) = above.filter(|&a| next >= a) {
                next = (w1 + a) / 2;
            }
            if next == w1 {
                break;
            }
            (w0, p0) = (w1, p1);
            let refused;
            (w1, p1, refused) = self.probe(context, next).await?;
            above = match (above, refused) {
                (Some(a), Some(r)) => Some(a.min(r)),
                (a, r) => a.or(r),
            };
        }
        if p1.abs_diff(context) > tol {
            return Err(PromptError::Inexact {
                context,
                closest: p1,
            });
        }
        self.estimated.insert(context, w1);
        self.estimated_per_word = Some(p1 as f64 / w1.max(1) as f64);
        Ok(BuiltPrompt {
            input: PromptInput::Text(self.estimated_text(context, stream, w1, false)),
            tokens: context,
        })
    }

    /// A chat message from a cut text: [`filler::chat_message`] for the filler. A `--prompt-text`
    /// body keeps its trailing white space: a file's line breaks and indentation run to
    /// several tokens, and trimmed at the cut they would leave prompt lengths no cut reaches
    /// (found on a Rust file: 2,034 tokens at best for 2,048). Its ends are still fixed: the
    /// tag's `[` first, [`filler::CHAT_END`] last.
    fn message(&self, text: &str) -> String {
        match self.body {
            Body::Filler => filler::chat_message(text),
            Body::Text(_) => format!("{}{}", text.trim_start(), filler::CHAT_END),
        }
    }

    /// This run's tag of a (context, stream) prompt ([`filler::tag`]).
    fn tag(&self, context: u64, stream: u32, salt: &str) -> String {
        filler::tag(self.seed, context, stream, salt)
    }

    /// Appends this run's `words` words of a (context, stream) prompt to `out`: filler words
    /// ([`filler::words`]) or the `--prompt-text` file's ([`PromptText::words`]).
    fn filler(&self, context: u64, stream: u32, words: usize, out: &mut String) {
        self.body.words(self.seed, context, stream, words, out);
    }

    async fn tokenize(&self, context: u64, text: &str) -> Result<Vec<u32>, PromptError> {
        self.engine
            .tokenize(text, self.engine.prompt_adds_bos())
            .await
            .map_err(|e| PromptError::engine(context, "", e))
    }

    /// Tokens per filler word, special tokens of a string prompt, and the chat template's
    /// tokens, measured once per run; for chat, also how each prompt will be counted.
    async fn calibrate(&mut self) -> Result<(f64, u64, u64), PromptError> {
        if let (Some(r), Some(s), Some(t)) = (self.tokens_per_word, self.special, self.template) {
            return Ok((r, s, t));
        }
        let (template, chat) = match self.engine.api() {
            Api::Completions => (0, ChatCount::Completions),
            Api::Chat | Api::Messages | Api::Responses => {
                // A message that starts and ends as every prompt does (the tag, the end mark),
                // so the template's joins with the message tokenize as in the real prompts.
                let mut sample = self.tag(0, u32::MAX, "template-");
                self.filler(0, u32::MAX, 40, &mut sample);
                let sample = self.message(&sample);
                let cal = self
                    .engine
                    .chat_template_tokens(&sample)
                    .await
                    .map_err(|e| PromptError::engine(0, "measuring the chat template", e))?;
                let chat = match self
                    .engine
                    .chat_prompt_tokens(&sample)
                    .await
                    .map_err(|e| PromptError::engine(0, "counting a chat prompt", e))?
                {
                    // The chat endpoint's count against the rendered prompt's, on the same
                    // message: 0 where they agree, else the constant the endpoint adds.
                    Some(n) => {
                        let offset = cal.total as i64 - n as i64;
                        // On an agents' route this is what a session's turns add too.
                        self.engine.note_route_extra(offset);
                        ChatCount::Rendered { offset }
                    }
                    None => ChatCount::Subtracted,
                };
                (cal.template, chat)
            }
        };
        let mut sample = String::new();
        self.filler(0, u32::MAX, 2000, &mut sample);
        let with = self.tokenize(0, &sample).await?.len() as u64;
        let plain = self
            .engine
            .tokenize(&sample, false)
            .await
            .map_err(|e| PromptError::engine(0, "", e))?
            .len() as u64;
        let special = if self.engine.prompt_adds_bos() {
            with.saturating_sub(plain)
        } else {
            0
        };
        let r = (plain.max(1) as f64) / 2000.0;
        if matches!(self.body, Body::Text(_)) {
            self.filler_per_word = Some(self.filler_rate().await?);
        }
        self.tokens_per_word = Some(r);
        self.special = Some(special);
        self.template = Some(template);
        self.chat = chat;
        Ok((r, special, template))
    }

    /// Tokens per filler word by the server's tokenizer, on a sample of 2,000 (the body's own
    /// rate is the calibration's, where the body is a text).
    async fn filler_rate(&self) -> Result<f64, PromptError> {
        let mut sample = String::new();
        filler::words(self.seed, 0, u32::MAX, 2000, &mut sample);
        let n = self
            .engine
            .tokenize(&sample, false)
            .await
            .map_err(|e| PromptError::engine(0, "", e))?
            .len();
        Ok(n.max(1) as f64 / 2000.0)
    }

    /// The server's count of `text` as the request's prompt: the string prompt's tokens
    /// (completions); the rendered chat prompt's where the server can count it; else the
    /// message's own tokens plus the template's.
    async fn exact_count(&self, context: u64, text: &str) -> Result<u64, PromptError> {
        match self.chat {
            ChatCount::Completions => Ok(self.tokenize(context, text).await?.len() as u64),
            ChatCount::Subtracted => {
                Ok(self.tokenize(context, text).await?.len() as u64 + self.template.unwrap_or(0))
            }
            ChatCount::Rendered { offset } => match self
                .engine
                .chat_prompt_tokens(text)
                .await
                .map_err(|e| PromptError::engine(context, "counting a chat prompt", e))?
            {
                Some(n) => Ok((n as i64 + offset).max(0) as u64),
                None => Err(PromptError::Tokenize {
                    context,
                    detail: "the server stopped counting chat prompts it counted before".into(),
                    transport: false,
                }),
            },
        }
    }

    /// Builds the prompt of exactly `context` tokens for `stream`; at context 0, the minimal
    /// prompt: only its fixed part, the tag (and, for chat, the template around it). With
    /// token-id targeting the prompt is ids (`prompts::id_prompt`).
    pub async fn build(&mut self, context: u64, stream: u32) -> Result<BuiltPrompt, PromptError> {
        if context > 0 && self.targeting == Targeting::Ids {
            return self.build_ids(context, stream).await;
        }
        self.build_text(context, stream).await
    }

    /// A token-id prompt of exactly `context` ids: the filler's words for (context, stream) in
    /// the server tokenizer's ids, learned at the first call.
    async fn build_ids(&mut self, context: u64, stream: u32) -> Result<BuiltPrompt, PromptError> {
        let words = match &self.ids {
            Some(w) => w.clone(),
            None => {
                let w = IdWords::learn(&self.engine).await.map_err(|e| match e {
                    LearnError::Engine(e) => {
                        PromptError::engine(context, "learning the filler words' token ids", e)
                    }
                    e => PromptError::Tokenize {
                        context,
                        detail: e.to_string(),
                        transport: false,
                    },
                })?;
                self.ids.insert(Arc::new(w)).clone()
            }
        };
        match words.prompt(self.seed, context, stream) {
            Some(ids) => Ok(BuiltPrompt {
                input: PromptInput::Ids(ids),
                tokens: context,
            }),
            None => Err(PromptError::Inexact {
                context,
                closest: words.shortest(),
            }),
        }
    }

    /// [`PromptBuilder::build`] as text whatever the targeting: a conversation's message.
    pub(crate) async fn build_text(
        &mut self,
        context: u64,
        stream: u32,
    ) -> Result<BuiltPrompt, PromptError> {
        if context == 0 {
            return self.minimal(stream).await;
        }
        if self.targeting == Targeting::Estimate {
            return self.build_estimated(context, stream).await;
        }
        if !self.engine.has_tokenizer() {
            return Err(PromptError::NoTokenizer);
        }
        let (per_word, special, template) = self.calibrate().await?;
        // What the tokenizer must count for the server to count `context`: a chat message is
        // the context minus the template's tokens (a first guess: the count of the whole
        // prompt decides).
        let target = match context.checked_sub(template) {
            Some(t) if t > 0 => t,
            _ => {
                return Err(PromptError::Inexact {
                    context,
                    closest: template,
                });
            }
        };
        match self
            .grow(context, stream, target, per_word, template)
            .await?
        {
            Grown::Exact(text) => Ok(BuiltPrompt {
                input: PromptInput::Text(text),
                tokens: context,
            }),
            Grown::Ids(ids) => self.cut(context, target, special, ids).await,
        }
    }

    /// Grows a filler text until the tokenizer counts at least `target` tokens: the text
    /// itself where it is exact already (completions), else its token ids to cut.
    async fn grow(
        &self,
        context: u64,
        stream: u32,
        target: u64,
        per_word: f64,
        template: u64,
    ) -> Result<Grown, PromptError> {
        let chat = self.chat != ChatCount::Completions;
        let tag = self.tag(context, stream, "");
        let mut words = (((target as f64) / per_word) * 1.03) as usize + 16;
        let mut attempts = 0;
        loop {
            let mut text = tag.clone();
            self.filler(context, stream, words, &mut text);
            let ids = self.tokenize(context, &text).await?;
            if ids.len() as u64 >= target {
                if !chat && ids.len() as u64 == target {
                    return Ok(Grown::Exact(text));
                }
                return Ok(Grown::Ids(ids));
            }
            attempts += 1;
            if attempts > 6 {
                return Err(PromptError::Inexact {
                    context,
                    closest: ids.len() as u64 + template,
                });
            }
            let missing = target - ids.len() as u64;
            words += ((missing as f64 / per_word) * 1.1) as usize + 16;
        }
    }

    /// Cuts grown token ids at C tokens: detokenizes the content ids (after any BOS), fixes a
    /// chat message's ends ([`filler::chat_message`]), and verifies by the server's count of the whole
    /// prompt.
    async fn cut(
        &self,
        context: u64,
        target: u64,
        special: u64,
        ids: Vec<u32>,
    ) -> Result<BuiltPrompt, PromptError> {
        let chat = self.chat != ChatCount::Completions;
        let skip = special as usize;
        // The end mark is a word and a full stop: two tokens in most vocabularies (a first
        // guess; the count decides).
        let mut content_len = (target as usize).saturating_sub(skip + 2 * usize::from(chat));
        let mut closest = u64::MAX;
        for _ in 0..8 {
            let end = (skip + content_len).min(ids.len());
            let mut text = self
                .engine
                .detokenize(&ids[skip..end])
                .await
                .map_err(|e| PromptError::engine(context, "", e))?;
            if chat {
                text = self.message(&text);
            }
            let n = self.exact_count(context, &text).await?;
            if n == context {
                return Ok(BuiltPrompt {
                    input: PromptInput::Text(text),
                    tokens: context,
                });
            }
            if n.abs_diff(context) < closest.abs_diff(context) {
                closest = n;
            }
            // Re-tokenizing a cut text can merge or split at the boundary: step the cut by the
            // difference and try again.
            let diff = n as i64 - context as i64;
            let next = content_len as i64 - diff;
            if next <= 0 || next as usize == content_len {
                break;
            }
            content_len = next as usize;
        }
        if self.engine.takes_token_ids() {
            return Ok(BuiltPrompt {
                input: PromptInput::Ids(ids[..target as usize].to_vec()),
                tokens: context,
            });
        }
        Err(PromptError::Inexact { context, closest })
    }

    /// Context 0, the seed's decode "with no filler": only the prompt's fixed part, the unique
    /// tag that keeps streams from sharing a prefix (and, for chat, the template around it).
    /// Its length is what the server counts, known where it has a tokenizer (else 0: the cell's
    /// prompt check then accepts up to `llmib_core::MINIMAL_PROMPT_MAX` tokens).
    async fn minimal(&mut self, stream: u32) -> Result<BuiltPrompt, PromptError> {
        let mut text = self.tag(0, stream, "").trim_end().to_string();
        if self.targeting == Targeting::Estimate || !self.engine.has_tokenizer() {
            return Ok(BuiltPrompt {
                input: PromptInput::Text(text),
                tokens: 0,
            });
        }
        self.calibrate().await?;
        if self.chat != ChatCount::Completions {
            text = self.message(&text);
        }
        let tokens = self.exact_count(0, &text).await?;
        Ok(BuiltPrompt {
            input: PromptInput::Text(text),
            tokens,
        })
    }

    /// The server's count of `text` sent as a prompt (BOS and any chat template included),
    /// for prompts assembled outside the builder (a trace's shared prefix blocks).
    pub(crate) async fn prompt_count(&mut self, text: &str) -> Result<u64, PromptError> {
        self.calibrate().await?;
        self.exact_count(0, text).await
    }

    /// Learns the server's tokens per word where it has a tokenizer, so that throwaway
    /// prompts land near their size (a long one sized by the default guess could pass the
    /// context length); without one the guess stays. A failure here is no failure of the run:
    /// the first cell's own calibration reports it.
    pub async fn learn_word_rate(&mut self) {
        if self.targeting.is_exact() && self.engine.has_tokenizer() {
            let _ = self.calibrate().await;
        }
    }

    /// What makes tagged texts of about a length without the server: this run's seed and the
    /// tokens per filler word measured so far (a session's system prompts and new messages,
    /// which stay filler with `--prompt-text`: their maker is copied into each session's task).
    pub(crate) fn text_maker(&self) -> TextMaker {
        let per_word = match self.body {
            Body::Filler => self.tokens_per_word.or(self.estimated_per_word),
            Body::Text(_) => self.filler_per_word,
        };
        TextMaker::new(self.seed, per_word.unwrap_or(1.3))
    }

    /// A throwaway prompt (about `approx_tokens` long) that shares no prefix with any measured
    /// prompt, nor with another throwaway of another `index`: for the hidden warm-ups before
    /// the first measured cell.
    pub fn throwaway(&self, approx_tokens: u64, index: u32) -> PromptInput {
        let per_word = self
            .tokens_per_word
            .or(self.estimated_per_word)
            .unwrap_or(1.3);
        let mut text = self.tag(approx_tokens, u32::MAX.wrapping_sub(index), "warmup-");
        self.filler(
            approx_tokens,
            u32::MAX.wrapping_sub(1).wrapping_sub(index),
            (approx_tokens as f64 / per_word) as usize,
            &mut text,
        );
        PromptInput::Text(text)
    }
}
