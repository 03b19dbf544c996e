//! The scheduler loop: admission, prefill passes, decode steps, emission.
//!
//! The engine runs one *pass* at a time, back to back, like a GPU running one forward pass
//! after another:
//! - **Admission** (before every pass): queued requests are admitted first-in first-out while
//!   the admitted requests' prompt + `max_tokens` plus the newcomer's still fit in the KV
//!   capacity. The head of the queue blocks the rest (no overtaking), as SGLang's FCFS does.
//!   Unused prefix-cache entries are evicted (LRU) to make room.
//! - **Prefill pass**: up to `chunked_prefill_tokens` prompt tokens of admitted requests, in
//!   order, taking `overhead + tokens / prefill_tok_per_s`. A request whose prompt completes
//!   gets its first token at the end of the pass. A cached prefix (whole blocks) is not
//!   prefilled again; a full hit prefills 1 token.
//!   With `serial_prefill` a pass takes one request only (cached or not), as vLLM does with
//!   the cached prompts of a burst: admitted (and counted as running) at once, first tokens one
//!   pass apart.
//! - **Decode step**: every request past prefill gets `spec_tokens` tokens (one chunk; fewer
//!   per step on average with `spec_accept_length`, see `spec`) after
//!   `interp(step table, batch size) + per_kv_token_us × KV tokens in the batch`, plus
//!   `lora_switch_ms` per distinct LoRA adapter in the batch (`crate::lora`), all of it
//!   `grammar_step_factor` times as long when the batch holds a request under a grammar
//!   (`crate::structured`).
//! - **Aborts**: a request whose client went away is freed at once, or keeps running (and
//!   generating) for `drop_keeps_running_ms`; `POST /abort_request` frees the requests it
//!   names at once, their streams ending with finish reason `abort`. Every abort is logged.
//! - **End**: a request that finishes (not one aborted) leaves the blocks of its prompt and
//!   answer in the prefix cache, unpinned, so a conversation's next turn is served both; each
//!   token event carries the prompt tokens the cache served the request at admission.
//! - When both kinds of work wait, passes alternate, so a long prompt delays running streams
//!   by one chunk at a time (SGLang's chunked prefill) instead of stalling them completely.
//!
//! Timing: each pass starts where the previous one ended on the engine's own clock, not when
//! the thread happened to wake, so late wake-ups never accumulate into drift. Only when the
//! thread falls more than `MAX_LAG` behind (an overloaded host) is the debt dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::messages::{Cmd, Finish, NewRequest, Stats, TokenEvent};
use super::prefix_cache::{PrefixCache, answer_blocks};
use super::spec::{self, SpecInterval};
use crate::config::SimConfig;
use crate::rng::Rng;
use crate::stamps::{AbortCause, AbortRecord, PassStamp, StampLog};
use crate::tokenizer;

/// How far behind schedule the engine may fall before it stops catching up.
const MAX_LAG: Duration = Duration::from_millis(50);

struct Req {
    spec: NewRequest,
    events: UnboundedSender<TokenEvent>,
    rng: Rng,
    generated: u32,
    prefill_left: u64,
    /// Cache blocks this request pins: its cached prefix, then the blocks it computes.
    pinned: Vec<u64>,
    /// How many of `pinned` were cached when it was admitted (the rest are its own).
    hit_blocks: usize,
    /// Prompt tokens served from cache at admission (reported in its usage).
    cached_tokens: u64,
    /// The ids its output text re-tokenizes to (kept with the cache on only): cached with
    /// the prompt when it finishes, for the conversation's next turn.
    output_ids: Vec<u32>,
    /// The running credit of `spec::step_tokens`.
    spec_credit: f64,
}

enum Work {
    /// (request id, prompt tokens prefilled in this pass)
    Prefill(Vec<(u64, u64)>),
    /// The decode batch.
    Decode(Vec<u64>),
}

struct Pass {
    end: Instant,
    work: Work,
    secs: f64,
    /// Distinct LoRA adapters in a decode step's batch (each one priced `lora_switch_ms`).
    adapters: u32,
}

