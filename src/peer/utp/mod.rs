//! uTP, the uTorrent transport protocol (BEP 29): reliable, ordered byte streams over one
//! UDP socket, with LEDBAT congestion control so a transfer yields to other traffic on the
//! user's line.
//!
//! - [`packet`]: the header and its extensions (selective ACK), parsed without allocation.
//! - [`ledbat`]: the congestion window from one-way delay (RFC 6817).
//! - [`conn`]: one connection as a plain state machine (handshake, send and receive
//!   buffers, retransmission, windows, pacing).
//!
//! Our own code rather than a crate: see README ("uTP") for the crates weighed and why.

pub mod conn;
pub mod ledbat;
pub mod packet;
