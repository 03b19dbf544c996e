//! Kernel receive timestamps for the raw reader ([`crate::wire::rawhttp`]): on Linux each stream
//! socket has `SO_TIMESTAMPNS`, and every read is a `recvmsg` whose control message carries the
//! time the kernel received the last segment the read returned. That instant does not move when
//! the client's runtime is late to read the socket (a loaded client, a CPU hog), which is what
//! a chunk's timestamp should mean: when its bytes arrived, not when the client got to them.
//!
//! The kernel's time is `CLOCK_REALTIME`; the measurement runs on the monotonic clock. Each
//! read converts with a realtime/monotonic pair sampled right after the `recvmsg` returns: the
//! chunk's instant is that monotonic read instant minus the realtime age of the bytes. The
//! error of the conversion is the gap between the two clock reads (tens of nanoseconds, both
//! are vDSO calls) plus the realtime clock's slew over the age of the bytes (NTP slews at most
//! 500 ppm: 0.5 µs on bytes 1 ms old). A pair sampled once when the reader starts would add
//! the slew over the whole run (up to 0.5 ms per second) and any clock step; a step between the
//! two clock reads here is caught instead: an age that is negative or over a minute is not
//! believed, and that read keeps its user-space instant.
//!
//! Elsewhere (other systems, or a socket that refuses the option) the reader uses plain reads
//! and user-space instants, and says so: [`Stamp::kernel`] is `None`.

use std::io;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The instants of one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// When the read returned (user space, right after the system call).
    pub read: Instant,
    /// When the kernel received the last bytes the read returned, where the kernel said.
    pub kernel: Option<Instant>,
}

impl Stamp {
    /// The instant a chunk completed by this read is given: the kernel's where there is one.
    pub fn best(&self) -> Instant {
        self.kernel.unwrap_or(self.read)
    }
}

/// The oldest bytes believed: an older kernel time means the realtime clock stepped.
const MAX_AGE: Duration = Duration::from_secs(60);

/// Which timestamps this build's reads carry: `"kernel"` on Linux, `"user space"` elsewhere
/// (a socket that refuses the option also falls back, per connection).
pub const SOURCE: &str = if cfg!(target_os = "linux") {
    "kernel"
} else {
    "user space"
};

/// Keeps the kernel's receive timestamping on for the life of the process. Linux stamps
/// packets only while some socket asks for it, and switches that on and off asynchronously (a
/// static key flipped by deferred work when the first such socket appears and the last one
/// closes): packets that arrive meanwhile carry no time, and their reads fall back to the
/// user-space instant. One idle UDP socket with the option, opened when the raw reader is
/// chosen (before the run's first request), keeps it on between connections; and this waits
/// (at most [`SWITCH_ON_WAIT`]) until a datagram the socket sends itself comes back stamped, so
/// the first request's bytes are not read before the switch has happened. The deferred work
/// runs on a kernel worker thread, which a loaded host can hold back for milliseconds: without
/// the wait, the first responses of a process now and then had pieces without a kernel time.
#[cfg(target_os = "linux")]
pub fn keep_enabled() {
    use std::os::fd::AsRawFd;
    static KEEPER: std::sync::OnceLock<Option<std::net::UdpSocket>> = std::sync::OnceLock::new();
    KEEPER.get_or_init(|| {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
        nix::sys::socket::setsockopt(
            s.as_raw_fd(),
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        )
        .ok()?;
        let start = std::time::Instant::now();
        while !stamps_itself(&s) && start.elapsed() < SWITCH_ON_WAIT {
            std::thread::sleep(Duration::from_micros(200));
        }
        Some(s)
    });
}

/// How long [`keep_enabled`] waits for the kernel to switch timestamping on: the worker runs
/// within microseconds on an idle host; past this the reads fall back (and are counted).
#[cfg(target_os = "linux")]
pub const SWITCH_ON_WAIT: Duration = Duration::from_millis(200);

/// Whether a datagram `s` sends itself comes back with the kernel's receive time.
#[cfg(target_os = "linux")]
fn stamps_itself(s: &std::net::UdpSocket) -> bool {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::AsRawFd;
    let Ok(me) = s.local_addr() else {
        return false;
    };
    if s.set_read_timeout(Some(Duration::from_millis(20))).is_err() || s.send_to(&[0], me).is_err()
    {
        return false;
    }
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let mut cmsg = Vec::with_capacity(64);
    let Ok(msg) = recvmsg::<()>(s.as_raw_fd(), &mut iov, Some(&mut cmsg), MsgFlags::empty()) else {
        return false;
    };
    msg.cmsgs()
        .any(|c| matches!(c, ControlMessageOwned::ScmTimestampns(_)))
}

