//! uTP, the uTorrent transport protocol (BEP 29): reliable, ordered byte streams over one
//! UDP socket, with LEDBAT congestion control so a transfer yields to other traffic on the
//! user's line.
//!
//! - [`packet`]: the header and its extensions (selective ACK), parsed without allocation.
//! - [`ledbat`]: the congestion window from one-way delay (RFC 6817).
//! - [`conn`]: one connection as a plain state machine (handshake, send and receive
//!   buffers, retransmission, windows, pacing).
//! - [`recv`]: datagrams read in batches (`recvmmsg`).
//! - [`socket`]: [`UtpSocket`], the UDP socket and the task that routes packets to the
//!   connections and runs their timers.
//! - [`stream`]: [`UtpStream`], a connection as `AsyncRead` + `AsyncWrite`.
//!
//! Our own code rather than a crate: see README ("uTP") for the crates weighed and why.

pub mod conn;
pub mod ledbat;
pub mod packet;
pub mod recv;
pub mod socket;
pub mod stream;

pub use socket::{UtpLimits, UtpSocket};
pub use stream::UtpStream;
