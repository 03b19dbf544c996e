//! `/v1/responses` on the wire: OpenAI's Responses API as vLLM 0.32 serves it
//! ([`ResponsesFrames`]), shapes and key order as recorded
//! (`crates/client/fixtures/transcripts/vllm/live/responses_*`).
//!
//! A stream is SSE with an `event:` line naming each event's `type`, every event numbered by
//! `sequence_number` from 0: `response.created` and `response.in_progress` at once (the
//! response object with status `in_progress`, usage null: vLLM sends both before the engine
//! starts, so they say nothing of the first token), then per output item
//! `response.output_item.added`, `response.content_part.added`, the deltas
//! (`response.reasoning_text.delta` for a reasoning answer's thinking, in a `reasoning` item
//! first; `response.output_text.delta` for the text, in a `message` item), then the item's
//! `….done` events (`response.reasoning_text.done` / `response.output_text.done`,
//! `response.content_part.done`, `response.output_item.done`), and last
//! `response.completed`. vLLM ends a length stop with `response.completed` too, its response
//! saying `status: "incomplete"` and `incomplete_details: {"reason": "max_output_tokens"}`.
//! No `[DONE]`. A failure mid-stream is an `error` event (`code` `InternalServerError`, the
//! type vLLM gives a generation error; not recorded) and the end of the body.
//!
//! Usage follows OpenAI's reading: `input_tokens` includes the cached ones
//! (`input_tokens_details.cached_tokens`), `output_tokens` the reasoning ones
//! (`output_tokens_details.reasoning_tokens`), with vLLM's extras: `cache_write_tokens` (what
//! the prompt wrote to the prefix cache, as `/v1/messages` reports its creation), empty
//! per-turn lists and `tool_output_tokens`. Where vLLM differs from OpenAI (and so does the
//! simulator): ids are `resp_` / `msg_` and 16 hex digits, `tool_choice` is `"none"`, message
//! items carry `phase: null`, a part's `logprobs` is `[]` while it streams and `null` once
//! done, and the response object ends with vLLM's own members (`kv_transfer_params`, …).
//!
//! Members are written in the order vLLM's pydantic models declare them, which a `Value` map
//! would sort; hence the small ordered [`Json`] tree.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::engine::Finish;
use crate::frames::{Answer, Frames, PromptSplit, Step, StepEvents};
use crate::request::Echo;
use crate::rng::{Rng, hash_tokens};
use crate::wire::{Writer, to_json};

/// A JSON value whose objects keep their members in the order given.
enum Json {
    Obj(Vec<(&'static str, Json)>),
    Arr(Vec<Json>),
    Val(Value),
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Json::Obj(members) => {
                let mut m = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Json::Arr(items) => {
                let mut q = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    q.serialize_element(i)?;
                }
                q.end()
            }
            Json::Val(v) => v.serialize(s),
        }
    }
}

fn v(x: Value) -> Json {
    Json::Val(x)
}

/// Which output item is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Reasoning,
    Message,
}

/// An output item, open or done.
struct OutItem {
    kind: Item,
    id: String,
    text: String,
}

/// `/v1/responses` framing of one request.
pub(crate) struct ResponsesFrames {
    writer: Writer,
    echo: Echo,
    /// The output limit the engine runs with (`max_output_tokens` in the response object).
    max_tokens: u32,
    /// The next event's `sequence_number`.
    seq: u64,
    /// Output items so far; the last one is open until the next starts or the answer ends.
    items: Vec<OutItem>,
    /// Whether the last item is still open.
    open: bool,
    /// Item ids are drawn from the response id, so a seed replays them.
    ids: Rng,
    /// The prefix cache is on (`cache_write_tokens` is then what the prompt wrote to it).
    cache_on: bool,
}

