//! What a torrent and its peer connections share, below both: the torrent
//! ([`crate::engine::torrent`]) makes these and spawns connections
//! ([`crate::engine::peer_conn`]) that use them, and the session context
//! ([`crate::engine::ctx`]) carries the messages in its events. Nothing here imports the
//! torrent, the connections or the session context.
//!
//! - [`shared`]: [`shared::TorrentShared`], the running torrent as its connections see it
//!   (verified pieces, picker, counters, storage).
//! - [`metadata`]: [`metadata::MetadataFetch`], a magnet link's info dictionary being
//!   fetched by several connections at once (BEP 9), and [`layers`]: a v2 torrent's piece
//!   layers fetched after it (BEP 52).
//! - [`message`]: orders down ([`message::PeerCtrl`]), events up ([`message::PeerEvent`]),
//!   and why a connection ended ([`message::PeerError`]).
//! - [`peer`]: [`peer::PeerInfo`], one connected peer's flags and counters.
//! - [`stream`]: the byte streams a connection runs on.
//! - [`encrypted`]: [`encrypted::MseStream`], a stream after an MSE/PE handshake (RC4 or
//!   plaintext), generic over the stream underneath.
//! - [`ctx`]: [`ctx::LinkCtx`], the session as connections see it (clock, disk threads,
//!   limits, upload budget, DHT node, the way back to the session task).
//! - [`clock`]: the session's millisecond clock.

pub mod clock;
pub mod ctx;
pub mod encrypted;
pub mod layers;
pub mod message;
pub mod metadata;
pub mod peer;
pub mod shared;
pub mod stream;
