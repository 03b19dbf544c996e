//! Kernel receive timestamps for the raw reader ([`crate::rawhttp`]): on Linux each stream
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

/// Asks for kernel receive timestamps on `sock`; `false` where the system has none.
#[cfg(target_os = "linux")]
pub fn enable(sock: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    nix::sys::socket::setsockopt(
        sock.as_raw_fd(),
        nix::sys::socket::sockopt::ReceiveTimestampns,
        &true,
    )
    .is_ok()
}

/// Keeps the kernel's receive timestamping on for the life of the process. Linux stamps
/// packets only while some socket asks for it, and switches that on and off asynchronously (a
/// static key flipped by deferred work when the first such socket appears and the last one
/// closes): packets that arrive meanwhile carry no time, and their reads fall back to the
/// user-space instant. One idle UDP socket with the option, opened when the raw reader is
/// chosen (before the run's first request), keeps it on between connections.
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
        Some(s)
    });
}

/// Keeps the kernel's receive timestamping on (nothing to do where there is none).
#[cfg(not(target_os = "linux"))]
pub fn keep_enabled() {}

/// Asks for kernel receive timestamps on `sock`; `false` where the system has none.
#[cfg(not(target_os = "linux"))]
pub fn enable(_sock: &TcpStream) -> bool {
    false
}

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

/// Reads what `sock` has, waiting until it has something: the byte count (0 at EOF) and the
/// read's instants. `kernel`: the socket has `SO_TIMESTAMPNS`.
pub async fn read(sock: &TcpStream, buf: &mut ReadBuf, kernel: bool) -> io::Result<(usize, Stamp)> {
    loop {
        sock.readable().await?;
        match sock.try_io(tokio::io::Interest::READABLE, || {
            try_read(sock, buf, kernel)
        }) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// One non-blocking read.
#[cfg(target_os = "linux")]
fn try_read(sock: &TcpStream, buf: &mut ReadBuf, kernel: bool) -> io::Result<(usize, Stamp)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::AsRawFd;
    if !kernel {
        let n = plain_read(sock, buf)?;
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

/// One non-blocking read.
#[cfg(not(target_os = "linux"))]
fn try_read(sock: &TcpStream, buf: &mut ReadBuf, _kernel: bool) -> io::Result<(usize, Stamp)> {
    let n = plain_read(sock, buf)?;
    Ok((n, user_stamp()))
}

/// A read without control messages.
fn plain_read(sock: &TcpStream, buf: &mut ReadBuf) -> io::Result<usize> {
    sock.try_read(&mut buf.data)
}

/// The instants of a read that has no kernel time.
fn user_stamp() -> Stamp {
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
