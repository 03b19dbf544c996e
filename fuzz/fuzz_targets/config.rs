//! The config-file loader on any text: a file gives settings or an error, never a panic (the
//! loader is the binary crate's own `config/` folder, included as a module with the parts its
//! checks call).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cli/src/config/mod.rs"]
#[allow(dead_code, unused_imports)]
mod config;

fuzz_target!(|s: &str| {
    if let Ok(args) = config::RunArgs::default().merge_text(s, "fuzz.toml") {
        let _ = args.settings();
    }
});
