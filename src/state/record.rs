//! One torrent's record in the state store: what it takes to list it at start-up without
//! reading its .torrent, and its resume data.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::piece::{Bitfield, FileLayout, Geometry};

/// The record format this build writes (first byte of every record).
pub const RECORD_FORMAT: u8 = 9;

/// Why a record could not be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RecordError {
    /// Empty or cut short.
    #[error("resume record is empty")]
    Empty,
    /// Written by a newer ratorrent.
    #[error("resume record is of a newer format ({0}; this ratorrent reads {RECORD_FORMAT})")]
    Newer(u8),
    /// Not decodable.
    #[error("resume record is damaged ({0})")]
    Damaged(String),
}

/// A file as it was on disk at the last checkpoint: size (bytes) and modification time
/// (Unix seconds and nanoseconds); `None` when it did not exist.
pub type FileStat = Option<(u64, i64, u32)>;

/// A peer address the user gave for a torrent: kept across restarts and dialled whenever
/// the torrent runs, whatever trackers, DHT or PEX say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeptPeer {
    /// The peer's address (IPv4 or IPv6, port).
    pub addr: SocketAddr,
    /// Where the user gave it.
    pub origin: PeerOrigin,
}

/// Where a [`KeptPeer`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PeerOrigin {
    /// A magnet link's `x.pe` parameter (BEP 9).
    Magnet,
    /// Added by hand ("add peer").
    Manual,
}

/// Everything kept of one torrent between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorrentRecord {
    /// Display name.
    pub name: String,
    /// Folder the payload is stored in.
    pub save_dir: PathBuf,
    /// When it was added (Unix seconds); also the list order.
    pub added_at: u64,
    /// When it completed (Unix seconds).
    pub completed_at: Option<u64>,
    /// The user paused it.
    pub paused: bool,
    /// Seed once complete.
    pub seed: bool,
    /// Stopped by an error: its kind (as `TorrentErrorKind` discriminant) and message.
    pub error: Option<(u8, String)>,
    /// Payload bytes, padding included.
    pub total_length: u64,
    /// Bytes per piece.
    pub piece_length: u32,
    /// Number of pieces.
    pub piece_count: u32,
    /// Payload bytes without padding.
    pub payload_size: u64,
    /// Tiers of announce URLs.
    pub trackers: Vec<Vec<String>>,
    /// BEP 27 private.
    pub private: bool,
    /// Multi-file form.
    pub multi_file: bool,
    /// Files in payload order: (length, padding).
    pub files: Vec<(u64, bool)>,
    /// Verified pieces (BEP 3 bitfield bytes) whose data had reached the disk (fsynced)
    /// when this record was written.
    pub have: Vec<u8>,
    /// Each file as it was at that time (padding files: `None`).
    pub file_stats: Vec<FileStat>,
    /// Priority per file (0 skip, 1 low, 2 normal, 3 high); empty = all normal.
    pub file_prio: Vec<u8>,
    /// All-time payload bytes downloaded.
    pub downloaded: u64,
    /// All-time payload bytes uploaded.
    pub uploaded: u64,
    /// The torrent's own download limit, bytes/s (0 = none).
    pub down_limit: u64,
    /// The torrent's own upload limit, bytes/s (0 = none).
    pub up_limit: u64,
    /// A magnet link whose metadata has not arrived yet (canonical form, BEP 9): the
    /// geometry fields are then all 0 and there are no files. Stored after the format-1
    /// fields (format 2).
    #[serde(skip)]
    pub magnet: Option<String>,
    /// Peers the user gave (magnet `x.pe`, added by hand), in the order given. Stored after
    /// the magnet field (format 3; older records have none).
    #[serde(skip)]
    pub peers: Vec<KeptPeer>,
    /// Orders torrents added in the same second ([`TorrentRecord::added_at`]): larger is
    /// later (format 3; older records have 0). See [`next_added_seq`].
    #[serde(skip)]
    pub added_seq: u64,
    /// Seeding goals: its own share limits, the time seeded, a goal's stop (format 4;
    /// older records have the defaults: the session's limits, nothing seeded, not stopped).
    #[serde(skip)]
    pub goals: GoalRecord,
    /// How the torrent is managed: queue place, category, tags, piece order, pieces taken
    /// without a check (format 5; older records have [`ManageRecord::default`]).
    #[serde(skip)]
    pub manage: ManageRecord,
    /// What the torrent was doing when the record was written: its inactive seeding time
    /// (format 6; older records have none counted).
    #[serde(skip)]
    pub activity: ActivityRecord,
    /// The name the user gave it (qBittorrent's `torrents/rename`), shown instead of
    /// [`TorrentRecord::name`]; `None`: its own (format 7; older records have none).
    #[serde(skip)]
    pub display_name: Option<String>,
    /// Web seed URLs (BEP 19 `url-list`, a magnet's `ws`; format 8); `None` when not known:
    /// older records (the .torrent kept in the state store says, when it is next loaded).
    #[serde(skip)]
    pub web_seeds: Option<Vec<String>>,
    /// The v2 info hash (BEP 52, SHA-256) of a v2-only or hybrid torrent, so that a
    /// restored hybrid is known by both hashes before its .torrent is read (format 9; older
    /// records have none: the hash is learnt when the .torrent is next read).
    #[serde(skip)]
    pub info_hash_v2: Option<[u8; 32]>,
}

