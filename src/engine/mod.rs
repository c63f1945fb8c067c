//! The engine: one session actor owning every torrent.

pub mod choker;
pub mod picker;
pub mod rate;
