//! Which reader takes the measured streams of an [`Engine`] (`--http-reader`), and what the
//! raw reader's kernel timestamps did over the run and over each window: kept apart from the
//! probe and request building in `mod.rs`, as a second `impl` block.

use super::Engine;
use crate::wire::rawhttp::RawReaderError;
use llmib_core::KernelStamps;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

impl Engine {
    /// Reads the measured streams with `reader` from now on, and records it in the engine
    /// info (`extra.http_reader`: the reader and its timestamps, `kernel` or `user space`).
    /// `Raw` reads `http://` and `https://` endpoints (https where the build has TLS) without
    /// URL credentials: any other is an error with what to do ([`RawReaderError`]).
    /// `connect_timeout`: the limit for each of its connections.
    pub fn set_http_reader(
        &mut self,
        reader: crate::wire::body::HttpReader,
        connect_timeout: Duration,
    ) -> Result<(), RawReaderError> {
        self.raw = match reader {
            crate::wire::body::HttpReader::Reqwest => None,
            crate::wire::body::HttpReader::Raw => {
                let auth = crate::wire::rawhttp::KeyAuth {
                    key: self.api_key.as_deref(),
                    header: self.key_header,
                    anthropic: self.api == llmib_core::Api::Messages,
                };
                Some(Arc::new(crate::wire::rawhttp::RawTarget::with_auth(
                    &self.generate_url(),
                    auth,
                    connect_timeout,
                )?))
            }
        };
        let timestamps = match reader {
            crate::wire::body::HttpReader::Reqwest => "user space",
            crate::wire::body::HttpReader::Raw => crate::wire::ktime::SOURCE,
        };
        self.info.extra.insert(
            "http_reader".into(),
            json!({"reader": reader.name(), "timestamps": timestamps}),
        );
        Ok(())
    }

    /// Reads the measured streams with the reader [`crate::wire::body::HttpReader::auto`] picks for this
    /// engine's URL (`proxy`: the proxy variable set in the environment), and records the
    /// choice and why in the engine info beside the reader (`extra.http_reader.chosen`).
    pub fn set_http_reader_auto(
        &mut self,
        connect_timeout: Duration,
        proxy: Option<&str>,
    ) -> Result<crate::wire::body::HttpReader, RawReaderError> {
        let (reader, why) = crate::wire::body::HttpReader::auto(&self.generate_url(), proxy);
        self.set_http_reader(reader, connect_timeout)?;
        if let Some(v) = self.info.extra.get_mut("http_reader")
            && let Some(o) = v.as_object_mut()
        {
            o.insert("chosen".into(), json!(format!("auto: {why}")));
        }
        Ok(reader)
    }

    /// The raw reader's reads so far: how many pieces, how many had a kernel receive time,
    /// and by how much those corrected the user-space read instant (mean and largest, ms).
    /// `None` with the reqwest reader.
    pub fn raw_reader_stats(&self) -> Option<KernelStamps> {
        self.raw.as_ref().map(|r| r.stats())
    }

    /// The raw reader, for a live view of its reads (the client-lag probe reads how many
    /// pieces had no kernel time); `None` with the reqwest reader.
    pub(crate) fn raw_target(&self) -> Option<Arc<crate::wire::rawhttp::RawTarget>> {
        self.raw.clone()
    }

    /// Starts a window's count of the raw reader's reads, for [`Engine::raw_window_stamps`];
    /// `None` with the reqwest reader.
    pub fn raw_window_start(&self) -> Option<crate::wire::rawhttp::RawMark> {
        self.raw.as_ref().map(|r| r.window_start())
    }

    /// How the chunk instants of the responses that ended since `mark` were taken: pieces,
    /// those with the kernel's receive time, and how far those moved the read instants (ms).
    /// `None` with the reqwest reader.
    pub fn raw_window_stamps(
        &self,
        mark: Option<crate::wire::rawhttp::RawMark>,
    ) -> Option<KernelStamps> {
        Some(self.raw.as_ref()?.window_stats(mark?))
    }
}
