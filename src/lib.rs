//! ratorrent: a BitTorrent client library behind a terminal UI.
//!
//! Layout (see `README.md`):
//! - [`api`]: the only types the engine and the UI share (snapshots and commands).
//! - [`engine`]: the session actor that owns every torrent, its peers and trackers.
//! - [`tui`]: the ratatui front end, which reads snapshots and sends commands.
//! - the domain, below everything else: [`piece`] (geometry, blocks, bitfields), [`units`]
//!   (sizes, rates and durations, formatted and parsed), [`net`] (address scope, tracker
//!   URLs fit to show), [`untrusted`] (the policy for untrusted text shown on a terminal).
//! - protocol and storage building blocks: [`bencode`], [`metainfo`], [`tracker`], [`dht`],
//!   [`lsd`], [`peer`], [`storage`].
//! - [`watch`]: the watch folder (adds dropped .torrent files through the command channel).

#![warn(missing_docs)]

pub mod api;
pub mod atomic_write;
pub mod bencode;
pub mod cli;
pub mod config;
pub mod dht;
pub mod engine;
pub mod headless;
pub mod lock;
pub mod lsd;
pub mod metainfo;
pub mod net;
pub mod peer;
pub mod piece;
pub mod state;
pub mod storage;
pub mod tracker;
pub mod tui;
pub mod units;
pub mod untrusted;
pub mod watch;
