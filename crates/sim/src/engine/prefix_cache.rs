//! A block-granular prefix cache with LRU eviction.
//!
//! Real engines cache KV blocks of prompts (SGLang's radix tree, vLLM's hashed blocks). The
//! simulator caches a prompt by blocks of [`CACHE_BLOCK_TOKENS`] tokens, each keyed by a hash
//! chained over every token before it (vLLM's scheme), so a prompt that shares its first k
//! blocks with a cached one is served those k blocks from cache: the longest cached prefix, in
//! whole blocks. A prompt's last, partial block is a block of its own (its hash covers its
//! tokens only), so a prompt sent again is served whole, while a longer prompt that merely
//! starts with it is served its whole blocks. What a benchmark can observe follows: a cached
//! prefix skips its prefill, cached blocks share the KV pool with running requests, and when
//! that pool is needed they are evicted, least recently used first. Blocks used by a running
//! request are pinned and never evicted; their tokens are already counted in that request's
//! KV reservation.
//!
//! When a request finishes, the blocks of its prompt followed by its answer are cached too
//! ([`PrefixCache::insert_unpinned`]), as real engines keep the KV of generated tokens: the
//! next turn of a conversation (prompt, answer, new message) is served prompt and answer, in
//! whole blocks. The last, partial block of prompt + answer is a key of its own, so a longer
//! prompt is served `floor((P + A) / 16) * 16` tokens.
//!
//! A request's blocks are cached from its admission, while it still prefills them: a request
//! admitted after it shares them at once, as SGLang's in-batch prefix sharing lets requests of
//! one batch share a prefix computed once (without SGLang's wait for it). So what the cache
//! serves depends on the order requests arrive in, not on how fast the engine runs, and a
//! trace's cached tokens come to what `llmib_core::predicted_cached_tokens` says of its send
//! order. A request that ends before its prefill completes takes the blocks only it held
//! with it ([`PrefixCache::forget`]): they were never computed.

use std::collections::{BTreeSet, HashMap};

/// Tokens per cached block (vLLM's default block size).
pub(crate) const CACHE_BLOCK_TOKENS: usize = 16;

/// One block of a prompt: its chained hash and its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    /// Hash of this block's tokens chained over every block before it.
    pub key: u64,
    /// Tokens in the block ([`CACHE_BLOCK_TOKENS`], fewer for a prompt's last one).
    pub tokens: u64,
}

/// The chain's key before a sequence's first block.
const CHAIN_START: u64 = 0x9E37_79B9_7F4A_7C15;

/// The blocks of a prompt's token ids, in order.
pub(crate) fn prompt_blocks(tokens: &[u32]) -> Vec<Block> {
    chain_blocks(CHAIN_START, tokens)
}

/// The ids of a prompt's last, partial block (empty when it ends on a block boundary): with
/// the prompt's blocks, all [`answer_blocks`] needs to continue the chain.
pub(crate) fn prompt_tail(tokens: &[u32]) -> Vec<u32> {
    tokens[tokens.len() / CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS..].to_vec()
}

/// The blocks of prompt ++ output that the prompt's own blocks lack: those from the prompt's
/// last partial block on (its tail, `prompt_tail`, then the output ids), chained on after its
/// last whole block. With the prompt's whole blocks they are `prompt_blocks(prompt ++ output)`.
pub(crate) fn answer_blocks(prompt: &[Block], tail: &[u32], output: &[u32]) -> Vec<Block> {
    let prev = prompt
        .iter()
        .take_while(|b| b.tokens == CACHE_BLOCK_TOKENS as u64)
        .last()
        .map_or(CHAIN_START, |b| b.key);
    let seq: Vec<u32> = tail.iter().chain(output).copied().collect();
    chain_blocks(prev, &seq)
}

/// The blocks of `tokens`, chained on after the block whose key is `prev`.
fn chain_blocks(mut prev: u64, tokens: &[u32]) -> Vec<Block> {
    tokens
        .chunks(CACHE_BLOCK_TOKENS)
        .map(|c| {
            // FNV-1a over the previous key and the block's ids: a block's key says what came
            // before it, so equal keys mean equal prefixes.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in prev
                .to_le_bytes()
                .into_iter()
                .chain(c.iter().flat_map(|t| t.to_le_bytes()))
            {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            prev = h;
            Block {
                key: h,
                tokens: c.len() as u64,
            }
        })
        .collect()
}

#[derive(Debug)]
struct Entry {
    tokens: u64,
    pins: u32,
    last_used: u64,
}

/// The cache: block key -> entry.
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    entries: HashMap<u64, Entry>,
    /// Unpinned entries by (last use, key): the eviction order.
    lru: BTreeSet<(u64, u64)>,
    capacity: u64,
    total: u64,
    unpinned: u64,
    tick: u64,
}