/// Keeps the kernel's receive timestamping on (nothing to do where there is none).
#[cfg(not(target_os = "linux"))]
pub fn keep_enabled() {}

/// Buffers one connection reads through.
#[derive(Debug)]
pub struct ReadBuf {
    /// Where a read lands before it is appended to the connection's buffer.
    data: Vec<u8>,
    /// The control-message space of `recvmsg` (one `timespec`: 32 bytes on 64-bit Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    cmsg: Vec<u8>,
}

impl ReadBuf {
    /// Buffers for reads of up to `size` bytes.
    pub fn new(size: usize) -> ReadBuf {
        ReadBuf {
            data: vec![0; size],
            cmsg: Vec::with_capacity(64),
        }
    }

    /// The bytes of the last read.
    pub fn bytes(&self, n: usize) -> &[u8] {
        &self.data[..n.min(self.data.len())]
    }
}

/// One connection's socket. On Unix it is registered with the runtime as a plain descriptor
/// (`AsyncFd`) rather than as tokio's `TcpStream`: a `recvmsg` needs the descriptor, and
/// `AsyncFd` lets a read that returned less than asked for drop the socket's readiness at once.
/// tokio's own `TcpStream` reads do that, but its `try_io` (the only way to run a `recvmsg` on
/// it) keeps the readiness until a read fails with `WouldBlock`, which costs every chunk a
/// second system call that finds the socket empty.
#[derive(Debug)]
pub struct Sock {
    #[cfg(unix)]
    fd: tokio::io::unix::AsyncFd<std::net::TcpStream>,
    #[cfg(not(unix))]
    fd: TcpStream,
}

impl Sock {
    /// Takes over a connected `stream` and asks for kernel receive timestamps on it; the flag
    /// says whether the system gave them.
    pub fn new(stream: TcpStream) -> io::Result<(Sock, bool)> {
        // `AsyncFd::new` is deprecated because a type could return a different or closed
        // descriptor from `as_raw_fd` over its life; `std::net::TcpStream` owns its descriptor
        // and always returns that one, which is the whole of what `register` asks its caller
        // to promise (and `register` is `unsafe`, which this workspace forbids).
        #[cfg(unix)]
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::new(stream.into_std()?)?;
        #[cfg(not(unix))]
        let fd = stream;
        let sock = Sock { fd };
        let kernel = sock.enable_timestamps();
        Ok((sock, kernel))
    }

    /// Asks for kernel receive timestamps; `false` where the system has none.
    #[cfg(target_os = "linux")]
    fn enable_timestamps(&self) -> bool {
        use std::os::fd::AsRawFd;
        nix::sys::socket::setsockopt(
            self.fd.as_raw_fd(),
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        )
        .is_ok()
    }

    /// Asks for kernel receive timestamps; `false` where the system has none.
    #[cfg(not(target_os = "linux"))]
    fn enable_timestamps(&self) -> bool {
        false
    }

    /// Writes all of `bytes`.
    #[cfg(unix)]
    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        while !bytes.is_empty() {
            let mut guard = self.fd.writable().await?;
            match guard.try_io(|s| s.get_ref().write(bytes)) {
                Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
        Ok(())
    }

    /// Writes all of `bytes`.
    #[cfg(not(unix))]
    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut s = &self.fd;
        tokio::io::AsyncWriteExt::write_all(&mut s, bytes).await
    }

    /// Whether an idle connection is still usable: nothing to read and not closed. EOF means
    /// the server closed it, and bytes nobody asked for mean it is out of step.
    pub fn is_idle_open(&self) -> bool {
        let mut probe = [0u8; 1];
        #[cfg(unix)]
        let r = std::io::Read::read(&mut self.fd.get_ref(), &mut probe);
        #[cfg(not(unix))]
        let r = self.fd.try_read(&mut probe);
        matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Reads what the socket has, waiting until it has something: the byte count (0 at EOF)
    /// and the read's instants. `kernel`: the socket has `SO_TIMESTAMPNS`.
    #[cfg(unix)]
    pub async fn read(&self, buf: &mut ReadBuf, kernel: bool) -> io::Result<(usize, Stamp)> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|s| try_read(s.get_ref(), buf, kernel)) {
                Ok(Ok((n, stamp))) => {
                    // A read that did not fill the buffer emptied the socket (TCP copies every
                    // queued segment that fits). Waiting for the next edge instead of reading
                    // again saves a system call per chunk; the readiness is only dropped if no
                    // new event came since this guard's, and a closed state is never dropped,
                    // so no bytes and no EOF can be missed (tokio's own reads do the same).
                    if n > 0 && n < buf.data.len() {
                        guard.clear_ready();
                    }
                    return Ok((n, stamp));
                }
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }

