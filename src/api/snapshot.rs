//! Snapshots: the immutable, cheap-to-clone view of engine state that the UI draws.
//!
//! A snapshot grows with the number of torrents, not torrents × peers: the list has one
//! [`TorrentRow`] per torrent, and only the torrent the UI focuses on
//! ([`Command::Focus`](super::Command::Focus)) gets a [`TorrentDetail`] with its peers,
//! files, trackers and pieces. Rows carry a revision ([`TorrentRow::rev`]) that changes
//! whenever anything in the row changes; the engine rebuilds only the rows that changed
//! and shares the others (`Arc`) with the previous snapshot.

use serde::{Deserialize, Serialize};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::TorrentId;
use super::error::TorrentError;

/// Receiving end of the snapshot channel (latest value wins).
pub type SnapshotReceiver = tokio::sync::watch::Receiver<Arc<Snapshot>>;

/// Everything a front end needs to draw one frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Increases with every published snapshot; lets the UI skip redraws.
    pub seq: u64,
    /// Session-wide totals for the status bar.
    pub global: GlobalStats,
    /// One row per torrent, in the order they were added.
    pub rows: Arc<[Arc<TorrentRow>]>,
    /// Details of the focused torrent (see [`Command::Focus`](super::Command::Focus)), if any.
    pub detail: Option<Arc<TorrentDetail>>,
}

impl Snapshot {
    /// The row of torrent `id`, if it is in this snapshot.
    pub fn row(&self, id: TorrentId) -> Option<&TorrentRow> {
        self.rows.iter().find(|r| r.id == id).map(|r| &**r)
    }
}

/// Session-wide figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GlobalStats {
    /// Payload download rate over all torrents, bytes/s.
    pub down_rate: u64,
    /// Payload upload rate over all torrents, bytes/s.
    pub up_rate: u64,
    /// Session-wide download limit, bytes/s (0 = unlimited).
    pub down_limit: u64,
    /// Session-wide upload limit, bytes/s (0 = unlimited).
    pub up_limit: u64,
    /// Payload bytes downloaded this session.
    pub downloaded: u64,
    /// Payload bytes uploaded this session.
    pub uploaded: u64,
    /// Connected peers over all torrents.
    pub peers: u32,
    /// TCP port the session accepts peers on (0 when not listening).
    pub listen_port: u16,
    /// Bytes free on the volume of the default download folder, when known.
    pub free_space: Option<u64>,
    /// Nodes in the DHT routing table (BEP 5; IPv4 + IPv6); `None` while the session runs
    /// no DHT (off in the config), and the status bar then shows no DHT figure.
    pub dht_nodes: Option<usize>,
    /// Local Service Discovery (BEP 14) runs (on in the config and its socket joined).
    pub lsd: bool,
    /// Ranges (IPv4 and IPv6, merged) of the IP filter in force; `None` when no filter is
    /// loaded (none configured, or not read yet), and the status bar then shows no count.
    pub ip_filter_ranges: Option<usize>,
    /// Connection attempts the IP filter blocked this session: dials not made (addresses
    /// from any source held back) plus incoming connections refused.
    pub blocked: u64,
    /// Alternative speed limits are on: `down_limit` / `up_limit` are the alternative
    /// pair (by hand or by `[alt_speed_schedule]`).
    pub alt_speed: bool,
    /// Queueing is on (`[queue] enabled`): rows' [`TorrentRow::queue_pos`] decide who
    /// runs.
    pub queueing: bool,
    /// The session's categories by name (`tv` before `tv/hd`), with the paths they
    /// resolve to (see [`Category`](super::Category)).
    pub categories: Arc<[super::CategoryInfo]>,
    /// The session's tags, sorted: those created and those on any torrent.
    pub tags: Arc<[String]>,
    /// The settings a front end may change while the session runs (default folder,
    /// seeding goals, queue limits, DHT; see [`Command::ChangeSettings`](super::Command)).
    pub settings: super::SessionSettings,
}

