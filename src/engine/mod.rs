//! The engine: one session actor owning every torrent.

pub mod announce;
pub mod choker;
pub mod peer_task;
pub mod picker;
pub mod rate;
pub mod session;
pub mod torrent;
