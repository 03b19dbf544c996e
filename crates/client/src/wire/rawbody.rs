//! HTTP/1.1 response framing for the raw reader ([`crate::wire::rawhttp`]): the response head, and a
//! body decoder for the three framings a streaming server uses (chunked, `Content-Length`,
//! close-delimited). Pure functions over a byte buffer, so every split of the input can be
//! tested without a socket.
//!
//! The decoder never panics on what a server sends: a malformed size line, a missing CRLF after
//! a chunk or an oversized head are errors with a one-line reason ([`FramingError`]), never a
//! guess.

use bytes::{Buf, Bytes, BytesMut};
use std::time::Duration;

/// The longest response head accepted (status line and headers), and the longest chunk-size
/// or trailer line: a server that sends more is broken or hostile.
const MAX_HEAD: usize = 64 * 1024;

/// Longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;

/// A response whose framing (head or body) is malformed or cut short. Its text is the one-line
/// reason a request's error message carries. The decoder runs once per read, so the variants
/// hold no more than the reason needs: most are fixed words, and only the two that quote what
/// the server sent own a string (made when the error is, never on the way there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FramingError {
    /// The head is longer than [`MAX_HEAD`].
    #[error("the response head is longer than {} KiB", MAX_HEAD / 1024)]
    HeadTooLong,
    /// The head does not parse as HTTP/1.x.
    #[error("malformed response head: {0}")]
    MalformedHead(httparse::Error),
    /// A `Content-Length` that is not a number (the value as sent, trimmed).
    #[error("malformed Content-Length {0:?}")]
    ContentLength(String),
    /// Two `Content-Length` headers that disagree.
    #[error("conflicting Content-Length headers")]
    ConflictingLengths,
    /// The connection closed this many bytes before the end of a `Content-Length` body.
    #[error("the connection closed {0} bytes before the end of the body (Content-Length)")]
    ShortLength(u64),
    /// The connection closed before a chunked body's last chunk.
    #[error("the connection closed inside the chunked body (no last chunk)")]
    ShortChunked,
    /// A chunk's data is not followed by its CRLF.
    #[error("malformed chunked body: no CRLF after a chunk's data")]
    NoChunkEnd,
    /// A chunk-size line that is not a hexadecimal size (the line as sent, on one line).
    #[error("malformed chunked body: bad chunk size {0:?}")]
    ChunkSize(String),
    /// A chunk-size or trailer line longer than [`MAX_LINE`].
    #[error("malformed chunked body: a size or trailer line is too long")]
    LongLine,
}

/// A response head, as far as the measurement needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    /// `Retry-After` in seconds, capped at 60 s (the HTTP-date form is ignored).
    pub retry_after: Option<Duration>,
    /// `Location` (a redirect's target), printable ASCII only and at most 200 characters: it
    /// goes into a one-line error message.
    pub location: Option<String>,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request once this body is complete.
    pub keep_alive: bool,
}

/// How a body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length`: this many bytes.
    Length(u64),
    /// Neither: the body runs until the server closes the connection.
    Close,
}

/// Parses a complete head at the start of `buf`, consuming it. `Ok(None)`: more bytes are
/// needed. Informational (1xx) heads are skipped, as a client must.
pub(crate) fn parse_head(buf: &mut BytesMut) -> Result<Option<Head>, FramingError> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 96];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(FramingError::HeadTooLong);
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(FramingError::MalformedHead(e)),
        };
        let status = resp.code.unwrap_or(0);
        let head = head_of(status, resp.version == Some(0), resp.headers)?;
        buf.advance(n);
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        return Ok(Some(head));
    }
}

/// The fields of a parsed head.
fn head_of(
    status: u16,
    http10: bool,
    headers: &[httparse::Header<'_>],
) -> Result<Head, FramingError> {
    let mut chunked = false;
    let mut length: Option<u64> = None;
    let mut close = http10;
    let mut retry_after = None;
    let mut location = None;
    for h in headers {
        let v = String::from_utf8_lossy(h.value);
        let v = v.trim();
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = v
                .parse()
                .map_err(|_| FramingError::ContentLength(v.to_string()))?;
            if length.is_some_and(|l| l != n) {
                return Err(FramingError::ConflictingLengths);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("connection") {
            let has = |t: &str| v.split(',').any(|x| x.trim().eq_ignore_ascii_case(t));
            if has("close") {
                close = true;
            } else if has("keep-alive") {
                close = false;
            }
        } else if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after = retry_after_secs(v);
        } else if h.name.eq_ignore_ascii_case("location") {
            location = Some(
                v.chars()
                    .filter(|c| c.is_ascii_graphic())
                    .take(200)
                    .collect(),
            );
        }
    }
    // No body for these, whatever the headers say (RFC 9112 §6.3).
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else if chunked {
        // Transfer-Encoding overrides Content-Length.
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    Ok(Head {
        status,
        retry_after,
        location,
        framing,
        keep_alive: !close && framing != Framing::Close,
    })
}

/// `Retry-After` in seconds, capped at 60 s so a hostile value cannot park the run.
pub(crate) fn retry_after_secs(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(60.0)))
}