    /// Reads what the socket has, waiting until it has something: the byte count (0 at EOF)
    /// and the read's instants (user space only here).
    #[cfg(not(unix))]
    pub async fn read(&self, buf: &mut ReadBuf, _kernel: bool) -> io::Result<(usize, Stamp)> {
        loop {
            self.fd.readable().await?;
            match self.fd.try_read(&mut buf.data) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r.map(|n| (n, user_stamp())),
            }
        }
    }
}

/// One non-blocking read.
#[cfg(target_os = "linux")]
fn try_read(
    sock: &std::net::TcpStream,
    buf: &mut ReadBuf,
    kernel: bool,
) -> io::Result<(usize, Stamp)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::AsRawFd;
    if !kernel {
        let n = std::io::Read::read(&mut &*sock, &mut buf.data)?;
        return Ok((n, user_stamp()));
    }
    let mut iov = [io::IoSliceMut::new(&mut buf.data)];
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut buf.cmsg),
        MsgFlags::MSG_DONTWAIT,
    )?;
    // Sampled before anything else, so the conversion's pair is as close to the read as can be.
    let now_rt = std::time::SystemTime::now();
    let read = Instant::now();
    let mut kernel_at = None;
    for c in msg.cmsgs() {
        if let ControlMessageOwned::ScmTimestampns(ts) = c {
            // `time_t` and `c_long` are 32-bit on 32-bit targets.
            #[allow(clippy::unnecessary_cast)]
            let (sec, nsec) = (ts.tv_sec() as i64, ts.tv_nsec() as i64);
            kernel_at = to_monotonic(sec, nsec, now_rt, read);
        }
    }
    Ok((
        msg.bytes,
        Stamp {
            read,
            kernel: kernel_at,
        },
    ))
}

/// One non-blocking read (no kernel times on this system).
#[cfg(all(unix, not(target_os = "linux")))]
fn try_read(
    sock: &std::net::TcpStream,
    buf: &mut ReadBuf,
    _kernel: bool,
) -> io::Result<(usize, Stamp)> {
    let n = std::io::Read::read(&mut &*sock, &mut buf.data)?;
    Ok((n, user_stamp()))
}

/// The instants of a read that has no kernel time.
pub(crate) fn user_stamp() -> Stamp {
    Stamp {
        read: Instant::now(),
        kernel: None,
    }
}

/// The monotonic instant of a kernel realtime `sec.nsec`, by the pair (`now_rt`, `now`)
/// sampled together; `None` when the age is negative or implausibly old (the realtime clock
/// stepped), so the caller keeps its user-space instant.
pub fn to_monotonic(
    sec: i64,
    nsec: i64,
    now_rt: std::time::SystemTime,
    now: Instant,
) -> Option<Instant> {
    let sec = u64::try_from(sec).ok()?;
    let nsec = u32::try_from(nsec).ok().filter(|n| *n < 1_000_000_000)?;
    let at = std::time::UNIX_EPOCH.checked_add(Duration::new(sec, nsec))?;
    let age = now_rt.duration_since(at).ok()?;
    if age > MAX_AGE {
        return None;
    }
    now.checked_sub(age)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[cfg(target_os = "linux")]
    #[test]
    fn once_kept_enabled_the_kernel_stamps_every_packet() {
        use std::os::fd::AsRawFd;
        keep_enabled();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        nix::sys::socket::setsockopt(
            s.as_raw_fd(),
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        )
        .expect("SO_TIMESTAMPNS");
        for _ in 0..20 {
            assert!(stamps_itself(&s), "a datagram came back without a time");
        }
    }

    #[test]
    fn realtime_converts_by_its_age_and_steps_are_not_believed() {
        let now = Instant::now();
        let rt = SystemTime::now();
        let since = rt.duration_since(UNIX_EPOCH).expect("after 1970");
        let ago = since - Duration::from_micros(250);
        let k = to_monotonic(ago.as_secs() as i64, ago.subsec_nanos() as i64, rt, now)
            .expect("converted");
        assert_eq!(now - k, Duration::from_micros(250));
        let future = since + Duration::from_millis(1);
        assert_eq!(
            to_monotonic(
                future.as_secs() as i64,
                future.subsec_nanos() as i64,
                rt,
                now
            ),
            None,
            "a kernel time after the read is a clock step"
        );
        let old = since - Duration::from_secs(3600);
        assert_eq!(to_monotonic(old.as_secs() as i64, 0, rt, now), None);
        assert_eq!(to_monotonic(-1, 0, rt, now), None);
        assert_eq!(to_monotonic(1, 2_000_000_000, rt, now), None);
    }
}
