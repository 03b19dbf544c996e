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

/// The blocks of a prompt's token ids, in order.
pub(crate) fn prompt_blocks(tokens: &[u32]) -> Vec<Block> {
    let mut prev: u64 = 0x9E37_79B9_7F4A_7C15;
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