struct Scheduler<'a> {
    cfg: &'a SimConfig,
    capacity: u64,
    queue: VecDeque<u64>,
    prefilling: VecDeque<u64>,
    decoding: Vec<u64>,
    reqs: HashMap<u64, Req>,
    cache: PrefixCache,
    pass: Option<Pass>,
    /// Where passes are logged (`stamp_chunks`).
    log: Option<&'a StampLog>,
    /// End of the last pass on the engine's clock.
    clock: Option<Instant>,
    last_was_prefill: bool,
    /// No pass has run since `clock`: the next one starts when planned, not at `clock`.
    idle: bool,
    stats: Stats,
    /// SGLang's acceptance gauges' current interval.
    spec: SpecInterval,
    /// Loop mode: the text of each token of `answer_loop`.
    loop_tokens: Option<Vec<String>>,
    /// Requests whose client went away, kept running until then (`drop_keeps_running_ms`).
    orphans: HashMap<u64, Instant>,
    /// Where aborted requests are logged.
    aborts: &'a StampLog,
    /// `/abort_request` callers waiting for the next published state.
    acks: Vec<(tokio::sync::oneshot::Sender<usize>, usize)>,
}

/// Runs until `Stop` or until every sender is gone; logs each pass into `log` when given, and
/// every aborted request into `aborts`.
pub(super) fn run(
    cfg: &SimConfig,
    rx: &Receiver<Cmd>,
    shared: &Arc<Mutex<Stats>>,
    log: Option<&StampLog>,
    aborts: &StampLog,
) {
    let capacity = cfg.effective_kv_capacity();
    let mut s = Scheduler {
        cfg,
        capacity,
        queue: VecDeque::new(),
        prefilling: VecDeque::new(),
        decoding: Vec::new(),
        reqs: HashMap::new(),
        cache: PrefixCache::new(cfg.prefix_cache_tokens.min(capacity)),
        pass: None,
        log,
        clock: None,
        last_was_prefill: false,
        idle: true,
        stats: Stats {
            capacity,
            ..Stats::default()
        },
        spec: SpecInterval::default(),
        loop_tokens: cfg
            .answer_loop
            .as_deref()
            .and_then(|l| tokenizer::loop_tokens(l).ok()),
        orphans: HashMap::new(),
        aborts,
        acks: Vec::new(),
    };
    loop {
        let cmd = match s.next_wake() {
            Some(end) => {
                let now = Instant::now();
                if end <= now {
                    None
                } else {
                    match rx.recv_timeout(end - now) {
                        Ok(c) => Some(c),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            }
            None => match rx.recv() {
                Ok(c) => Some(c),
                Err(_) => return,
            },
        };
        if let Some(c) = cmd {
            if !s.handle(c) {
                return;
            }
            // Take everything that is already waiting, so a burst of arrivals is admitted
            // together into the next pass, as a real engine's scheduler would.
            while let Ok(c) = rx.try_recv() {
                if !s.handle(c) {
                    return;
                }
            }
        }
        let now = Instant::now();
        if s.pass.as_ref().is_some_and(|p| p.end <= now) {
            s.finish_pass();
        }
        s.expire_orphans(now);
        if s.pass.is_none() {
            s.admit();
            s.plan_pass(Instant::now());
        }
        s.publish(shared);
    }
}

impl Scheduler<'_> {
    /// Applies one command; false means stop.
    fn handle(&mut self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Submit { id, req, events } => {
                let rng = Rng::derive(self.cfg.seed, req.prompt_hash);
                self.reqs.insert(
                    id,
                    Req {
                        spec: req,
                        events,
                        rng,
                        generated: 0,
                        prefill_left: 0,
                        pinned: Vec::new(),
                        hit_blocks: 0,
                        cached_tokens: 0,
                        output_ids: Vec::new(),
                        spec_credit: 0.0,
                    },
                );
                self.queue.push_back(id);
            }
            Cmd::Dropped(id) => self.client_gone(id),
            Cmd::AbortRids { rids, all, done } => {
                let mut named: Vec<u64> = self
                    .reqs
                    .iter()
                    .filter(|(_, r)| {
                        all || r.spec.rid.as_ref().is_some_and(|rid| rids.contains(rid))
                    })
                    .map(|(&id, _)| id)
                    .collect();
                // In arrival order, so the log reads the same on every run.
                named.sort_unstable();
                for &id in &named {
                    self.abort(id, AbortCause::AbortRequest);
                }
                self.acks.push((done, named.len()));
            }
            Cmd::FlushCache => self.cache.flush(),
            Cmd::Stop => return false,
        }
        true
    }

    /// Admits queued requests in order while their KV reservation fits.
    fn admit(&mut self) {
        while let Some(&id) = self.queue.front() {
            let Some(r) = self.reqs.get(&id) else {
                self.queue.pop_front();
                continue;
            };
            let need = r.spec.prompt_len + u64::from(r.spec.max_tokens);
            if self.stats.reserved + need > self.capacity {
                break;
            }
            let running = self.prefilling.len() + self.decoding.len();
            if self
                .cfg
                .max_running_requests
                .is_some_and(|m| running >= m as usize)
            {
                break;
            }
            self.queue.pop_front();
            let prompt_len = r.spec.prompt_len;
            let hit = self.cache.lookup_and_pin(&r.spec.blocks);
            let mut pinned: Vec<u64> = r.spec.blocks[..hit].iter().map(|b| b.key).collect();
            let cached: u64 = r.spec.blocks[..hit].iter().map(|b| b.tokens).sum();
            // The rest is cached from now on, while this request computes it (module docs of
            // `prefix_cache`).
            pinned.extend(self.cache.insert_pinned(&r.spec.blocks[hit..]));
            let cached = cached.min(prompt_len);
            self.stats.cache_query_tokens += prompt_len;
            self.stats.cache_hit_tokens += cached;
            if let Some(r) = self.reqs.get_mut(&id) {
                // The cached prefix is not prefilled again; a full hit still runs a one-token
                // forward pass to produce the first token.
                r.prefill_left = prompt_len.saturating_sub(cached).max(1);
                r.pinned = pinned;
                r.hit_blocks = hit;
                r.cached_tokens = cached;
            }
            self.stats.reserved += need;
            self.stats.used += prompt_len;
            self.prefilling.push_back(id);
            self.cache
                .evict_until(self.capacity.saturating_sub(self.stats.reserved));
        }
    }

    /// Chooses the next pass and when it ends.
    fn plan_pass(&mut self, now: Instant) {
        // Back to back with the previous pass: start where it ended (no drift). After idling,
        // or when hopelessly late: start now.
        let start = match self.clock {
            Some(c) if !self.idle && now <= c + MAX_LAG => c,
            _ => now,
        };
        let prefill = !self.prefilling.is_empty();
        let decode = !self.decoding.is_empty();
        let do_prefill = match (prefill, decode) {
            (false, false) => {
                self.idle = true;
                return;
            }
            (true, false) => true,
            (false, true) => false,
            (true, true) => !self.last_was_prefill,
        };
        let mut adapters = 0;
        let (work, ms) = if do_prefill {
            let mut budget = self.cfg.chunked_prefill_tokens;
            let mut parts = Vec::new();
            let mut tokens = 0u64;
            for &id in &self.prefilling {
                // Serial prefill (vLLM-like): one admitted request's prompt per pass, however
                // short, so N admitted requests get their first tokens one pass apart.
                if budget == 0 || (self.cfg.serial_prefill && !parts.is_empty()) {
                    break;
                }
                if let Some(r) = self.reqs.get(&id) {
                    let t = r.prefill_left.min(budget);
                    budget -= t;
                    tokens += t;
                    parts.push((id, t));
                }
            }
            let ms =
                self.cfg.prefill_overhead_ms + tokens as f64 * 1000.0 / self.cfg.prefill_tok_per_s;
            (Work::Prefill(parts), ms)
        } else {
            let kv: u64 = self
                .decoding
                .iter()
                .filter_map(|id| self.reqs.get(id))
                .map(|r| r.spec.prompt_len + u64::from(r.generated))
                .sum();
            adapters = crate::lora::distinct(
                self.decoding
                    .iter()
                    .filter_map(|id| self.reqs.get(id))
                    .map(|r| r.spec.adapter),
            );
            let grammar = self
                .decoding
                .iter()
                .filter_map(|id| self.reqs.get(id))
                .any(|r| r.spec.grammar);
            let factor = if grammar {
                self.cfg.grammar_step_factor
            } else {
                1.0
            };
            let ms = (self.cfg.step_ms(self.decoding.len(), kv)
                + crate::lora::switch_ms(self.cfg, adapters))
                * factor;
            (Work::Decode(self.decoding.clone()), ms)
        };
        self.last_was_prefill = do_prefill;
        self.idle = false;
        let secs = ms / 1000.0;
        self.pass = Some(Pass {
            end: start + Duration::from_secs_f64(secs),
            work,
            secs,
            adapters,
        });
    }

    /// Applies the effects of the pass that just ended: emits its tokens.
    fn finish_pass(&mut self) {
        let Some(pass) = self.pass.take() else { return };
        self.clock = Some(pass.end);
        if let Some(log) = self.log {
            let (decode_batch, prefill_requests) = match &pass.work {
                Work::Prefill(parts) => (0, parts.len() as u32),
                Work::Decode(batch) => (batch.len() as u32, 0),
            };
            // The real end: the thread may have woken after the planned one on a loaded host.
            log.push_pass(PassStamp {
                end: Instant::now(),
                decode_batch,
                prefill_requests,
                lora_adapters: pass.adapters,
            });
        }
        match pass.work {
            Work::Prefill(parts) => {
                for (id, t) in parts {
                    let Some(r) = self.reqs.get_mut(&id) else {
                        continue;
                    };
                    r.prefill_left = r.prefill_left.saturating_sub(t);
                    if r.prefill_left > 0 {
                        continue;
                    }
                    let prompt_len = r.spec.prompt_len;
                    // Its own blocks are computed now: from here they are the cache's.
                    r.hit_blocks = r.pinned.len();
                    self.stats.prompt_tokens_total += prompt_len;
                    self.prefilling.retain(|&p| p != id);
                    self.decoding.push(id);
                    // The prefill's forward pass yields the first token.
                    self.emit(id, 1);
                }
                self.cache
                    .evict_until(self.capacity.saturating_sub(self.stats.reserved));
            }
            Work::Decode(batch) => {
                let k = self.cfg.spec_tokens;
                let mut produced = 0u64;
                for id in batch {
                    let Some(r) = self.reqs.get_mut(&id) else {
                        continue;
                    };
                    let mean = r.spec.spec_accept.or(self.cfg.spec_accept_length);
                    let want = spec::step_tokens(&mut r.spec_credit, mean, k);
                    let n = self.emit(id, want);
                    produced += u64::from(n);
                    if k > 1 && n > 0 {
                        self.spec.record(&mut self.stats, n, k);
                    }
                }
                if k > 1 {
                    self.spec.end_batch(&mut self.stats, k);
                }
                if pass.secs > 0.0 {
                    self.stats.last_gen_throughput = produced as f64 / pass.secs;
                }
            }
        }
    }

    /// Generates up to `k` tokens for `id` and sends them as one chunk; returns how many.
    fn emit(&mut self, id: u64, k: u32) -> u32 {
        let eos_rate = self.cfg.eos_rate;
        let looped = self.loop_tokens.as_deref();
        let Some(r) = self.reqs.get_mut(&id) else {
            return 0;
        };
        let mut text = String::new();
        let mut n = 0;
        let mut finish = None;
        while n < k && r.generated < r.spec.max_tokens {
            push_next_token(r, looped, &mut text);
            n += 1;
            r.generated += 1;
            if r.generated >= r.spec.max_tokens {
                finish = Some(Finish::Length);
            } else if looped.is_none() && stops_here(r, eos_rate) {
                finish = Some(Finish::Stop);
                break;
            }
        }
        if self.cache.enabled() {
            // What the client gets back re-tokenizes to these ids (each word is one token
            // after its space), so a next turn that quotes the answer meets them in cache.
            r.output_ids.extend(tokenizer::encode(&text, false));
        }
        let ev = TokenEvent {
            text,
            n,
            completion_tokens: r.generated,
            finish,
            cached_tokens: r.cached_tokens,
        };
        let gone = r.events.send(ev).is_err();
        self.stats.generation_tokens_total += u64::from(n);
        self.stats.used += u64::from(n);
        if finish.is_some() {
            self.stats.finished_requests += 1;
            self.cache_answer(id);
            self.release(id);
        } else if gone {
            // The handler is gone without its guard reporting yet.
            self.client_gone(id);
        }
        n
    }

    /// The client of `id` went away: free it now, or keep it running until
    /// `drop_keeps_running_ms` from now (the first report counts; a finish or an abort ends
    /// it earlier).
    fn client_gone(&mut self, id: u64) {
        if !self.reqs.contains_key(&id) {
            return;
        }
        match self.cfg.drop_keeps_running_ms {
            0 => self.abort(id, AbortCause::Dropped),
            ms => {
                let until = Instant::now() + Duration::from_millis(ms);
                self.orphans.entry(id).or_insert(until);
            }
        }
    }

    /// Ends `id` before its end: its stream gets a last event with finish reason `abort`
    /// (when its client still listens), its KV and queue place are freed, and it is logged.
    fn abort(&mut self, id: u64, cause: AbortCause) {
        let Some(r) = self.reqs.get(&id) else { return };
        let _ = r.events.send(TokenEvent {
            text: String::new(),
            n: 0,
            completion_tokens: r.generated,
            finish: Some(Finish::Abort),
            cached_tokens: r.cached_tokens,
        });
        self.aborts.push_abort(AbortRecord {
            request: id,
            rid: r.spec.rid.clone(),
            cause,
            completion_tokens: r.generated,
        });
        if let Some(pos) = self.queue.iter().position(|&q| q == id) {
            // Never admitted: nothing reserved, nothing pinned.
            self.queue.remove(pos);
            self.reqs.remove(&id);
            self.orphans.remove(&id);
        } else {
            self.release(id);
        }
        self.stats.aborted_requests += 1;
    }

    /// Aborts the dropped requests whose time to keep running is over.
    fn expire_orphans(&mut self, now: Instant) {
        if self.orphans.is_empty() {
            return;
        }
        let mut due: Vec<u64> = self
            .orphans
            .iter()
            .filter(|(_, until)| **until <= now)
            .map(|(&id, _)| id)
            .collect();
        due.sort_unstable();
        for id in due {
            self.abort(id, AbortCause::Dropped);
        }
    }

    /// When the loop must wake next: the current pass's end or a dropped request's deadline.
    fn next_wake(&self) -> Option<Instant> {
        let pass = self.pass.as_ref().map(|p| p.end);
        let orphan = self.orphans.values().min().copied();
        match (pass, orphan) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Caches the blocks of a finished request's prompt ++ output beyond its prompt's whole
    /// blocks (those it pins already), unpinned, before `release` unpins the prompt's: so the
    /// prompt's head ends most recent and eviction takes the answer's tail first.
    fn cache_answer(&mut self, id: u64) {
        let Some(r) = self.reqs.get(&id) else { return };
        if !self.cache.enabled() {
            return;
        }
        let blocks = answer_blocks(&r.spec.blocks, &r.spec.prompt_tail, &r.output_ids);
        self.cache.insert_unpinned(&blocks);
    }

    /// Frees a request's KV reservation and cache pin.
    fn release(&mut self, id: u64) {
        let Some(r) = self.reqs.remove(&id) else {
            return;
        };
        self.orphans.remove(&id);
        self.stats.reserved -= r.spec.prompt_len + u64::from(r.spec.max_tokens);
        self.stats.used -= r.spec.prompt_len + u64::from(r.generated);
        // The last block first, so that eviction (least recently used first) takes a prompt's
        // tail before its head and never leaves a block that no prefix reaches.
        // Blocks it was still computing (its prefill never completed) were never computed.
        for (i, key) in r.pinned.iter().enumerate().rev() {
            if i >= r.hit_blocks {
                self.cache.forget(*key);
            } else {
                self.cache.unpin(*key);
            }
        }
        self.prefilling.retain(|&p| p != id);
        self.decoding.retain(|&p| p != id);
    }

    /// Publishes the state snapshot for `/metrics`.
    fn publish(&mut self, shared: &Arc<Mutex<Stats>>) {
        self.stats.running = self.prefilling.len() + self.decoding.len();
        self.stats.queued = self.queue.len();
        self.stats.cached = self.cache.total_tokens();
        match shared.lock() {
            Ok(mut s) => *s = self.stats.clone(),
            Err(p) => *p.into_inner() = self.stats.clone(),
        }
        for (done, n) in self.acks.drain(..) {
            let _ = done.send(n);
        }
    }
}

/// Appends a request's next output token to `text`: the loop sentence's next token (loop
/// mode), its script's next word, or a random short word, each one token.
fn push_next_token(r: &mut Req, looped: Option<&[String]>, text: &mut String) {
    if let Some(tokens) = looped {
        text.push_str(&tokens[r.generated as usize % tokens.len()]);
        return;
    }
    let scripted = r
        .spec
        .script
        .as_ref()
        .and_then(|s| s.get(r.generated as usize));
    let word = match scripted {
        Some(w) => w.as_str(),
        None => tokenizer::output_token(&mut r.rng).1,
    };
    text.push(' ');
    text.push_str(word);
}

/// Whether the token just generated ends the request before `max_tokens`: a scripted answer
/// ends with its script (never at a random EOS); otherwise a natural EOS with probability
/// `eos_rate` once past `min_tokens`, unless `ignore_eos`.
fn stops_here(r: &mut Req, eos_rate: f64) -> bool {
    match &r.spec.script {
        Some(s) => r.generated as usize >= s.len(),
        None => !r.spec.ignore_eos && r.generated >= r.spec.min_tokens && r.rng.chance(eos_rate),
    }
}
