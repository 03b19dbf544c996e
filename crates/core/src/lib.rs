//! Core of llm-inference-bench: the validated plan, per-request records, the figures computed
//! from them (pure functions), cell statuses and the results store. No HTTP, no terminal, so
//! everything here is tested without sockets.
