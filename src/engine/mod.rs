//! The engine: one session actor owning every torrent.