impl PrefixCache {
    /// A cache holding at most `capacity` tokens (0 disables it).
    pub(crate) fn new(capacity: u64) -> Self {
        PrefixCache {
            capacity,
            ..Default::default()
        }
    }

    /// Whether caching is on.
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Tokens held by entries no running request uses (they compete with new requests for KV).
    #[cfg(test)]
    pub(crate) fn unpinned_tokens(&self) -> u64 {
        self.unpinned
    }

    /// Tokens held in total.
    pub(crate) fn total_tokens(&self) -> u64 {
        self.total
    }

    /// Pins an entry that exists; false when it does not.
    fn pin(&mut self, key: u64) -> bool {
        self.tick += 1;
        let Some(e) = self.entries.get_mut(&key) else {
            return false;
        };
        if e.pins == 0 {
            self.unpinned -= e.tokens;
            self.lru.remove(&(e.last_used, key));
        }
        e.pins += 1;
        e.last_used = self.tick;
        true
    }

    /// The longest cached prefix of `blocks`: pins each of its blocks for a new request and
    /// returns how many blocks it holds (their keys are the request's to unpin).
    pub(crate) fn lookup_and_pin(&mut self, blocks: &[Block]) -> usize {
        if !self.enabled() {
            return 0;
        }
        blocks.iter().take_while(|b| self.pin(b.key)).count()
    }

    /// Stores the blocks of a prompt being prefilled, pinned by the request that computes
    /// them; a block cached already (by another request) is pinned instead. Returns the keys
    /// pinned.
    pub(crate) fn insert_pinned(&mut self, blocks: &[Block]) -> Vec<u64> {
        if !self.enabled() {
            return Vec::new();
        }
        let mut pinned = Vec::with_capacity(blocks.len());
        for b in blocks {
            if !self.pin(b.key) {
                self.entries.insert(
                    b.key,
                    Entry {
                        tokens: b.tokens,
                        pins: 1,
                        last_used: self.tick,
                    },
                );
                self.total += b.tokens;
            }
            pinned.push(b.key);
        }
        let over = self.total.saturating_sub(self.capacity);
        self.evict_until(self.unpinned.saturating_sub(over));
        pinned
    }

    /// Stores the blocks of a finished request's prompt and answer (its whole KV), unpinned:
    /// the next turn of a conversation starts with them. The blocks are stamped last block
    /// first, so that eviction takes the tail of a sequence before its head, and a block
    /// cached already is only made recent. Then the cache is brought back under its capacity.
    pub(crate) fn insert_unpinned(&mut self, blocks: &[Block]) {
        if !self.enabled() {
            return;
        }
        for b in blocks.iter().rev() {
            self.tick += 1;
            match self.entries.get_mut(&b.key) {
                // Pinned: a running request holds it; it becomes recent when released.
                Some(e) if e.pins > 0 => {}
                Some(e) => {
                    self.lru.remove(&(e.last_used, b.key));
                    e.last_used = self.tick;
                    self.lru.insert((self.tick, b.key));
                }
                None => {
                    self.entries.insert(
                        b.key,
                        Entry {
                            tokens: b.tokens,
                            pins: 0,
                            last_used: self.tick,
                        },
                    );
                    self.lru.insert((self.tick, b.key));
                    self.total += b.tokens;
                    self.unpinned += b.tokens;
                }
            }
        }
        let over = self.total.saturating_sub(self.capacity);
        self.evict_until(self.unpinned.saturating_sub(over));
    }

    /// Releases a request's pin on a block it was still computing: the block goes where no
    /// other request holds it (it was never computed), else it is unpinned.
    pub(crate) fn forget(&mut self, key: u64) {
        match self.entries.get(&key) {
            Some(e) if e.pins == 1 => {
                self.total -= e.tokens;
                self.entries.remove(&key);
            }
            _ => self.unpin(key),
        }
    }

    /// Releases a request's pin; the entry stays cached until evicted.
    pub(crate) fn unpin(&mut self, key: u64) {
        self.tick += 1;
        if let Some(e) = self.entries.get_mut(&key).filter(|e| e.pins > 0) {
            e.pins -= 1;
            if e.pins == 0 {
                self.unpinned += e.tokens;
                e.last_used = self.tick;
                self.lru.insert((e.last_used, key));
            }
        }
    }

