//! The config-file loader on any text: a file gives settings or an error, never a panic (the
//! loader is the binary crate's own `config.rs`, included as a module).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cli/src/config.rs"]
#[allow(dead_code)]
mod config;

// `RunArgs::settings`, checked below, lives beside config.rs, with the parts it calls.
#[path = "../../crates/cli/src/settings.rs"]
#[allow(dead_code)]
mod settings;
#[path = "../../crates/cli/src/shard_args.rs"]
#[allow(dead_code)]
mod shard_args;
#[path = "../../crates/cli/src/config_load.rs"]
#[allow(dead_code)]
mod config_load;
#[path = "../../crates/cli/src/config_sessions.rs"]
#[allow(dead_code)]
mod config_sessions;

fuzz_target!(|s: &str| {
    if let Ok(args) = config::RunArgs::default().merge_text(s, "fuzz.toml") {
        let _ = args.settings();
    }
});
