//! One request's bytes: the HTTP clients (reqwest, and the raw HTTP/1.1 reader over the socket
//! with its TLS and kernel receive timestamps), the body they hand over, SSE framing, the
//! chunk parsers (chat's, and the agents' APIs'), and the request executor (`stream`) that turns one request into a timed
//! record. A new HTTP reader goes here.
//!
//! May import: `llmib-core` only. The wire knows nothing of engines, prompts, progress or cells:
//! what an engine adds to a request (its URL, body, headers) comes in as a `stream::RequestSpec`.

pub(crate) mod agent_events;
pub(crate) mod body;
pub(crate) mod chunk;
pub(crate) mod chunk_fields;
pub(crate) mod error_kind;
pub(crate) mod events;
pub(crate) mod fastchunk;
pub(crate) mod http;
pub(crate) mod ktime;
pub(crate) mod live;
pub(crate) mod rawbody;
pub(crate) mod rawconn;
pub(crate) mod rawhttp;
#[cfg(feature = "tls")]
pub(crate) mod rawtls;
pub(crate) mod sse;
pub(crate) mod stream;
pub(crate) mod stream_end;
pub(crate) mod structured;
