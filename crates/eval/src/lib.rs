//! `eval`: what a served model answers, rather than how fast. Two kinds of run:
//!
//! - **accuracy profiles** (GSM8K, MMLU-Pro, GPQA Diamond): the official datasets pinned by
//!   sha256 ([`obtain`]), each item asked once at temperature 0, scored ([`score()`]), written
//!   as `items.jsonl`, `eval.json`, `eval.md` and `eval.html` ([`run_accuracy`]); two runs
//!   compared item by item with the exact McNemar test ([`compare`]);
//! - **the long-answer task**: completion-token statistics of one prompt at the concurrency
//!   an adaptive search chooses, written as `tasks.jsonl`, `tokens.json` and `tokens.md`
//!   ([`run_task`]);
//! - **speculative decoding per category** (`mt-bench`): MT-Bench's questions sent one
//!   category at a time, the server's acceptance over each category's window, written as
//!   `spec.json` and `spec.md` ([`run_spec`]).
//!
//! The records the files hold (`eval.json`, `items.jsonl`) are `llmib_core::accuracy`'s, so the
//! report crate renders them without depending on this one. Modules are private; this list is
//! the crate's surface. Module imports run one way: `accuracy`, `spec_bench` and `task` (the runs) use the
//! datasets, scoring, generation and file helpers below them, never the other way round.

#![warn(unnameable_types)]

mod accuracy;
mod datasets;
mod download;
mod error;
mod formats;
mod generate;
mod jsonl;
mod score;
mod select;
mod server;
mod spec_bench;
mod task;
mod tokens;
mod tokenstats;

pub use accuracy::{AccuracyRun, compare, is_eval_dir, rewrite_reports, run_accuracy};
pub use datasets::{Locate, SOURCES, Source, default_cache_dir, obtain, source};
pub use download::{DownloadError, download, shown_url};
pub use error::EvalError;
pub use formats::Item;
pub use generate::{GenerateError, Generated, generate};
pub use llmib_core::Profile;
pub use score::{
    AnswerFormat, Paired, answer_format, mcnemar_exact, pair, parse_letter, parse_number, score,
};
pub use select::{gsm8k_answer, permutation, spread, stratified};
pub use server::Server;
pub use spec_bench::{SpecRun, run_spec};
pub use task::{
    LONG_ANSWER_PATTERN, LONG_ANSWER_PROMPT, TaskPrompt, TaskRun, parse_levels, run_task,
};
pub use tokenstats::{LevelResult, Step, TaskResult, TaskStats, fastest, final_line, next_step};