/// Life-cycle state of a torrent as shown to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
pub enum TorrentState {
    /// Hashing existing data on disk before it can start.
    #[default]
    Checking,
    /// Waiting for a check slot (only `[queue] max_active_checking` torrents hash at a
    /// time).
    Queued,
    /// Fetching the info dictionary from peers (a magnet link, BEP 9).
    FetchingMetadata,
    /// Fetching pieces from the swarm.
    Downloading,
    /// Every piece verified; serving the swarm.
    Seeding,
    /// Every piece verified, not serving (e.g. headless download without `--seed`).
    Completed,
    /// Stopped by the user; no peers, no announces.
    Paused,
    /// Stopped by an error (see [`TorrentRow::error`]); resume or recheck once it is fixed.
    Error,
    /// Its files are being moved to another folder.
    Moving,
    /// Started, waiting for a download slot of the queue (`[queue]` on): out of the swarm.
    QueuedDownload,
    /// Complete and started, waiting for a seeding slot of the queue: out of the swarm.
    QueuedSeed,
}

impl TorrentState {
    /// Short label for tables, e.g. `"Seeding"`.
    pub fn label(self) -> &'static str {
        match self {
            TorrentState::Checking => "Checking",
            TorrentState::Queued => "Check queued",
            TorrentState::FetchingMetadata => "Fetching metadata",
            TorrentState::Downloading => "Downloading",
            TorrentState::Seeding => "Seeding",
            TorrentState::Completed => "Completed",
            TorrentState::Paused => "Paused",
            TorrentState::Error => "Error",
            TorrentState::Moving => "Moving",
            TorrentState::QueuedDownload => "Queued",
            TorrentState::QueuedSeed => "Queued seed",
        }
    }

    /// Whether the torrent talks to peers and trackers in this state.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            TorrentState::FetchingMetadata | TorrentState::Downloading | TorrentState::Seeding
        )
    }
}

/// One torrent as the list panel shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TorrentRow {
    /// Session-local identity.
    pub id: TorrentId,
    /// Changes whenever any field of this row changes (equal revisions: equal rows).
    pub rev: u64,
    /// Torrent name (display form, UTF-8).
    pub name: String,
    /// v1 info hash, 40 lowercase hex digits.
    pub info_hash: String,
    /// Payload size in bytes (padding files excluded).
    pub size: u64,
    /// Verified payload bytes on disk (while checking: bytes checked so far).
    pub done: u64,
    /// Pieces verified (while checking: pieces checked so far).
    pub pieces_have: u32,
    /// Total number of pieces.
    pub pieces_total: u32,
    /// Current state.
    pub state: TorrentState,
    /// Why the torrent is in [`TorrentState::Error`], with what to do about it.
    pub error: Option<TorrentError>,
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
    /// Its web seeds (BEP 19) in use now (not backed off nor dropped); they are not peers.
    pub web_seeds: u32,
    /// Seeders in the swarm as a tracker last reported (`complete`), if one did.
    pub swarm_seeds: Option<u32>,
    /// Leechers in the swarm as a tracker last reported (`incomplete`), if one did.
    pub swarm_leechers: Option<u32>,
    /// Payload bytes downloaded since the torrent was added (failed pieces included).
    pub downloaded: u64,
    /// Payload bytes uploaded since the torrent was added.
    pub uploaded: u64,
    /// When the torrent was added (Unix seconds).
    pub added_at: u64,
    /// This torrent's own download limit, bytes/s (0 = none; the session's still applies).
    pub down_limit: u64,
    /// This torrent's own upload limit, bytes/s (0 = none; the session's still applies).
    pub up_limit: u64,
    /// Last tracker warning or other notice for the user to read (not an error).
    pub message: Option<String>,
    /// Whether the torrent lists a tracker this client can announce to (`false`: its peers
    /// come only from DHT, PEX, LSD and the peers the user gave, so quitting or a
    /// re-announce tells no tracker).
    pub has_trackers: bool,
    /// Who paused it when the user did not: `Some` while the engine holds it paused on
    /// its own (the row's state is then [`TorrentState::Paused`] and [`TorrentRow::message`]
    /// says why in words); `None` otherwise, also when the user paused it.
    pub paused_by: Option<PauseCause>,
    /// The folder its files are in (the parent of a multi-file torrent's top folder), as
    /// the engine uses it: the Move dialog starts from it.
    #[serde(with = "super::serde_forms::path")]
    pub save_path: PathBuf,
    /// Place in the queue, 1 = first; 0 while queueing is off (the order is still kept,
    /// and moves still change it).
    pub queue_pos: u32,
    /// Force started: runs whatever the queue says (qBittorrent's "force start").
    pub forced: bool,
    /// Its category (`tv/hd`); empty: none.
    pub category: String,
    /// Its tags, in the order they were given.
    pub tags: Vec<String>,
    /// Automatic management: its data lives where its category says (qBittorrent's
    /// `auto_tmm`).
    pub auto_managed: bool,
    /// The payload bytes of all its files, skipped ones included (padding files left
    /// out); [`TorrentRow::size`] counts the wanted files only. 0 while the size is not
    /// known.
    pub total_size: u64,
    /// What its data is on disk, qBittorrent's `content_path`: the file of a single-file
    /// torrent, the top folder of a multi-file one (`save_path` joined with the name used
    /// on disk); `None` while the metadata is not known (a magnet link fetching it).
    #[serde(with = "super::serde_forms::opt_path")]
    pub content_path: Option<PathBuf>,
    /// v2 info hash (BEP 52, SHA-256, 64 lowercase hex digits) of a hybrid torrent, when
    /// its metainfo has one.
    pub info_hash_v2: Option<String>,
    /// BEP 27 private torrent (no DHT, PEX or LSD).
    pub private: bool,
    /// The URL of the tracker that answered an announce last, else its first tracker;
    /// empty without trackers (qBittorrent's "current tracker"). The whole URL, passkey
    /// included: never log it (mask it with [`crate::net::mask_passkey`]).
    pub tracker: String,
    /// When every wanted piece was verified here (Unix seconds); `None` while incomplete
    /// or when it came complete from disk without being downloaded here.
    pub completed_at: Option<u64>,
    /// When a payload byte last moved either way (Unix seconds); when it was added (or
    /// completed) until one did in this run.
    pub last_activity: u64,
    /// Seconds spent seeding before the current spell (all runs).
    pub seeded_secs: u64,
    /// When the current spell of seeding began (Unix seconds); `None` while not seeding.
    /// The time seeded now is `seeded_secs + (now - seeding_since)`.
    pub seeding_since: Option<u64>,
    /// Its own seeding goals (share limits; -2 fields: the category's or session's).
    pub share_limits: super::ShareLimits,
    /// Sequential download: new pieces in index order (qBittorrent's `seq_dl`).
    pub sequential: bool,
    /// The first and last pieces of each file first (qBittorrent's `f_l_piece_prio`).
    pub first_last: bool,
    /// Pieces taken as had without a hash check (added with
    /// [`AddRequest::skip_check`](super::AddRequest#structfield.skip_check)) and not
    /// verified yet: each is hashed before it is first sent, or by a recheck.
    pub unchecked: u32,
    /// Pieces taken without a check that did not match when they were hashed (this run):
    /// never sent, downloaded again.
    pub unchecked_failed: u32,
}

