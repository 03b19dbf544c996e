//! One connection of the raw reader ([`crate::wire::rawhttp`]): the socket with its kernel
//! receive timestamps, the TLS session over it for `https://`, the bytes read but not yet
//! consumed, and the exchange of one request for a response head. The target (its address, its
//! pool, its counters) and the response (its body, its pieces) live in `rawhttp.rs`; the
//! connection is its own file because both use it and it needs neither: its reads, writes and
//! handshake are the byte-level half of the reader.

use crate::wire::ktime::{ReadBuf, Sock, Stamp};
use crate::wire::rawbody::{Head, parse_head};
use bytes::BytesMut;

/// Size of one read: about three chunks of a typical engine's SSE (250–400 bytes each). A
/// read's kernel time is that of the last segment it returned, so when the client is behind
/// and several chunks wait in the socket, every chunk of one read gets the last one's time: a
/// small read bounds that to a few chunks (each read then costs a system call more than one
/// large read would; a client that keeps up reads one chunk per read either way).
const READ_SIZE: usize = 1024;

/// How an exchange on a connection failed.
pub(crate) enum Exchange {
    /// The connection closed or broke before any byte of an answer.
    NoAnswer(String),
    /// Something else (a malformed head, a break after part of it).
    Bad(String),
}

/// One connection: the socket, the bytes read but not yet consumed, and the read buffers.
#[derive(Debug)]
pub(crate) struct Conn {
    sock: Sock,
    /// Bytes read (plaintext, over TLS) that the response has not consumed yet.
    pub buf: BytesMut,
    read: ReadBuf,
    /// The socket has `SO_TIMESTAMPNS`.
    kernel: bool,
    /// An `https://` connection's session: reads go through it, and `buf` holds plaintext.
    /// (Boxed: a session is about a kilobyte, and connections move in and out of the pool.)
    #[cfg(feature = "tls")]
    tls: Option<Box<crate::wire::rawtls::Tls>>,
}

impl Conn {
    /// A connection over `sock`; `kernel`: the socket has `SO_TIMESTAMPNS`.
    pub fn new(sock: Sock, kernel: bool) -> Conn {
        Conn {
            sock,
            buf: BytesMut::new(),
            read: ReadBuf::new(READ_SIZE),
            kernel,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Whether the server has not closed this idle connection (as far as this side can tell).
    pub fn is_idle_open(&self) -> bool {
        self.sock.is_idle_open()
    }

    /// Runs the connection's reads and writes through `tls` from now on (before the
    /// handshake).
    #[cfg(feature = "tls")]
    pub fn set_tls(&mut self, tls: crate::wire::rawtls::Tls) {
        self.tls = Some(Box::new(tls));
    }

    /// One read appended to `buf`: the byte count (0 at EOF) and its instants. Over TLS, the
    /// plaintext the read completed (reads that complete none, such as a record's first part
    /// or a session ticket, are read past).
    pub async fn fill(&mut self) -> std::io::Result<(usize, Stamp)> {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return self.fill_tls().await;
        }
        let (n, stamp) = self.sock.read(&mut self.read, self.kernel).await?;
        self.buf.extend_from_slice(self.read.bytes(n));
        Ok((n, stamp))
    }

    /// [`Conn::fill`] over TLS.
    #[cfg(feature = "tls")]
    async fn fill_tls(&mut self) -> std::io::Result<(usize, Stamp)> {
        loop {
            if self.tls.as_ref().is_some_and(|t| t.closed()) {
                // The session ended: an end of the body, whether or not the socket closes.
                return Ok((0, crate::wire::ktime::user_stamp()));
            }
            let (n, stamp) = self.sock.read(&mut self.read, self.kernel).await?;
            let Some(tls) = self.tls.as_mut() else {
                return Ok((0, stamp));
            };
            if n == 0 {
                return Ok((0, stamp));
            }
            let fed = tls.feed(self.read.bytes(n), &mut self.buf)?;
            // What the session has to answer (a key update, an alert) goes out now.
            self.flush_tls().await?;
            if fed.plain > 0 || fed.closed {
                return Ok((fed.plain, stamp));
            }
        }
    }

    /// Sends `bytes` (through the TLS session where there is one).
    async fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        #[cfg(feature = "tls")]
        if let Some(tls) = self.tls.as_mut() {
            tls.write(bytes)?;
            return self.flush_tls().await;
        }
        self.sock.write_all(bytes).await
    }

    /// Puts the TLS session's pending bytes on the wire.
    #[cfg(feature = "tls")]
    async fn flush_tls(&mut self) -> std::io::Result<()> {
        let out = match self.tls.as_mut() {
            Some(tls) => tls.take_out()?,
            None => return Ok(()),
        };
        if out.is_empty() {
            return Ok(());
        }
        self.sock.write_all(&out).await
    }

    /// Runs the TLS handshake to its end.
    #[cfg(feature = "tls")]
    pub async fn handshake(&mut self) -> std::io::Result<()> {
        loop {
            self.flush_tls().await?;
            if !self.tls.as_ref().is_some_and(|t| t.handshaking()) {
                return Ok(());
            }
            let (n, _) = self.sock.read(&mut self.read, self.kernel).await?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            if let Some(tls) = self.tls.as_mut() {
                tls.feed(self.read.bytes(n), &mut self.buf)?;
            }
        }
    }

    /// Writes `request` and reads the response head.
    pub async fn exchange(&mut self, request: &[u8]) -> Result<(Head, Stamp), Exchange> {
        if let Err(e) = self.send_bytes(request).await {
            return Err(Exchange::NoAnswer(e.to_string()));
        }
        loop {
            let (n, stamp) = match self.fill().await {
                Ok(r) => r,
                Err(e) if self.buf.is_empty() => return Err(Exchange::NoAnswer(e.to_string())),
                Err(e) => return Err(Exchange::Bad(e.to_string())),
            };
            if n == 0 {
                let why = "the connection closed before the response head".to_string();
                return Err(if self.buf.is_empty() {
                    Exchange::NoAnswer(why)
                } else {
                    Exchange::Bad(why)
                });
            }
            match parse_head(&mut self.buf) {
                Ok(Some(head)) => return Ok((head, stamp)),
                Ok(None) => {}
                Err(e) => return Err(Exchange::Bad(e.to_string())),
            }
        }
    }
}