impl ResponsesFrames {
    /// The framing of a request answered by `writer`, echoing `echo`, generating at most
    /// `max_tokens`, on an engine whose prefix cache is on or not (`cache_on`).
    pub(crate) fn new(writer: Writer, echo: Echo, max_tokens: u32, cache_on: bool) -> Self {
        let id: Vec<u32> = writer.id.bytes().map(u32::from).collect();
        ResponsesFrames {
            ids: Rng::derive(0x1d5, hash_tokens(&id)),
            writer,
            echo,
            max_tokens,
            seq: 0,
            items: Vec::new(),
            open: false,
            cache_on,
        }
    }

    /// One event: `event: <type>`, and its members with `sequence_number` and `type`, in
    /// alphabetical order as the OpenAI SDK's event models declare them (`members` come
    /// sorted; `type` is always last).
    fn event(&mut self, kind: &'static str, mut members: Vec<(&'static str, Json)>) -> String {
        let at = members
            .iter()
            .position(|(k, _)| *k > "sequence_number")
            .unwrap_or(members.len());
        members.insert(at, ("sequence_number", v(json!(self.seq))));
        members.push(("type", v(json!(kind))));
        self.seq += 1;
        format!("event: {kind}\ndata: {}\n\n", to_json(&Json::Obj(members)))
    }

    /// The usage of `response.completed`: OpenAI's reading (cached tokens inside the input
    /// tokens) with vLLM's extras (`cache_write_tokens`, per-turn lists, tool tokens).
    fn usage(&self, completion: u32) -> Json {
        let w = &self.writer;
        let reasoning = completion.min(w.reasoning_tokens);
        let split = PromptSplit::of(w.prompt_tokens, w.cached_tokens, self.cache_on);
        let empty = || Json::Arr(Vec::new());
        Json::Obj(vec![
            ("input_tokens", v(json!(w.prompt_tokens))),
            (
                "input_tokens_details",
                Json::Obj(vec![
                    ("cached_tokens", v(json!(split.read))),
                    ("cache_write_tokens", v(json!(split.creation))),
                    ("input_tokens_per_turn", empty()),
                    ("cached_tokens_per_turn", empty()),
                ]),
            ),
            ("output_tokens", v(json!(completion))),
            (
                "output_tokens_details",
                Json::Obj(vec![
                    ("reasoning_tokens", v(json!(reasoning))),
                    ("tool_output_tokens", v(json!(0))),
                    ("output_tokens_per_turn", empty()),
                    ("tool_output_tokens_per_turn", empty()),
                ]),
            ),
            (
                "total_tokens",
                v(json!(w.prompt_tokens + u64::from(completion))),
            ),
        ])
    }

    /// The response object: `status`, its output items and usage (null while in progress).
    fn response(&self, status: &str, output: Vec<Json>, usage: Option<Json>) -> Json {
        let w = &self.writer;
        let e = &self.echo;
        let incomplete = if status == "incomplete" {
            json!({"reason": "max_output_tokens"})
        } else {
            Value::Null
        };
        Json::Obj(vec![
            ("id", v(json!(w.id))),
            ("created_at", v(json!(w.created))),
            ("incomplete_details", v(incomplete)),
            ("instructions", v(json!(e.instructions))),
            ("metadata", v(Value::Null)),
            ("model", v(json!(w.model))),
            ("object", v(json!("response"))),
            ("output", Json::Arr(output)),
            ("parallel_tool_calls", v(json!(true))),
            ("temperature", v(json!(e.temperature.unwrap_or(1.0)))),
            ("tool_choice", v(json!("none"))),
            ("tools", Json::Arr(Vec::new())),
            ("top_p", v(json!(e.top_p.unwrap_or(1.0)))),
            ("background", v(json!(false))),
            ("max_output_tokens", v(json!(self.max_tokens))),
            ("max_tool_calls", v(Value::Null)),
            ("previous_response_id", v(Value::Null)),
            ("prompt", v(Value::Null)),
            ("reasoning", v(Value::Null)),
            ("service_tier", v(json!("auto"))),
            ("status", v(json!(status))),
            ("text", v(Value::Null)),
            ("top_logprobs", v(Value::Null)),
            ("truncation", v(json!("disabled"))),
            ("usage", usage.unwrap_or(v(Value::Null))),
            ("user", v(Value::Null)),
            ("presence_penalty", v(json!(0.0))),
            ("frequency_penalty", v(json!(0.0))),
            ("kv_transfer_params", v(Value::Null)),
            ("ec_transfer_params", v(Value::Null)),
            ("input_messages", v(Value::Null)),
            ("output_messages", v(Value::Null)),
        ])
    }

    /// A content part: `output_text` (with annotations and logprobs: `[]` while it streams,
    /// `null` once done, as vLLM writes them) or `reasoning_text`.
    fn part(kind: Item, text: &str, done: bool) -> Json {
        match kind {
            Item::Message => Json::Obj(vec![
                ("annotations", Json::Arr(Vec::new())),
                ("text", v(json!(text))),
                ("type", v(json!("output_text"))),
                (
                    "logprobs",
                    if done {
                        v(Value::Null)
                    } else {
                        Json::Arr(Vec::new())
                    },
                ),
            ]),
            Item::Reasoning => Json::Obj(vec![
                ("text", v(json!(text))),
                ("type", v(json!("reasoning_text"))),
            ]),
        }
    }

    /// An output item as `output_item.added` (`done` false: empty, in progress) or
    /// `output_item.done` and the final response (`done` true: with its text) show it.
    fn item_json(it: &OutItem, done: bool) -> Json {
        let status = v(json!(if done { "completed" } else { "in_progress" }));
        match it.kind {
            Item::Message => Json::Obj(vec![
                ("id", v(json!(it.id))),
                (
                    "content",
                    Json::Arr(if done {
                        vec![Self::part(Item::Message, &it.text, true)]
                    } else {
                        Vec::new()
                    }),
                ),
                ("role", v(json!("assistant"))),
                ("status", status),
                ("type", v(json!("message"))),
                ("phase", v(Value::Null)),
            ]),
            Item::Reasoning => Json::Obj(vec![
                ("id", v(json!(it.id))),
                ("summary", Json::Arr(Vec::new())),
                ("type", v(json!("reasoning"))),
                (
                    "content",
                    if done {
                        Json::Arr(vec![Self::part(Item::Reasoning, &it.text, true)])
                    } else {
                        v(Value::Null)
                    },
                ),
                ("encrypted_content", v(Value::Null)),
                ("status", status),
            ]),
        }
    }

    /// `(item_id, output_index, content_index)` of the open item.
    fn place(&self) -> Vec<(&'static str, Json)> {
        let i = self.items.len() - 1;
        vec![
            ("content_index", v(json!(0))),
            ("item_id", v(json!(self.items[i].id))),
            ("output_index", v(json!(i))),
        ]
    }

    /// Opens an item of this kind unless it is the open one.
    fn ensure_item(&mut self, kind: Item, out: &mut Vec<String>) {
        if self.open && self.items.last().is_some_and(|it| it.kind == kind) {
            return;
        }
        self.close_item(out);
        let id = format!("msg_{:016x}", self.ids.next_u64());
        self.items.push(OutItem {
            kind,
            id,
            text: String::new(),
        });
        self.open = true;
        let index = self.items.len() - 1;
        let item = Self::item_json(&self.items[index], false);
        let e = self.event(
            "response.output_item.added",
            vec![("item", item), ("output_index", v(json!(index)))],
        );
        out.push(e);
        let mut members = self.place();
        members.insert(3, ("part", Self::part(kind, "", false)));
        let e = self.event("response.content_part.added", members);
        out.push(e);
    }

    /// Closes the open item: its text's `done`, the part's and the item's.
    fn close_item(&mut self, out: &mut Vec<String>) {
        if !self.open {
            return;
        }
        self.open = false;
        let index = self.items.len() - 1;
        let (kind, text) = (self.items[index].kind, self.items[index].text.clone());
        let mut members = self.place();
        let done_kind = match kind {
            Item::Message => {
                members.insert(2, ("logprobs", Json::Arr(Vec::new())));
                "response.output_text.done"
            }
            Item::Reasoning => "response.reasoning_text.done",
        };
        members.push(("text", v(json!(text))));
        let e = self.event(done_kind, members);
        out.push(e);
        let mut members = self.place();
        members.insert(3, ("part", Self::part(kind, &text, true)));
        let e = self.event("response.content_part.done", members);
        out.push(e);
        let item = Self::item_json(&self.items[index], true);
        let e = self.event(
            "response.output_item.done",
            vec![("item", item), ("output_index", v(json!(index)))],
        );
        out.push(e);
    }

    /// The status a finished answer reports: `incomplete` when the length limit cut it.
    fn status(finish: Finish) -> &'static str {
        match finish {
            Finish::Length => "incomplete",
            Finish::Stop | Finish::Abort => "completed",
        }
    }
}