/// Why the engine paused a torrent by itself (see [`TorrentRow::paused_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PauseCause {
    /// The disk guard: its download volume has less free space than `min_free_space`; the
    /// text says how much is free and where, e.g. `only 1 MiB free on the volume of /d`.
    /// The download resumes by itself when space is back.
    DiskGuard(String),
    /// A seeding goal (share limit) was reached and its action is "stop": the text says
    /// which, e.g. `ratio 2.00 reached` or `seeded 7d 0h reached`. It stays stopped across
    /// resume-all and restarts; resuming it by hand is refused while the goal is still
    /// reached (raise the goal to seed on).
    Goal(String),
}

impl TorrentRow {
    /// Seconds spent seeding, all runs together, at `now` (Unix seconds).
    pub fn seeding_secs(&self, now: u64) -> u64 {
        self.seeded_secs
            + self
                .seeding_since
                .map_or(0, |since| now.saturating_sub(since))
    }

    /// Whether the payload's size is known: `false` for a magnet link whose metadata has
    /// not arrived yet (fetching, or paused or in error before it came), whose size, done
    /// and piece count all read 0. A torrent of 0 bytes is refused when added, so a known
    /// torrent always has pieces.
    pub fn size_known(&self) -> bool {
        self.pieces_total > 0 || self.size > 0
    }

    /// Fraction verified, 0.0–1.0 (1.0 for an empty torrent, 0.0 while the size is not
    /// known: a magnet link fetching its metadata, or paused before it came).
    pub fn progress(&self) -> f64 {
        if !self.size_known() {
            0.0
        } else if self.size == 0 {
            1.0
        } else {
            self.done as f64 / self.size as f64
        }
    }

