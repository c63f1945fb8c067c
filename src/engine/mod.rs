//! The engine: one session actor owning every torrent.

pub mod picker;