impl Frames for ResponsesFrames {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    fn set_cached_tokens(&mut self, cached: u64) {
        self.writer.cached_tokens = cached;
    }

    fn greeting(&mut self) -> Vec<String> {
        let mut out = Vec::with_capacity(2);
        for kind in ["response.created", "response.in_progress"] {
            let r = self.response("in_progress", Vec::new(), None);
            out.push(self.event(kind, vec![("response", r)]));
        }
        out
    }

    fn opening(&mut self) -> Vec<String> {
        Vec::new()
    }

    fn step(&mut self, s: &Step<'_>) -> StepEvents {
        let mut out = StepEvents::default();
        if s.text.is_empty() {
            return out;
        }
        let kind = if s.reasoning {
            Item::Reasoning
        } else {
            Item::Message
        };
        self.ensure_item(kind, &mut out.events);
        let i = self.items.len() - 1;
        self.items[i].text.push_str(s.text);
        let mut members = self.place();
        members.insert(1, ("delta", v(json!(s.text))));
        let name = match kind {
            Item::Message => {
                members.insert(3, ("logprobs", Json::Arr(Vec::new())));
                "response.output_text.delta"
            }
            Item::Reasoning => "response.reasoning_text.delta",
        };
        out.carrier = Some(out.events.len());
        let e = self.event(name, members);
        out.events.push(e);
        out
    }

