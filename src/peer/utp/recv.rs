//! Reading datagrams in batches: `recvmmsg(2)` fills up to [`SLOTS`] datagrams per system
//! call into buffers allocated once per socket. A datagram longer than a slot
//! ([`SLOT_LEN`]: no uTP packet is) is cut by the kernel and dropped here.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams read per system call.
pub const SLOTS: usize = 32;
/// Bytes per datagram buffer.
pub const SLOT_LEN: usize = 2048;

/// The buffers of one socket's reads.
pub struct RecvBatch {
    data: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// Datagrams of the last read: (length, sender); 0 length = dropped.
    got: Vec<(usize, Option<SocketAddr>)>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` point into `data` and `addrs`, owned by the
// same value; they are rebuilt before each use and never shared.
unsafe impl Send for RecvBatch {}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("got", &self.got.len())
            .finish()
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

impl RecvBatch {
    /// Buffers for [`SLOTS`] datagrams of [`SLOT_LEN`] bytes.
    pub fn new() -> RecvBatch {
        RecvBatch {
            data: vec![0; SLOTS * SLOT_LEN],
            // SAFETY (the three): all-zero is a valid sockaddr_storage, iovec and mmsghdr
            // (null pointers, zero lengths); they are filled in before use
            addrs: (0..SLOTS).map(|_| unsafe { std::mem::zeroed() }).collect(),
            iovs: (0..SLOTS).map(|_| unsafe { std::mem::zeroed() }).collect(),
            hdrs: (0..SLOTS).map(|_| unsafe { std::mem::zeroed() }).collect(),
            got: Vec::with_capacity(SLOTS),
        }
    }

    /// Read what the socket has, up to [`SLOTS`] datagrams, without waiting.
    ///
    /// # Errors
    /// `WouldBlock` when nothing is there (the socket's readiness is cleared), or the
    /// system call's error.
    pub fn read(&mut self, udp: &UdpSocket) -> io::Result<usize> {
        let fd = udp.as_raw_fd();
        for i in 0..SLOTS {
            self.iovs[i] = libc::iovec {
                iov_base: self.data[i * SLOT_LEN..].as_mut_ptr().cast(),
                iov_len: SLOT_LEN,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&raw mut self.addrs[i]).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &raw mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        let hdrs = self.hdrs.as_mut_ptr();
        let n = udp.try_io(Interest::READABLE, || {
            // SAFETY: `hdrs` holds SLOTS headers whose name and iovec pointers point into
            // buffers of the sizes given, alive for the call
            let n = unsafe {
                libc::recvmmsg(
                    fd,
                    hdrs,
                    SLOTS as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        })?;
        self.got.clear();
        for i in 0..n {
            let h = &self.hdrs[i];
            let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let len = if truncated { 0 } else { h.msg_len as usize };
            self.got.push((len, to_socket_addr(&self.addrs[i])));
        }
        Ok(n)
    }

    /// Datagram `i` of the last read and its sender (`None` when dropped).
    pub fn datagram(&self, i: usize) -> Option<(&[u8], SocketAddr)> {
        let (len, addr) = *self.got.get(i)?;
        let addr = addr?;
        (len > 0).then(|| (&self.data[i * SLOT_LEN..i * SLOT_LEN + len], addr))
    }
}

/// The address the kernel wrote (IPv4 or IPv6), `None` for another family.
fn to_socket_addr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: an AF_INET address is a sockaddr_in, which sockaddr_storage is large
            // and aligned enough to hold
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}