/// What a record keeps of a torrent's activity (format 6).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ActivityRecord {
    /// Seconds seeded since its last payload upload, all spells of seeding together (the
    /// inactive seeding time that `[seeding] inactive_seeding_time_limit` measures).
    pub inactive_secs: u64,
}

/// What a record keeps of how a torrent is managed (format 5).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ManageRecord {
    /// Place in the queue: smaller runs first. `None` for records older than format 5 (the
    /// loader places those after every placed torrent, in their added order).
    pub queue_pos: Option<u64>,
    /// Force started: runs whatever the queue says (qBittorrent's "force start").
    pub forced: bool,
    /// Category name (subcategories by `/`, as `tv/hd`); empty = none.
    pub category: String,
    /// Free labels, in the order given; no duplicates.
    pub tags: Vec<String>,
    /// Automatic management (qBittorrent's "automatic torrent management"): the save path
    /// follows the category.
    pub auto_managed: bool,
    /// Where the data moves once complete (a category's separate download path in use);
    /// `None` = it stays where it is.
    pub final_dir: Option<PathBuf>,
    /// Download pieces in order.
    pub sequential: bool,
    /// First and last piece of each file first (previews).
    pub first_last: bool,
    /// Pieces taken as complete without a hash check ("skip hash check", for cross-seeding),
    /// BEP 3 bitfield bytes, verified when first read; empty = none.
    pub unverified: Vec<u8>,
}

/// What a record keeps of a torrent's seeding goals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalRecord {
    /// The ratio limit as `f64::to_bits` (-2.0 the session's, -1.0 none, else the limit):
    /// bits, so that the record stays `Eq`.
    pub ratio_bits: u64,
    /// Seeding time limit, minutes (-2 the session's, -1 none).
    pub seeding_minutes: i64,
    /// Inactive seeding time limit, minutes (-2 the session's, -1 none).
    pub inactive_minutes: i64,
    /// Seconds spent seeding, all runs together.
    pub seeded_secs: u64,
    /// Stopped by a goal: what was reached (`ratio 2.00 reached`).
    pub stopped: Option<String>,
}

impl Default for GoalRecord {
    /// The session's limits, nothing seeded, not stopped.
    fn default() -> Self {
        GoalRecord {
            ratio_bits: (-2.0f64).to_bits(),
            seeding_minutes: -2,
            inactive_minutes: -2,
            seeded_secs: 0,
            stopped: None,
        }
    }
}

impl GoalRecord {
    /// The ratio limit (a stored NaN reads as -2.0, the session's).
    pub fn ratio(&self) -> f64 {
        let r = f64::from_bits(self.ratio_bits);
        if r.is_nan() { -2.0 } else { r }
    }
}

/// A number larger than every one this process returned before (the wall clock in ns
/// since 1970 when that is larger), for [`TorrentRecord::added_seq`]: torrents added in
/// the same second keep the order they were added in across restarts.
pub fn next_added_seq() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let prev = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(0);
    now.max(prev + 1)
}

