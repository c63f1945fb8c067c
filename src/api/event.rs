//! Engine events for a log panel: state changes, tracker errors, bans, hash failures, disk
//! errors. Published on a `tokio::sync::broadcast` channel (a slow reader loses the oldest,
//! never blocks the engine) and kept in a bounded history
//! ([`Command::RecentEvents`](super::Command::RecentEvents)).

use serde::{Deserialize, Serialize};

use std::time::SystemTime;

use super::TorrentId;

/// Receiving end of the event channel.
pub type EventReceiver = tokio::sync::broadcast::Receiver<EngineEvent>;

/// How much an event matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventLevel {
    /// Normal operation (added, completed, state changes).
    Info,
    /// Something went wrong but the torrent goes on (tracker error, hash failure, ban).
    Warn,
    /// A torrent stopped (disk error).
    Error,
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// A torrent was added.
    Added,
    /// A torrent was removed.
    Removed,
    /// A torrent changed state (the message names the new one).
    StateChanged,
    /// Every piece is verified.
    Completed,
    /// A tracker refused or could not be reached.
    TrackerError,
    /// A tracker answered with a warning.
    TrackerWarning,
    /// A piece failed its hash check.
    HashFailed,
    /// A peer was banned.
    PeerBanned,
    /// A disk or file error.
    DiskError,
    /// A check of existing data finished.
    Checked,
    /// An add was refused (from the command line, a dialog, the watch folder or a client):
    /// the message says what and why.
    AddRefused,
    /// An `on_added` or `on_complete` program ended, was killed or could not start: the
    /// message says how (exit code, signal, timeout, OS error) and ends with its stderr.
    Hook,
    /// The IP filter was loaded or reloaded (ranges, lines skipped) or could not be read.
    IpFilter,
    /// Alternative speed limits went on or off (by hand or by the schedule): the message
    /// says which, why, and the limits now in effect.
    AltSpeed,
    /// A torrent's tracker URLs were edited (changed, added, removed): the message lists
    /// them, passkeys masked.
    TrackersEdited,
    /// Session settings changed while it runs (default folder, seeding goals, queue, DHT):
    /// the message says what they are now.
    Settings,
    /// A peer given by hand was not added: the message names it and says why (no port, or
    /// the IP filter blocks it).
    PeerRefused,
    /// A torrent's piece order changed: sequential download or first and last pieces
    /// first went on or off.
    PieceOrder,
    /// A web seed (BEP 19) failed (and when it is tried again), lacks a file, or was
    /// dropped: the message names the server (passkeys masked) and says why.
    WebSeed,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineEvent {
    /// Increases by one per event (gaps show events a slow reader lost).
    pub seq: u64,
    /// When it happened.
    pub at: SystemTime,
    /// The torrent it concerns, if any.
    pub torrent: Option<TorrentId>,
    /// How much it matters.
    pub level: EventLevel,
    /// What kind of event.
    pub kind: EventKind,
    /// One line for the user, e.g. `tracker http://t.example:80: connection refused`.
    pub message: String,
}

impl EngineEvent {
    /// The message with `name: ` (the torrent's name, when the caller knows it) in front,
    /// unless the message starts with it already (many of the engine's torrent events do),
    /// e.g. `debian.iso: tracker t.example: connection refused`.
    pub fn with_name(&self, name: Option<&str>) -> String {
        match name {
            Some(n)
                if !(self.message.starts_with(n) && self.message[n.len()..].starts_with(": ")) =>
            {
                format!("{n}: {}", self.message)
            }
            _ => self.message.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_goes_in_front_once() {
        let ev = |message: &str| EngineEvent {
            seq: 0,
            at: SystemTime::UNIX_EPOCH,
            torrent: None,
            level: EventLevel::Warn,
            kind: EventKind::TrackerError,
            message: message.to_owned(),
        };
        assert_eq!(
            ev("tracker t: refused").with_name(Some("a.iso")),
            "a.iso: tracker t: refused"
        );
        assert_eq!(
            ev("a.iso: tracker t: refused").with_name(Some("a.iso")),
            "a.iso: tracker t: refused"
        );
        assert_eq!(ev("a.isox: b").with_name(Some("a.iso")), "a.iso: a.isox: b");
        assert_eq!(
            ev("tracker t: refused").with_name(None),
            "tracker t: refused"
        );
    }
}