/// Where the body decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk, this many bytes left.
    Data(u64),
    /// After a chunk's data, expecting its CRLF.
    DataEnd,
    /// After the last (zero) chunk: trailer lines until an empty one.
    Trailer,
    /// Inside a `Content-Length` body, this many bytes left.
    Length(u64),
    /// A close-delimited body: everything until EOF.
    UntilClose,
    /// The body is complete.
    Done,
}

/// Decodes a body incrementally from a buffer the caller keeps filling.
#[derive(Debug, Clone)]
pub(crate) struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    /// A decoder for a body of this framing.
    pub fn new(framing: Framing) -> BodyDecoder {
        let state = match framing {
            Framing::Chunked => State::Size,
            Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Close => State::UntilClose,
        };
        BodyDecoder { state }
    }

    /// Whether the body is complete (any bytes left in the buffer belong to the next response).
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes all the body data complete in `buf` (consuming its framing), as one piece; empty
    /// when `buf` held only framing or nothing.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Bytes, FramingError> {
        let mut out: Option<BytesMut> = None;
        loop {
            let taken = match self.step(buf)? {
                Step::Data(b) => b,
                Step::Progress => continue,
                Step::NeedMore => break,
            };
            match out.as_mut() {
                None => out = Some(taken),
                Some(o) => o.extend_from_slice(&taken),
            }
        }
        Ok(out.map(BytesMut::freeze).unwrap_or_default())
    }

    /// Whether EOF now is the clean end of the body (`Ok`) or a body cut short (`Err`, why).
    pub fn at_eof(&self) -> Result<(), FramingError> {
        match self.state {
            State::Done | State::UntilClose => Ok(()),
            State::Length(n) => Err(FramingError::ShortLength(n)),
            _ => Err(FramingError::ShortChunked),
        }
    }

    /// One step of the state machine over `buf`.
    fn step(&mut self, buf: &mut BytesMut) -> Result<Step, FramingError> {
        match self.state {
            State::Done => Ok(Step::NeedMore),
            State::UntilClose if buf.is_empty() => Ok(Step::NeedMore),
            State::UntilClose => Ok(Step::Data(buf.split())),
            State::Length(_) | State::Data(_) if buf.is_empty() => Ok(Step::NeedMore),
            State::Length(n) => {
                let k = n.min(buf.len() as u64);
                self.state = if k == n {
                    State::Done
                } else {
                    State::Length(n - k)
                };
                Ok(Step::Data(buf.split_to(k as usize)))
            }
            State::Data(n) => {
                let k = n.min(buf.len() as u64);
                self.state = if k == n {
                    State::DataEnd
                } else {
                    State::Data(n - k)
                };
                Ok(Step::Data(buf.split_to(k as usize)))
            }
            State::DataEnd => self.data_end(buf),
            State::Size => self.size_line(buf),
            State::Trailer => self.trailer_line(buf),
        }
    }

    /// The CRLF that ends a chunk's data.
    fn data_end(&mut self, buf: &mut BytesMut) -> Result<Step, FramingError> {
        match &buf[..buf.len().min(2)] {
            [] | [b'\r'] => Ok(Step::NeedMore),
            [b'\r', b'\n', ..] => {
                buf.advance(2);
                self.state = State::Size;
                Ok(Step::Progress)
            }
            // A bare LF, as lenient parsers accept.
            [b'\n', ..] => {
                buf.advance(1);
                self.state = State::Size;
                Ok(Step::Progress)
            }
            _ => Err(FramingError::NoChunkEnd),
        }
    }

    /// A chunk-size line (`1a;ext=v\r\n`).
    fn size_line(&mut self, buf: &mut BytesMut) -> Result<Step, FramingError> {
        let Some(line) = take_line(buf)? else {
            return Ok(Step::NeedMore);
        };
        let text = std::str::from_utf8(&line).unwrap_or("");
        let hex = text.split(';').next().unwrap_or("").trim();
        let n = u64::from_str_radix(hex, 16)
            .ok()
            .filter(|_| !hex.is_empty() && hex.len() <= 16)
            .ok_or_else(|| {
                FramingError::ChunkSize(crate::wire::chunk::one_line(&String::from_utf8_lossy(
                    &line,
                )))
            })?;
        self.state = if n == 0 {
            State::Trailer
        } else {
            State::Data(n)
        };
        Ok(Step::Progress)
    }

    /// A trailer line; the empty one ends the body.
    fn trailer_line(&mut self, buf: &mut BytesMut) -> Result<Step, FramingError> {
        let Some(line) = take_line(buf)? else {
            return Ok(Step::NeedMore);
        };
        if line.is_empty() {
            self.state = State::Done;
        }
        Ok(Step::Progress)
    }
}

