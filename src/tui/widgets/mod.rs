//! Pieces of the screen, each a function that draws one area from snapshot data.

pub(crate) mod detail;
pub(crate) mod help;
pub(crate) mod status;
pub(crate) mod torrent_table;
