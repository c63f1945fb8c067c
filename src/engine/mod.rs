//! The engine: one session actor owning every torrent.
//!
//! - [`session`]: the actor (commands, events, the listener, snapshots).
//! - [`torrent`]: one torrent as plain data: life cycle, trackers, peer book, peers, choking.
//! - [`peer_conn`]: one connection: handshake, protocol reader, upload pump.
//! - [`picker`]: which blocks to request (rarest first, endgame).
//! - [`timer`]: the session's one deadline queue.
//! - [`webseed`]: one web seed (BEP 19) at work, the HTTP counterpart of a peer connection.
//! - [`link`]: what a torrent and its connections share (below both: orders, events, the
//!   shared torrent state, the metadata fetch, the clock).
//! - [`categories`]: the session's categories and tags, their paths and their file.
//! - [`ctx`]: the session context and its events; [`event_log`]: the event stream;
//!   [`ip_filter`]: the IP filter in force and its blocked count;
//!   [`rate`]: limits and meters; [`queue`]: which started torrents may run (`[queue]`).

pub mod alt_speed;
pub mod categories;
pub mod ctx;
pub mod event_log;
pub mod hooks;
pub mod ip_filter;
pub mod link;
pub mod peer_conn;
pub mod picker;
pub mod queue;
pub mod rate;
pub mod session;
pub mod timer;
pub mod torrent;
pub mod webseed;