    /// The share ratio, see [`share_ratio`] (`None` while the size is unknown and nothing
    /// was downloaded).
    pub fn ratio(&self) -> Option<f64> {
        share_ratio(self.uploaded, self.downloaded, self.size)
    }
}

/// Share ratio: `uploaded / downloaded` (bytes), except when `downloaded` is below 1% of
/// the payload's `size` (bytes): then `uploaded / size`. A torrent seeded from data that
/// was already on disk (or fetched only a piece or two after a recheck) thus reads as the
/// copies it gave out, not "-" or a huge number (the rule of libtorrent-based clients such
/// as qBittorrent). `None` when both are 0 (a magnet link before its metadata).
pub fn share_ratio(uploaded: u64, downloaded: u64, size: u64) -> Option<f64> {
    let by = if (downloaded as f64) < size as f64 * 0.01 {
        size
    } else {
        downloaded
    };
    (by > 0).then(|| uploaded as f64 / by as f64)
}

#[cfg(test)]
mod ratio_tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn seeding_existing_data_divides_by_the_size() {
        assert_eq!(share_ratio(40 * MIB, 0, 20 * MIB), Some(2.0));
        assert_eq!(share_ratio(0, 0, 20 * MIB), Some(0.0));
    }

    #[test]
    fn one_piece_fetched_after_a_recheck_still_divides_by_the_size() {
        // 64 KiB of 20 MiB is below 1%: not 640
        assert_eq!(share_ratio(40 * MIB, 64 << 10, 20 * MIB), Some(2.0));
    }

    #[test]
    fn a_real_download_divides_by_what_was_downloaded() {
        assert_eq!(share_ratio(30 * MIB, 20 * MIB, 20 * MIB), Some(1.5));
        // failed pieces count: more downloaded than the size
        assert_eq!(share_ratio(10 * MIB, 40 * MIB, 20 * MIB), Some(0.25));
        // exactly 1% is a download of its own
        assert_eq!(share_ratio(MIB, MIB, 100 * MIB), Some(1.0));
    }

    #[test]
    fn nothing_known_is_no_ratio() {
        assert_eq!(share_ratio(0, 0, 0), None);
        assert_eq!(share_ratio(5, 0, 0), None);
        assert_eq!(share_ratio(5, 10, 0), Some(0.5));
    }

    #[test]
    fn the_row_uses_the_rule() {
        let row = TorrentRow {
            size: 20 * MIB,
            uploaded: 40 * MIB,
            downloaded: 64 << 10,
            ..TorrentRow::default()
        };
        assert_eq!(row.ratio(), Some(2.0));
        assert_eq!(TorrentRow::default().ratio(), None);
    }
}

/// What the detail view of one torrent shows: built only for the focused torrent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TorrentDetail {
    /// The torrent.
    pub id: TorrentId,
    /// v1 info hash, 40 lowercase hex digits.
    pub info_hash: String,
    /// The folder the payload is stored in.
    #[serde(with = "super::serde_forms::path")]
    pub save_path: PathBuf,
    /// What sanitising changed in the torrent's name to give the one used on disk (and
    /// shown as the row's name), for people; `None` when it is used as given.
    pub name_changed: Option<String>,
    /// `comment` from the metainfo.
    pub comment: Option<String>,
    /// `created by` from the metainfo.
    pub created_by: Option<String>,
    /// `creation date` from the metainfo (Unix seconds).
    pub creation_date: Option<i64>,
    /// BEP 27 private torrent (no DHT, no PEX).
    pub private: bool,
    /// Its files are in a top folder named after it (a multi-file torrent); a single-file
    /// torrent's file is the content itself.
    pub multi_file: bool,
    /// Bytes per piece.
    pub piece_length: u32,
    /// Wasted payload bytes (duplicates, pieces that failed their hash check).
    pub wasted: u64,
    /// Connected peers, sorted by address.
    pub peers: Vec<PeerRow>,
    /// Files in payload order (padding files left out).
    pub files: Vec<FileRow>,
    /// Trackers, tier by tier.
    pub trackers: Vec<TrackerRow>,
    /// One entry per piece.
    #[serde(with = "super::serde_forms::piece_runs")]
    pub pieces: Arc<[PieceState]>,
    /// Where the torrent's peers come from: one entry per source that gave any or is in
    /// effect for it (trackers when it has some, the DHT, PEX and LSD when they run for
    /// it, the peers the user gave, incoming connections), in the order of [`PeerSource`].
    pub peer_sources: Vec<SourceCount>,
    /// The peers the user gave (a magnet link's `x.pe`: [`PeerSource::Magnet`], added by
    /// hand: [`PeerSource::Manual`]), kept across restarts and dialled whenever it runs.
    pub given_peers: Vec<(SocketAddr, PeerSource)>,
    /// Its seeding goals: its own limits, those in effect, the time seeded.
    pub goals: super::GoalView,
    /// Its web seeds (BEP 19 `url-list`), in the torrent's order.
    pub web_seeds: Vec<WebSeedRow>,
}