    /// Evicts unpinned entries, least recently used first, until at most `max_unpinned`
    /// tokens remain unpinned.
    pub(crate) fn evict_until(&mut self, max_unpinned: u64) {
        while self.unpinned > max_unpinned {
            let Some((_, k)) = self.lru.pop_first() else {
                break;
            };
            if let Some(e) = self.entries.remove(&k) {
                self.unpinned -= e.tokens;
                self.total -= e.tokens;
            }
        }
    }

    /// Drops every unpinned entry (`/flush_cache`, `/reset_prefix_cache`).
    pub(crate) fn flush(&mut self) {
        self.evict_until(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(first: u32, n: usize) -> Vec<Block> {
        let ids: Vec<u32> = (0..n as u32).map(|i| first + i).collect();
        prompt_blocks(&ids)
    }

    #[test]
    fn lru_eviction_spares_pinned_entries() {
        // Two prompts of 40 tokens (two whole blocks and one of 8 each) in a 100-token cache.
        let (a, b) = (blocks(1000, 40), blocks(5000, 40));
        let mut c = PrefixCache::new(100);
        let pa = c.insert_pinned(&a);
        let pb = c.insert_pinned(&b);
        // Released last block first (as the scheduler does), so a prompt's tail goes first.
        pa.iter()
            .rev()
            .chain(pb.iter().rev())
            .for_each(|k| c.unpin(*k));
        assert_eq!(c.unpinned_tokens(), 80);
        assert_eq!(c.lookup_and_pin(&a), 3, "a is now most recent and pinned");
        let d = blocks(9000, 40);
        // Over capacity by 20: b's blocks are the only unpinned ones, its tail goes first
        // (8 + 16 tokens), and its first block stays.
        c.insert_pinned(&d);
        assert_eq!(c.total_tokens(), 96);
        assert_eq!(c.lookup_and_pin(&b), 1);
    }

    #[test]
    fn answer_blocks_continue_the_prompt_chain() {
        for p in [0usize, 5, 16, 40] {
            let prompt: Vec<u32> = (0..p as u32).collect();
            let output: Vec<u32> = (900..937).collect();
            let pb = prompt_blocks(&prompt);
            let whole: Vec<Block> = pb.iter().copied().filter(|b| b.tokens == 16).collect();
            let mut joined = whole;
            joined.extend(answer_blocks(&pb, &prompt_tail(&prompt), &output));
            let all: Vec<u32> = prompt.iter().chain(&output).copied().collect();
            assert_eq!(joined, prompt_blocks(&all), "prompt of {p}");
        }
    }

    #[test]
    fn unpinned_blocks_are_served_and_evicted_oldest_first() {
        let mut c = PrefixCache::new(100);
        // 40 tokens: blocks of 16, 16 and 8, stored unpinned; a longer prompt that starts
        // with them is served the two whole blocks.
        let first: Vec<u32> = (0..40).collect();
        c.insert_unpinned(&prompt_blocks(&first));
        assert_eq!((c.total_tokens(), c.unpinned_tokens()), (40, 40));
        let longer: Vec<u32> = (0..70).collect();
        let hit = c.lookup_and_pin(&prompt_blocks(&longer));
        assert_eq!(hit, 2);
        // 80 tokens more overflow the 100 by 20: the oldest unpinned blocks go (`first`'s
        // 8-token tail, then the new sequence's last block, stamped before its head); the
        // pinned head stays.
        c.insert_unpinned(&blocks(5000, 80));
        assert_eq!(c.total_tokens(), 32 + 80 - 16);
        assert_eq!(
            PrefixCache::new(0).lookup_and_pin(&prompt_blocks(&first)),
            0
        );
        let mut off = PrefixCache::new(0);
        off.insert_unpinned(&prompt_blocks(&first));
        assert_eq!(off.total_tokens(), 0, "a disabled cache stores nothing");
    }

    #[test]
    fn a_shared_prefix_is_served_in_whole_blocks() {
        let mut c = PrefixCache::new(10_000);
        let long: Vec<u32> = (0..100).collect();
        c.insert_pinned(&prompt_blocks(&long));
        // The first 50 tokens and then others: 3 whole blocks (48 tokens) are cached.
        let mut other: Vec<u32> = (0..50).collect();
        other.extend(900..960);
        let ob = prompt_blocks(&other);
        let hit = c.lookup_and_pin(&ob);
        assert_eq!(hit, 3);
        assert_eq!(ob[..hit].iter().map(|b| b.tokens).sum::<u64>(), 48);
        // The same prompt again: every block, the partial last one included.
        assert_eq!(c.lookup_and_pin(&prompt_blocks(&long)), 7);
        // A different first token shares nothing, whatever follows.
        let mut shifted = long.clone();
        shifted[0] = 7;
        assert_eq!(c.lookup_and_pin(&prompt_blocks(&shifted)), 0);
    }
}
