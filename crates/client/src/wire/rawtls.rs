//! TLS for the raw reader ([`crate::wire::rawhttp`]) on `https://` endpoints: rustls (the `ring`
//! provider and the platform's roots, as the reqwest client uses) run over the reader's own
//! socket reads, so that a chunk's instant stays the kernel's receive time of the read that
//! completed it. A read's bytes go into the TLS session; the plaintext they complete (whole
//! records only) is the read's, and takes its instant. A record that spans reads therefore
//! gets the time of the read that brought its last bytes: when the chunk could first be
//! decrypted, which is when it arrived. Handshake messages and session tickets complete no
//! plaintext and produce no piece.

use bytes::BytesMut;
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, ServerName};
use std::io::{self, Read, Write};
use std::sync::Arc;

/// Why the raw reader's TLS could not be set up: its configuration (for a target) or one
/// connection's session. The text names what failed and keeps rustls's own words; the cause is
/// in the text rather than a `source`, so that a chain printed whole says it once.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// This machine's root certificates could not be loaded.
    #[error("cannot load this machine's TLS root certificates: {0}")]
    Roots(rustls::Error),
    /// rustls refused the configuration.
    #[error("TLS setup failed: {0}")]
    Setup(rustls::Error),
    /// The host is neither a DNS name nor an IP address.
    #[error("{host} is not a valid TLS server name: {error}")]
    ServerName {
        /// The host, as the URL gave it (an IPv6 literal without brackets).
        host: String,
        /// rustls's reason.
        error: InvalidDnsNameError,
    },
    /// rustls refused to start a session with the host.
    #[error("TLS setup for {host} failed: {error}")]
    Session {
        /// The host, as the URL gave it (an IPv6 literal without brackets).
        host: String,
        /// rustls's reason.
        error: rustls::Error,
    },
}

/// The client configuration: the platform's roots plus `extra_roots` (DER certificates: tests
/// give their own authority), HTTP/1.1 by ALPN.
pub(crate) fn client_config(
    extra_roots: Vec<Vec<u8>>,
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let extra_roots: Vec<CertificateDer<'static>> =
        extra_roots.into_iter().map(CertificateDer::from).collect();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = if extra_roots.is_empty() {
        rustls_platform_verifier::Verifier::new(provider.clone())
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider.clone())
    }
    .map_err(TlsError::Roots)?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// One connection's TLS session.
#[derive(Debug)]
pub(crate) struct Tls {
    session: rustls::ClientConnection,
    /// The server sent `close_notify`: nothing more will come, even if the socket stays open.
    closed: bool,
}

/// What one read's bytes gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fed {
    /// Plaintext bytes completed by this read (appended to the connection's buffer).
    pub plain: usize,
    /// The server ended the session (`close_notify`).
    pub closed: bool,
}

impl Tls {
    /// A session with `host` (a name or an IP literal without brackets).
    pub fn new(config: Arc<rustls::ClientConfig>, host: &str) -> Result<Tls, TlsError> {
        let name =
            ServerName::try_from(host.to_string()).map_err(|error| TlsError::ServerName {
                host: host.to_string(),
                error,
            })?;
        let session =
            rustls::ClientConnection::new(config, name).map_err(|error| TlsError::Session {
                host: host.to_string(),
                error,
            })?;
        Ok(Tls {
            session,
            closed: false,
        })
    }

    /// Whether the server ended the session (`close_notify`).
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Whether the handshake is still going on.
    pub fn handshaking(&self) -> bool {
        self.session.is_handshaking()
    }

    /// Queues `plain` to be sent (encrypted by [`Tls::take_out`]).
    pub fn write(&mut self, plain: &[u8]) -> io::Result<()> {
        self.session.writer().write_all(plain)
    }

    /// The TLS bytes to put on the wire now (handshake messages, encrypted requests, alerts);
    /// empty when there are none.
    pub fn take_out(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while self.session.wants_write() {
            self.session.write_tls(&mut out)?;
        }
        Ok(out)
    }

    /// Gives the session the bytes of one read and appends the plaintext they complete to
    /// `plain`.
    pub fn feed(&mut self, mut bytes: &[u8], plain: &mut BytesMut) -> io::Result<Fed> {
        let mut fed = Fed {
            plain: 0,
            closed: false,
        };
        while !bytes.is_empty() {
            if self.session.read_tls(&mut bytes)? == 0 {
                break;
            }
            self.session.process_new_packets().map_err(tls_error)?;
            // Drained after every slice, so the session's buffer never fills up.
            self.drain(plain, &mut fed)?;
        }
        Ok(fed)
    }

    /// Moves the decrypted plaintext into `plain`.
    fn drain(&mut self, plain: &mut BytesMut, fed: &mut Fed) -> io::Result<()> {
        let mut tmp = [0u8; 4096];
        loop {
            match self.session.reader().read(&mut tmp) {
                Ok(0) => {
                    fed.closed = true;
                    self.closed = true;
                    return Ok(());
                }
                Ok(n) => {
                    plain.extend_from_slice(&tmp[..n]);
                    fed.plain += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// A TLS failure as an I/O error whose text says what to check.
fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("TLS failed: {e} (check the server's certificate and the URL's scheme)"),
    )
}

#[cfg(test)]
#[path = "rawtls_tests.rs"]
mod tests;
