//! An exact-match prefix cache with LRU eviction.
//!
//! Real engines cache KV blocks of prompts (SGLang's radix tree, vLLM's hashed blocks). The
//! simulator only needs what a benchmark can observe: a prompt sent again skips prefill,
//! cached prompts share the KV pool with running requests, and when that pool is needed they
//! are evicted, least recently used first. Entries used by a running request are pinned and
//! never evicted; their tokens are already counted in that request's KV reservation.

use std::collections::HashMap;

#[derive(Debug)]
struct Entry {
    tokens: u64,
    pins: u32,
    last_used: u64,
}

/// The cache: prompt key -> entry.
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    entries: HashMap<u64, Entry>,
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

    /// On a hit, pins the entry for a new request and returns true.
    pub(crate) fn lookup_and_pin(&mut self, key: u64) -> bool {
        self.tick += 1;
        match self.entries.get_mut(&key) {
            Some(e) => {
                if e.pins == 0 {
                    self.unpinned -= e.tokens;
                }
                e.pins += 1;
                e.last_used = self.tick;
                true
            }
            None => false,
        }
    }

    /// Stores a freshly prefilled prompt, pinned by the request that computed it.
    pub(crate) fn insert_pinned(&mut self, key: u64, tokens: u64) {
        if !self.enabled() {
            return;
        }
        if self.lookup_and_pin(key) {
            return;
        }
        self.entries.insert(
            key,
            Entry {
                tokens,
                pins: 1,
                last_used: self.tick,
            },
        );
        self.total += tokens;
        let over = self.total.saturating_sub(self.capacity);
        self.evict_until(self.unpinned.saturating_sub(over));
    }

    /// Releases a request's pin; the entry stays cached until evicted.
    pub(crate) fn unpin(&mut self, key: u64) {
        self.tick += 1;
        if let Some(e) = self.entries.get_mut(&key).filter(|e| e.pins > 0) {
            e.pins -= 1;
            if e.pins == 0 {
                self.unpinned += e.tokens;
                e.last_used = self.tick;
            }
        }
    }

    /// Evicts unpinned entries, least recently used first, until at most `max_unpinned`
    /// tokens remain unpinned.
    pub(crate) fn evict_until(&mut self, max_unpinned: u64) {
        while self.unpinned > max_unpinned {
            let victim = self
                .entries
                .iter()
                .filter(|(_, e)| e.pins == 0)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            let Some(k) = victim else { break };
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

    #[test]
    fn lru_eviction_spares_pinned_entries() {
        let mut c = PrefixCache::new(100);
        c.insert_pinned(1, 40);
        c.insert_pinned(2, 40);
        c.unpin(1);
        c.unpin(2);
        assert_eq!(c.unpinned_tokens(), 80);
        assert!(c.lookup_and_pin(1)); // 1 is now most recent and pinned
        c.insert_pinned(3, 40); // over capacity: evicts 2 (only unpinned one)
        assert!(!c.lookup_and_pin(2));
        assert_eq!(c.total_tokens(), 80);
        c.unpin(1);
        c.unpin(3);
        c.evict_until(40);
        assert_eq!(c.unpinned_tokens(), 40);
        assert!(c.lookup_and_pin(3), "1 was older than 3, so 1 went first");
    }
}