    fn closing(&mut self, completion: u32, finish: Finish) -> Vec<String> {
        let mut out = Vec::new();
        self.close_item(&mut out);
        let output = self
            .items
            .iter()
            .map(|it| Self::item_json(it, true))
            .collect();
        let r = self.response(Self::status(finish), output, Some(self.usage(completion)));
        out.push(self.event("response.completed", vec![("response", r)]));
        out
    }

    fn failure(&mut self, message: &str) -> Vec<String> {
        let e = self.event(
            "error",
            vec![
                ("code", v(json!("InternalServerError"))),
                ("message", v(json!(message))),
                ("param", v(Value::Null)),
            ],
        );
        vec![e]
    }

    fn torn_event(&self) -> &'static str {
        "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\" cu"
    }

    fn body(&self, answer: &Answer, completion: u32, finish: Finish) -> String {
        // Item ids from a copy of the generator: `body` leaves the frames as they are.
        let mut ids = self.ids.clone();
        let mut output = Vec::with_capacity(2);
        for (kind, text) in [
            (Item::Reasoning, &answer.reasoning),
            (Item::Message, &answer.text),
        ] {
            if kind == Item::Reasoning && text.is_empty() {
                continue;
            }
            let it = OutItem {
                kind,
                id: format!("msg_{:016x}", ids.next_u64()),
                text: text.clone(),
            };
            output.push(Self::item_json(&it, true));
        }
        to_json(&self.response(Self::status(finish), output, Some(self.usage(completion))))
    }
}