/// What one step did.
enum Step {
    /// Body data.
    Data(BytesMut),
    /// Framing consumed; step again.
    Progress,
    /// The buffer holds nothing more to decode.
    NeedMore,
}

/// Takes one line (without its CRLF or LF) from the front of `buf`; `None` until it is
/// complete. A line longer than [`MAX_LINE`] is an error.
fn take_line(buf: &mut BytesMut) -> Result<Option<BytesMut>, FramingError> {
    match memchr::memchr(b'\n', buf) {
        Some(i) => {
            let mut line = buf.split_to(i + 1);
            line.truncate(i);
            if line.last() == Some(&b'\r') {
                line.truncate(i - 1);
            }
            Ok(Some(line))
        }
        None if buf.len() > MAX_LINE => Err(FramingError::LongLine),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a decoder split at `cut`, as two reads; returns the body and whether it
    /// completed.
    fn decode_split(framing: Framing, wire: &[u8], cuts: &[usize]) -> (Vec<u8>, bool) {
        let mut d = BodyDecoder::new(framing);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut from = 0;
        for &c in cuts.iter().chain(std::iter::once(&wire.len())) {
            buf.extend_from_slice(&wire[from..c]);
            from = c;
            out.extend_from_slice(&d.decode(&mut buf).expect("decodes"));
        }
        (out, d.is_done())
    }

    #[test]
    fn a_chunked_body_decodes_the_same_at_every_split() {
        let wire = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-T: 1\r\n\r\n";
        for a in 0..=wire.len() {
            for b in a..=wire.len() {
                let (out, done) = decode_split(Framing::Chunked, wire, &[a, b]);
                assert_eq!(out, b"hello, world", "cuts {a} {b}");
                assert!(done, "cuts {a} {b}");
            }
        }
    }

    #[test]
    fn a_length_body_stops_at_its_length_and_leaves_the_rest() {
        let mut d = BodyDecoder::new(Framing::Length(5));
        let mut buf = BytesMut::from(&b"hel"[..]);
        assert_eq!(&d.decode(&mut buf).expect("ok")[..], b"hel");
        assert!(d.at_eof().is_err(), "cut short");
        buf.extend_from_slice(b"loHTTP/1.1");
        assert_eq!(&d.decode(&mut buf).expect("ok")[..], b"lo");
        assert!(d.is_done());
        assert_eq!(&buf[..], b"HTTP/1.1");
    }

    #[test]
    fn a_cut_or_malformed_chunked_body_is_an_error() {
        let mut d = BodyDecoder::new(Framing::Chunked);
        let mut buf = BytesMut::from(&b"5\r\nhel"[..]);
        assert_eq!(&d.decode(&mut buf).expect("ok")[..], b"hel");
        assert!(d.at_eof().expect_err("cut").to_string().contains("chunked"));
        for bad in [&b"zz\r\n"[..], b"5\r\nhelloXX", b"-1\r\n"] {
            let mut d = BodyDecoder::new(Framing::Chunked);
            let mut buf = BytesMut::from(bad);
            assert!(d.decode(&mut buf).is_err(), "{bad:?}");
        }
        let mut d = BodyDecoder::new(Framing::Chunked);
        let mut buf = BytesMut::from(&vec![b'1'; MAX_LINE + 1][..]);
        assert!(d.decode(&mut buf).is_err(), "endless size line");
    }

    use proptest::prelude::*;

    /// `body` in chunks of the sizes in `sizes` (cycled), some with an extension, and a trailer.
    fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
        let mut wire = Vec::new();
        let mut rest = body;
        for (i, size) in sizes.iter().cycle().enumerate() {
            if rest.is_empty() {
                break;
            }
            let n = (*size).clamp(1, rest.len());
            let ext = if i % 3 == 1 { ";x=\"y\"" } else { "" };
            wire.extend_from_slice(format!("{n:X}{ext}\r\n").as_bytes());
            wire.extend_from_slice(&rest[..n]);
            wire.extend_from_slice(b"\r\n");
            rest = &rest[n..];
        }
        wire.extend_from_slice(b"0\r\nX-Trailer: 1\r\n\r\n");
        wire
    }

    proptest! {
        /// Any body, chunked any way, read in any pieces, decodes to itself and completes.
        #[test]
        fn any_chunking_and_any_reads_give_the_body_back(
            body in proptest::collection::vec(any::<u8>(), 0..600),
            sizes in proptest::collection::vec(1usize..90, 1..8),
            cuts in proptest::collection::vec(any::<u16>(), 0..12),
        ) {
            let wire = chunked(&body, &sizes);
            let mut cuts: Vec<usize> = cuts.iter().map(|c| *c as usize % (wire.len() + 1)).collect();
            cuts.sort_unstable();
            let (out, done) = decode_split(Framing::Chunked, &wire, &cuts);
            prop_assert_eq!(out, body);
            prop_assert!(done);
        }

        /// Arbitrary bytes as a chunked body or a head never panic the decoder.
        #[test]
        fn arbitrary_bytes_never_panic(wire in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut d = BodyDecoder::new(Framing::Chunked);
            let _ = d.decode(&mut BytesMut::from(&wire[..]));
            let _ = d.at_eof();
            let _ = parse_head(&mut BytesMut::from(&wire[..]));
        }
    }

    /// The words of every framing error, as requests' error messages carried them before the
    /// errors had a type.
    #[test]
    fn framing_errors_keep_their_words() {
        let head = |s: &[u8]| {
            parse_head(&mut BytesMut::from(s))
                .expect_err("bad head")
                .to_string()
        };
        let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 1, b'a');
        assert_eq!(head(&long), "the response head is longer than 64 KiB");
        assert_eq!(
            head(b"garbage\r\n\r\n"),
            "malformed response head: invalid HTTP version"
        );
        assert_eq!(
            head(b"HTTP/1.1 200 OK\r\nContent-Length:  1x \r\n\r\n"),
            r#"malformed Content-Length "1x""#
        );
        assert_eq!(
            head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            "conflicting Content-Length headers"
        );
        let body = |framing, s: &[u8]| {
            let mut d = BodyDecoder::new(framing);
            let mut buf = BytesMut::from(s);
            match d.decode(&mut buf) {
                Ok(_) => d.at_eof().expect_err("cut short").to_string(),
                Err(e) => e.to_string(),
            }
        };
        assert_eq!(
            body(Framing::Length(5), b"hel"),
            "the connection closed 2 bytes before the end of the body (Content-Length)"
        );
        assert_eq!(
            body(Framing::Chunked, b"5\r\nhel"),
            "the connection closed inside the chunked body (no last chunk)"
        );
        assert_eq!(
            body(Framing::Chunked, b"5\r\nhelloXX"),
            "malformed chunked body: no CRLF after a chunk's data"
        );
        assert_eq!(
            body(Framing::Chunked, b"zz;x\r\n"),
            r#"malformed chunked body: bad chunk size "zz;x""#
        );
        assert_eq!(
            body(Framing::Chunked, &[b'1'; MAX_LINE + 1]),
            "malformed chunked body: a size or trailer line is too long"
        );
    }

    #[test]
    fn heads_give_status_framing_keep_alive_and_retry_after() {
        let head = |s: &str| parse_head(&mut BytesMut::from(s.as_bytes()));
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .expect("ok")
            .expect("complete");
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (200, Framing::Chunked, true)
        );
        let h = head(
            "HTTP/1.1 503 Busy\r\nRetry-After: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
        )
        .expect("ok")
        .expect("complete");
        assert_eq!(h.status, 503);
        assert_eq!(h.retry_after, Some(Duration::from_secs(2)));
        assert_eq!(h.location, None);
        assert_eq!(h.framing, Framing::Length(3));
        assert!(!h.keep_alive);
        let h = head("HTTP/1.0 200 OK\r\n\r\n")
            .expect("ok")
            .expect("complete");
        assert_eq!((h.framing, h.keep_alive), (Framing::Close, false));
        let h = head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No\r\n\r\n")
            .expect("ok")
            .expect("complete");
        assert_eq!((h.status, h.framing), (204, Framing::Length(0)));
        assert_eq!(head("HTTP/1.1 200 OK\r\nContent-"), Ok(None));
        assert!(head("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        assert!(head("garbage\r\n\r\n").is_err());
        assert_eq!(retry_after_secs("99999"), Some(Duration::from_secs(60)));
        assert_eq!(retry_after_secs("-1"), None);
    }
}