/// One web seed of a torrent (BEP 19): an HTTP(S) server holding its files (Peers and
/// Trackers tabs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSeedRow {
    /// The URL as the torrent gives it, any passkey in its path or query masked.
    pub url: String,
    /// What it does now.
    pub state: WebSeedState,
    /// Payload rate from it, bytes/s.
    pub down_rate: u64,
    /// Payload bytes received from it (this run).
    pub downloaded: u64,
    /// Range requests in flight.
    pub requests: u32,
    /// Failed requests in a row (0 after a success).
    pub failures: u32,
    /// Pieces with its data that failed their hash check (this run); at
    /// [`WebSeedRow::max_hash_fails`] it is dropped.
    pub hash_fails: u32,
    /// Hash failures after which it is dropped for this run.
    pub max_hash_fails: u32,
    /// Bytes counted against it: pieces with its data that failed their hash check.
    pub bad_bytes: u64,
    /// Files the server does not have (answered 404 or 410): their pieces come from peers.
    pub missing_files: u32,
    /// Its last error, for the user to read (kept after a success until the next error).
    pub message: Option<String>,
    /// When it is tried again, while backed off.
    pub retry_at: Option<SystemTime>,
}

/// What a web seed does now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WebSeedState {
    /// Not in use: the torrent does not download (paused, complete, seeding), or web seeds
    /// are off (`[webseeds] enabled = false`).
    #[default]
    Idle,
    /// In use: requests in flight, or waiting for a piece to ask for.
    Active,
    /// Failed and waiting before it is tried again ([`WebSeedRow::retry_at`]).
    BackedOff,
    /// Not used again this run: too many pieces with its data failed their hash check, or
    /// its URL cannot be used (see the message).
    Dropped,
}

impl WebSeedState {
    /// Short label, e.g. `"backed off"`.
    pub fn label(self) -> &'static str {
        match self {
            WebSeedState::Idle => "idle",
            WebSeedState::Active => "active",
            WebSeedState::BackedOff => "backed off",
            WebSeedState::Dropped => "dropped",
        }
    }
}

/// How many peers one source gave a torrent (detail view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceCount {
    /// The source.
    pub source: PeerSource,
    /// Addresses known from it (the peer book: dialled, waiting or backed off).
    pub known: u32,
    /// Peers connected now that came from it.
    pub connected: u32,
}

/// One connected peer (Peers panel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerRow {
    /// Remote address.
    pub addr: SocketAddr,
    /// Client name: BEP 10 `v`, else decoded from the peer id (e.g. `-lt2080-` → libtorrent).
    pub client: String,
    /// Choke/interest state both ways and connection properties.
    pub flags: PeerFlags,
    /// Share of the torrent the peer has, 0.0–1.0.
    pub progress: f32,
    /// Payload rate from the peer, bytes/s.
    pub down_rate: u64,
    /// Payload rate to the peer, bytes/s.
    pub up_rate: u64,
    /// Payload bytes received from it.
    pub downloaded: u64,
    /// Payload bytes sent to it.
    pub uploaded: u64,
    /// Where we learnt of the peer.
    pub source: PeerSource,
}

/// Choke and interest state of a peer connection (BEP 3) and how it is carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerFlags {
    /// We choke it (refuse its requests).
    pub am_choking: bool,
    /// We want its pieces.
    pub am_interested: bool,
    /// It chokes us.
    pub peer_choking: bool,
    /// It wants our pieces.
    pub peer_interested: bool,
    /// It connected to us.
    pub incoming: bool,
    /// The stream is RC4 encrypted (MSE/PE).
    pub encrypted: bool,
    /// Only the handshake was encrypted (MSE/PE with plaintext selected).
    pub obfuscated: bool,
    /// Over uTP (BEP 29) rather than TCP.
    pub utp: bool,
    /// It has our requests and sent nothing for a while.
    pub snubbed: bool,
    /// It holds the optimistic unchoke slot.
    pub optimistic: bool,
}

