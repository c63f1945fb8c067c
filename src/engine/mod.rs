//! The engine: one session actor owning every torrent.
//!
//! - [`session`]: the actor (commands, events, the listener, snapshots).
//! - [`torrent`]: one torrent as plain data: life cycle, trackers, peer book, peers, choking.
//! - [`peer_conn`]: one connection: handshake, protocol reader, upload pump.
//! - [`picker`]: which blocks to request (rarest first, endgame).
//! - [`timer`]: the session's one deadline queue.
//! - [`ctx`]: what all of them share; [`event_log`]: the event stream; [`rate`]: limits
//!   and meters.

pub mod ctx;
pub mod event_log;
pub mod peer_conn;
pub mod picker;
pub mod rate;
pub mod session;
pub mod timer;
pub mod torrent;