impl TorrentRecord {
    /// The stored form: the format byte, then the record (postcard).
    pub fn encode(&self) -> Vec<u8> {
        let out = vec![RECORD_FORMAT];
        // serialising plain data into a Vec cannot fail; keep the format byte at least
        let out = postcard::to_extend(self, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&self.magnet, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&(&self.peers, self.added_seq), out)
            .unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&self.goals, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&self.manage, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&self.activity, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out =
            postcard::to_extend(&self.display_name, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        let out = postcard::to_extend(&self.web_seeds, out).unwrap_or_else(|_| vec![RECORD_FORMAT]);
        postcard::to_extend(&self.info_hash_v2, out).unwrap_or_else(|_| vec![RECORD_FORMAT])
    }

    /// Decode a stored record.
    ///
    /// # Errors
    /// [`RecordError`] for an empty, newer-format or damaged record; never panics.
    pub fn decode(bytes: &[u8]) -> Result<TorrentRecord, RecordError> {
        let (&format, rest) = bytes.split_first().ok_or(RecordError::Empty)?;
        if format > RECORD_FORMAT {
            return Err(RecordError::Newer(format));
        }
        let damaged = |e: postcard::Error| RecordError::Damaged(e.to_string());
        let (mut r, rest): (TorrentRecord, &[u8]) =
            postcard::take_from_bytes(rest).map_err(damaged)?;
        if format == 2 {
            r.magnet = postcard::from_bytes(rest).map_err(damaged)?;
        } else if format >= 3 {
            let (magnet, rest) = postcard::take_from_bytes(rest).map_err(damaged)?;
            r.magnet = magnet;
            let ((peers, added_seq), rest) = if format == 3 {
                (postcard::from_bytes(rest).map_err(damaged)?, &[][..])
            } else {
                postcard::take_from_bytes(rest).map_err(damaged)?
            };
            (r.peers, r.added_seq) = (peers, added_seq);
            if format == 4 {
                r.goals = postcard::from_bytes(rest).map_err(damaged)?;
            } else if format >= 5 {
                let (goals, rest) = postcard::take_from_bytes(rest).map_err(damaged)?;
                r.goals = goals;
                if format == 5 {
                    r.manage = postcard::from_bytes(rest).map_err(damaged)?;
                } else {
                    let (manage, rest) = postcard::take_from_bytes(rest).map_err(damaged)?;
                    r.manage = manage;
                    if format == 6 {
                        r.activity = postcard::from_bytes(rest).map_err(damaged)?;
                    } else {
                        let (activity, rest) = postcard::take_from_bytes(rest).map_err(damaged)?;
                        r.activity = activity;
                        if format == 7 {
                            r.display_name = postcard::from_bytes(rest).map_err(damaged)?;
                        } else {
                            let (name, rest) = postcard::take_from_bytes(rest).map_err(damaged)?;
                            r.display_name = name;
                            if format == 8 {
                                r.web_seeds = postcard::from_bytes(rest).map_err(damaged)?;
                            } else {
                                let (web_seeds, rest) =
                                    postcard::take_from_bytes(rest).map_err(damaged)?;
                                r.web_seeds = web_seeds;
                                r.info_hash_v2 = postcard::from_bytes(rest).map_err(damaged)?;
                            }
                        }
                    }
                }
            }
        }
        r.validate()?;
        Ok(r)
    }

    /// The payload's pieces as recorded; `None` when the fields do not make a geometry
    /// (a record that [`TorrentRecord::decode`] accepted always does, magnets aside: theirs
    /// is the empty one).
    pub fn geometry(&self) -> Option<Geometry> {
        Geometry::new(self.total_length, self.piece_length, self.piece_count).ok()
    }

    /// Where each recorded file lies in the payload (files end to end from byte 0);
    /// `None` when their lengths add up past 2^64 bytes.
    pub fn layout(&self) -> Option<FileLayout> {
        FileLayout::from_lengths(self.files.iter().copied()).ok()
    }

    /// Shapes that must agree (a record that decodes but lies is damaged too).
    fn validate(&self) -> Result<(), RecordError> {
        let bad = |m: &str| Err(RecordError::Damaged(m.to_string()));
        if self.magnet.is_some() {
            // no metadata yet: no geometry nor files
            if self.piece_count != 0 || self.total_length != 0 || !self.files.is_empty() {
                return bad("a magnet record with pieces");
            }
            return Ok(());
        }
        if self.piece_length == 0 && self.piece_count > 0 {
            return bad("piece length 0");
        }
        if self.geometry().is_none() || self.have.len() != Bitfield::byte_len(self.piece_count) {
            return bad("piece count and bitfield disagree");
        }
        if self.layout().map(|l| l.total_length()) != Some(self.total_length) {
            return bad("file lengths do not add up");
        }
        if !self.file_stats.is_empty() && self.file_stats.len() != self.files.len() {
            return bad("file stats do not match the files");
        }
        if !self.file_prio.is_empty() && self.file_prio.len() != self.files.len() {
            return bad("file priorities do not match the files");
        }
        if !self.manage.unverified.is_empty() && self.manage.unverified.len() != self.have.len() {
            return bad("unchecked pieces and bitfield disagree");
        }
        Ok(())
    }
}