/// Where a peer address came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PeerSource {
    /// A tracker's announce response.
    #[default]
    Tracker,
    /// It connected to us.
    Incoming,
    /// The DHT (BEP 5).
    Dht,
    /// Peer exchange (BEP 11).
    Pex,
    /// Local Service Discovery (BEP 14): announced on the local network.
    Lsd,
    /// A magnet link's `x.pe` parameter.
    Magnet,
    /// Added by the user.
    Manual,
    /// A web seed of the torrent (BEP 19 `url-list`): an HTTP(S) server, not a peer.
    WebSeed,
}

impl PeerSource {
    /// Short label, e.g. `"tracker"`.
    pub fn label(self) -> &'static str {
        match self {
            PeerSource::Tracker => "tracker",
            PeerSource::Incoming => "incoming",
            PeerSource::Dht => "DHT",
            PeerSource::Pex => "PEX",
            PeerSource::Lsd => "LSD",
            PeerSource::Magnet => "magnet",
            PeerSource::Manual => "manual",
            PeerSource::WebSeed => "web seed",
        }
    }
}

/// One file of the torrent (Files panel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileRow {
    /// Path inside the torrent's folder as used on disk (sanitised and renamed, never the
    /// torrent's raw path), `/`-separated; for a single-file torrent, the file's name.
    pub path: String,
    /// What sanitising or renaming changed in that path (`"'..' dropped"`), for people;
    /// `None` when it is used as the torrent gives it.
    pub changed: Option<String>,
    /// Bytes.
    pub size: u64,
    /// Bytes of this file inside verified pieces.
    pub done: u64,
    /// Download priority.
    pub priority: FilePriority,
    /// The first and last piece holding bytes of it (inclusive; a file of 0 bytes: the
    /// piece where it starts, twice).
    pub piece_range: (u32, u32),
}

/// Download priority of a file.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum FilePriority {
    /// Do not download.
    Skip,
    /// After the others.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Before the others.
    High,
}

/// One tracker of the torrent (Trackers panel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrackerRow {
    /// Announce URL with any passkey in its path or query masked.
    pub url: String,
    /// The announce URL as the torrent has it, passkey included (what a tracker edit
    /// names); never log it.
    pub announce_url: String,
    /// BEP 12 tier, from 0.
    pub tier: u32,
    /// What the last exchange with it gave.
    pub status: TrackerStatus,
    /// Its last error or warning, for the user to read.
    pub message: Option<String>,
    /// When we last announced to it.
    pub last_announce: Option<SystemTime>,
    /// When we announce to it next (while the torrent runs).
    pub next_announce: Option<SystemTime>,
    /// Seeders it reported (`complete`).
    pub seeds: Option<u32>,
    /// Leechers it reported (`incomplete`).
    pub leechers: Option<u32>,
    /// Completed downloads it reported (`downloaded`, BEP 48 scrape).
    pub downloaded: Option<u32>,
    /// Peers it gave in its last answer.
    pub peers: u32,
}

/// State of one tracker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrackerStatus {
    /// Not contacted yet (or another tracker of its tier answered).
    #[default]
    Idle,
    /// An announce is in flight.
    Announcing,
    /// Its last announce succeeded.
    Working,
    /// Its last announce failed (see the message).
    Error,
    /// Its URL scheme is not supported.
    Unsupported,
}

impl TrackerStatus {
    /// Short label, e.g. `"working"`.
    pub fn label(self) -> &'static str {
        match self {
            TrackerStatus::Idle => "idle",
            TrackerStatus::Announcing => "announcing",
            TrackerStatus::Working => "working",
            TrackerStatus::Error => "error",
            TrackerStatus::Unsupported => "unsupported",
        }
    }
}

/// State of one piece (Pieces panel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PieceState {
    /// Not verified, nothing requested.
    #[default]
    Missing,
    /// Blocks requested or received, not yet verified.
    Downloading,
    /// Verified.
    Have,
}
