//! Snapshots: the immutable, cheap-to-clone view of engine state that the UI draws.

use std::sync::Arc;

use super::TorrentId;

/// Receiving end of the snapshot channel (latest value wins).
pub type SnapshotReceiver = tokio::sync::watch::Receiver<Arc<Snapshot>>;

/// Everything a front end needs to draw one frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Increases by one with every published snapshot; lets the UI skip redraws.
    pub seq: u64,
    /// Session-wide totals for the status bar.
    pub global: GlobalStats,
    /// One row per torrent, in the order they were added.
    pub rows: Arc<[TorrentRow]>,
}

impl Snapshot {
    /// The row of torrent `id`, if it is in this snapshot.
    pub fn row(&self, id: TorrentId) -> Option<&TorrentRow> {
        self.rows.iter().find(|r| r.id == id)
    }
}

/// Session-wide figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalStats {
    /// Payload download rate over all torrents, bytes/s.
    pub down_rate: u64,
    /// Payload upload rate over all torrents, bytes/s.
    pub up_rate: u64,
    /// Payload bytes downloaded this session.
    pub downloaded: u64,
    /// Payload bytes uploaded this session.
    pub uploaded: u64,
    /// Connected peers over all torrents.
    pub peers: u32,
    /// TCP port the session accepts peers on (0 when not listening).
    pub listen_port: u16,
}

/// Life-cycle state of a torrent as shown to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TorrentState {
    /// Hashing existing data on disk before it can start.
    #[default]
    Checking,
    /// Fetching pieces from the swarm.
    Downloading,
    /// Every piece verified; serving the swarm.
    Seeding,
    /// Every piece verified, not serving (e.g. headless download without `--seed`).
    Completed,
    /// Stopped by the user; no peers, no announces.
    Paused,
    /// Stopped by an error (see [`TorrentRow::message`]).
    Error,
}

impl TorrentState {
    /// Short label for tables, e.g. `"Seeding"`.
    pub fn label(self) -> &'static str {
        match self {
            TorrentState::Checking => "Checking",
            TorrentState::Downloading => "Downloading",
            TorrentState::Seeding => "Seeding",
            TorrentState::Completed => "Completed",
            TorrentState::Paused => "Paused",
            TorrentState::Error => "Error",
        }
    }
}

/// One torrent as the list panel shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TorrentRow {
    /// Session-local identity.
    pub id: TorrentId,
    /// Torrent name (display form, UTF-8).
    pub name: String,
    /// v1 info hash, 40 lowercase hex digits.
    pub info_hash: String,
    /// Payload size in bytes (padding files excluded).
    pub size: u64,
    /// Verified payload bytes on disk.
    pub done: u64,
    /// Pieces verified / pieces in the torrent.
    pub pieces_have: u32,
    /// Total number of pieces.
    pub pieces_total: u32,
    /// Current state.
    pub state: TorrentState,
    /// Payload download rate, bytes/s.
    pub down_rate: u64,
    /// Payload upload rate, bytes/s.
    pub up_rate: u64,
    /// Estimated seconds to completion at the current rate; `None` when unknown or done.
    pub eta_secs: Option<u64>,
    /// Connected peers that are seeders (have every piece).
    pub seeds: u32,
    /// Connected peers in total (seeders included).
    pub peers: u32,
    /// Seeders in the swarm as the tracker last reported (`complete`), if it did.
    pub swarm_seeds: Option<u32>,
    /// Leechers in the swarm as the tracker last reported (`incomplete`), if it did.
    pub swarm_leechers: Option<u32>,
    /// Payload bytes downloaded since the torrent was added (failed pieces included).
    pub downloaded: u64,
    /// Payload bytes uploaded since the torrent was added.
    pub uploaded: u64,
    /// Last tracker warning/error or storage error, for the user to read.
    pub message: Option<String>,
}

impl TorrentRow {
    /// Fraction verified, 0.0–1.0 (1.0 for an empty torrent).
    pub fn progress(&self) -> f64 {
        if self.size == 0 {
            1.0
        } else {
            self.done as f64 / self.size as f64
        }
    }
}
