//! The session state: the list of torrents and each one's resume data, kept across restarts
//! and crashes in the user's data directory (`$XDG_DATA_HOME/ratorrent/`).
//!
//! - `state.redb`: a [redb] database (crash-safe: a commit is durable once it returns, a
//!   crash leaves the last committed state). One record per torrent, keyed by info hash,
//!   each decoded on its own, so one bad record costs that torrent a recheck, never the
//!   list. Records start with a format byte; a newer format is reported, not misread.
//! - `torrents/<info hash>.torrent`: the metainfo, written once when the torrent is added
//!   (temp file, fsync, rename), read again only when the torrent needs its files. They also
//!   let the list be rebuilt when the database itself is unreadable: it is moved aside
//!   (never deleted) and every torrent comes back from its .torrent, rechecked.
//!
//! The database is opened with redb's integrity check (a damaged file is refused rather
//! than trusted) and holds only the small records (about 1 KiB per torrent), so opening it
//! stays fast at 10,000 torrents. redb's file lock refuses a second process on the same
//! state ([`StateError::Locked`]).
//! - `engine.lock`: who runs the engine on this folder (pid, daemon or TUI, control
//!   socket), locked while it runs ([`Owner`]): one engine per state folder, and a second
//!   process is told which one runs.

mod owner;
mod record;

pub use owner::{Claim, OWNER_FILE, Owner, OwnerInfo, OwnerKind};
pub use record::{
    ActivityRecord, FileStat, GoalRecord, KeptPeer, ManageRecord, PeerOrigin, RECORD_FORMAT,
    RecordError, TorrentRecord, next_added_seq,
};

use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use thiserror::Error;

use crate::atomic_write::{self, Durability};
use crate::lock::MutexExt;
use crate::metainfo::{InfoHash, Metainfo};

/// Torrent records by info hash.
const TORRENTS: TableDefinition<&[u8; 20], &[u8]> = TableDefinition::new("torrents");
/// Store-wide values: "format", and the session rate limits set live (`limit.*`, see
/// [`SessionLimits`]).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The store format this build writes.
pub const FORMAT: u64 = 1;

/// Why the state store cannot be used.
#[derive(Debug, Error)]
pub enum StateError {
    /// Another ratorrent process has the store open.
    #[error(
        "another ratorrent is already running with the state in {dir} (quit it first, or give this one another data directory with XDG_DATA_HOME)"
    )]
    Locked {
        /// The state directory.
        dir: PathBuf,
    },
    /// Files of the state directory could not be read or written.
    #[error("session state in {dir}: {error}")]
    Io {
        /// The state directory.
        dir: PathBuf,
        /// What failed.
        error: String,
    },
}

/// One torrent as found in the store.
#[derive(Debug)]
pub enum Stored {
    /// A record that decoded.
    Record(InfoHash, Box<TorrentRecord>),
    /// A torrent whose record is missing, damaged or of a newer format: it comes back from
    /// its .torrent and is rechecked.
    NeedsRecheck {
        /// The torrent.
        info_hash: InfoHash,
        /// What was wrong, for the log.
        why: String,
    },
}

/// The session-wide rate limits last set live (TUI `L`), in bytes/s (0 = unlimited), with
/// the config file's limits at that time: at the next start the live values win only while
/// the config still says what it said then (an edited config file wins over an old live
/// change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionLimits {
    /// Download limit set live, bytes/s.
    pub download: u64,
    /// Upload limit set live, bytes/s.
    pub upload: u64,
    /// The config's `download_rate_limit` when it was set, bytes/s.
    pub config_download: u64,
    /// The config's `upload_rate_limit` when it was set, bytes/s.
    pub config_upload: u64,
    /// Alternative speed limits were on (key `alt_speed`: 1 on, 0 off; a store written
    /// before it had none and loads as off). `download`/`upload` stay the normal pair.
    pub alt_speed: bool,
}

impl SessionLimits {
    /// The limits to start with (download, upload, bytes/s) under a config that says
    /// `config_download` / `config_upload`.
    pub fn effective(
        saved: Option<SessionLimits>,
        config_download: u64,
        config_upload: u64,
    ) -> (u64, u64) {
        match saved {
            Some(s) if s.config_download == config_download && s.config_upload == config_upload => {
                (s.download, s.upload)
            }
            _ => (config_download, config_upload),
        }
    }
}

/// The switch of alternative speed limits in the `meta` table (1 on, 0 off, absent off).
const ALT_SPEED_KEY: &str = "alt_speed";

const LIMIT_KEYS: [&str; 4] = [
    "limit.down",
    "limit.up",
    "limit.config_down",
    "limit.config_up",
];

/// What opening the store found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every torrent, in the order they were added.
    pub torrents: Vec<Stored>,
    /// The session rate limits last set live, if any were.
    pub session_limits: Option<SessionLimits>,
    /// Alternative speed limits were on at the last checkpoint (false when the store
    /// never said).
    pub alt_speed: bool,
    /// Problems worth telling the user (a damaged database moved aside, ...).
    pub warnings: Vec<String>,
}

/// An open state store.
pub struct StateStore {
    dir: PathBuf,
    db: Database,
    /// .torrent copies written since the last [`StateStore::write`], synced before it.
    unsynced: std::sync::Mutex<Vec<PathBuf>>,
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateStore({})", self.dir.display())
    }
}

/// A change to write in one transaction.
#[derive(Debug)]
pub enum Update {
    /// Insert or replace a torrent's record.
    Put(InfoHash, Box<TorrentRecord>),
    /// Forget a torrent (and its .torrent copy).
    Delete(InfoHash),
    /// The session rate limits set live.
    SessionLimits(SessionLimits),
}

fn io(dir: &Path, e: impl std::fmt::Display) -> StateError {
    StateError::Io {
        dir: dir.to_path_buf(),
        error: e.to_string(),
    }
}

impl StateStore {
    /// The default state directory: `$XDG_DATA_HOME/ratorrent` (usually
    /// `~/.local/share/ratorrent`).
    pub fn default_dir() -> PathBuf {
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("ratorrent")
    }

    /// Open (or create) the store in `dir` and read every torrent. Never panics on a damaged
    /// file: an unreadable database is moved aside (`state.redb.damaged-<unix time>`) and
    /// the list is rebuilt from the kept .torrent files, each to be rechecked.
    ///
    /// # Errors
    /// [`StateError::Locked`] when another process has it open; [`StateError::Io`] when the
    /// directory cannot be created or written.
    pub fn open(dir: &Path) -> Result<(StateStore, Loaded), StateError> {
        std::fs::create_dir_all(dir.join("torrents")).map_err(|e| io(dir, e))?;
        let path = dir.join("state.redb");
        let mut loaded = Loaded::default();
        let db = match open_db(&path) {
            Ok(db) => db,
            Err(OpenError::Locked) => {
                return Err(StateError::Locked {
                    dir: dir.to_path_buf(),
                });
            }
            Err(OpenError::Damaged(why)) => {
                let aside = dir.join(format!(
                    "state.redb.damaged-{}",
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs())
                ));
                std::fs::rename(&path, &aside).map_err(|e| io(dir, e))?;
                loaded.warnings.push(format!(
                    "the session state could not be read ({why}); it was moved to {} and the torrents are rebuilt from {} (each is rechecked)",
                    aside.display(),
                    dir.join("torrents").display()
                ));
                match open_db(&path) {
                    Ok(db) => db,
                    Err(OpenError::Locked) => {
                        return Err(StateError::Locked {
                            dir: dir.to_path_buf(),
                        });
                    }
                    Err(OpenError::Damaged(why)) => return Err(io(dir, why)),
                }
            }
        };
        let store = StateStore {
            dir: dir.to_path_buf(),
            db,
            unsynced: std::sync::Mutex::new(Vec::new()),
        };
        store.read_all(&mut loaded)?;
        Ok((store, loaded))
    }

    fn read_all(&self, loaded: &mut Loaded) -> Result<(), StateError> {
        let dir = &self.dir;
        let mut seen = std::collections::HashSet::new();
        let mut records: Vec<((u64, u64), Stored)> = Vec::new();
        {
            let tx = self.db.begin_read().map_err(|e| io(dir, e))?;
            let newer = match tx.open_table(META) {
                Ok(t) => t
                    .get("format")
                    .ok()
                    .flatten()
                    .map(|v| v.value())
                    .filter(|&v| v > FORMAT),
                Err(_) => None,
            };
            if let Ok(t) = tx.open_table(META) {
                let get = |k: &str| t.get(k).ok().flatten().map(|v| v.value());
                if let [Some(d), Some(u), Some(cd), Some(cu)] = LIMIT_KEYS.map(get) {
                    loaded.session_limits = Some(SessionLimits {
                        download: d,
                        upload: u,
                        config_download: cd,
                        config_upload: cu,
                        alt_speed: get(ALT_SPEED_KEY) == Some(1),
                    });
                }
                loaded.alt_speed = get(ALT_SPEED_KEY) == Some(1);
            }
            if let Some(v) = newer {
                loaded.warnings.push(format!(
                    "the session state was written by a newer ratorrent (format {v}, this one reads {FORMAT}); torrents whose records it cannot read are rechecked"
                ));
            }
            match tx.open_table(TORRENTS) {
                Ok(table) => {
                    let iter = table.iter().map_err(|e| io(dir, e))?;
                    for item in iter {
                        let Ok((k, v)) = item else {
                            loaded
                                .warnings
                                .push("a damaged entry in the session state was skipped".into());
                            continue;
                        };
                        let ih = InfoHash(*k.value());
                        seen.insert(ih);
                        match TorrentRecord::decode(v.value()) {
                            Ok(r) => records
                                .push(((r.added_at, r.added_seq), Stored::Record(ih, Box::new(r)))),
                            Err(e) => records.push((
                                (u64::MAX, 0),
                                Stored::NeedsRecheck {
                                    info_hash: ih,
                                    why: e.to_string(),
                                },
                            )),
                        }
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(io(dir, e)),
            }
        }
        records.sort_by_key(|(added, _)| *added);
        loaded.torrents.extend(records.into_iter().map(|(_, s)| s));
        // .torrent files without a record: added just before a crash, or a lost database
        if let Ok(rd) = std::fs::read_dir(dir.join("torrents")) {
            let mut orphans: Vec<InfoHash> = rd
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".torrent").and_then(InfoHash::from_hex)
                })
                .filter(|ih| !seen.contains(ih))
                .collect();
            orphans.sort();
            for ih in orphans {
                loaded.torrents.push(Stored::NeedsRecheck {
                    info_hash: ih,
                    why: "no resume data".into(),
                });
            }
        }
        Ok(())
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the .torrent of `ih` is kept.
    pub fn torrent_path(&self, ih: &InfoHash) -> PathBuf {
        self.dir
            .join("torrents")
            .join(format!("{}.torrent", ih.to_hex()))
    }

    /// Keep a copy of a torrent's metainfo (the bytes of the .torrent file): written to a
    /// temp file and renamed into place; flushed to the device by the next
    /// [`StateStore::write`] before the torrent's record is committed (so adding thousands
    /// of torrents costs one flush, not one per torrent). Called once, when it is added.
    ///
    /// # Errors
    /// The copy could not be written (disk full, permissions).
    pub fn put_metainfo(&self, ih: &InfoHash, bytes: &[u8]) -> std::io::Result<()> {
        let dst = self.torrent_path(ih);
        atomic_write::write(&dst, bytes, Durability::Deferred)?;
        self.unsynced.locked().push(dst);
        Ok(())
    }

    /// Flush the .torrent copies written since the last call (and their folder).
    fn sync_torrents(&self) -> std::io::Result<()> {
        let files = std::mem::take(&mut *self.unsynced.locked());
        if files.is_empty() {
            return Ok(());
        }
        let r = self.sync_files(&files);
        if r.is_err() {
            // try again with the next write
            self.unsynced.locked().extend(files);
        }
        r
    }

    fn sync_files(&self, files: &[PathBuf]) -> std::io::Result<()> {
        let dir = std::fs::File::open(self.dir.join("torrents"))?;
        if files.len() > 16 {
            // one flush of the file system instead of one per file
            use std::os::fd::AsRawFd;
            // SAFETY: syncfs(2) on an open descriptor
            if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            return Ok(());
        }
        for f in files {
            if let Ok(h) = std::fs::File::open(f) {
                h.sync_all()?;
            }
        }
        dir.sync_all()
    }

    /// The file list of a kept torrent's metainfo, without hashing it or keeping its piece
    /// hashes (for comparing its files with its resume data; the full
    /// [`StateStore::load_metainfo`], which checks the info hash, follows when the torrent
    /// needs its pieces).
    ///
    /// # Errors
    /// The copy is missing or not a valid torrent (the text says which).
    pub fn load_files(&self, ih: &InfoHash) -> Result<Vec<crate::metainfo::FileInfo>, String> {
        Metainfo::load_files(&self.torrent_path(ih))
    }

    /// Load a kept torrent's metainfo.
    ///
    /// # Errors
    /// The copy is missing or not a valid torrent (the text says which).
    pub fn load_metainfo(&self, ih: &InfoHash) -> Result<Metainfo, String> {
        let m = Metainfo::load(&self.torrent_path(ih))?;
        if m.info_hash != *ih {
            return Err(format!(
                "{}: holds another torrent ({})",
                self.torrent_path(ih).display(),
                m.info_hash
            ));
        }
        Ok(m)
    }

    /// Write `updates` in one transaction (durable when this returns). Deletes apply before
    /// puts, so a torrent removed and added again in one batch keeps its record; deleted
    /// torrents also lose their .torrent copy, unless the batch puts them back.
    ///
    /// # Errors
    /// The database could not be written (disk full, permissions).
    pub fn write(&self, updates: Vec<Update>) -> Result<(), StateError> {
        if updates.is_empty() {
            return Ok(());
        }
        let dir = &self.dir;
        // the .torrent copies first: a committed record always finds its metainfo
        self.sync_torrents().map_err(|e| io(dir, e))?;
        let mut deleted = Vec::new();
        let tx = self.db.begin_write().map_err(|e| io(dir, e))?;
        {
            let mut meta = tx.open_table(META).map_err(|e| io(dir, e))?;
            meta.insert("format", FORMAT).map_err(|e| io(dir, e))?;
            for u in &updates {
                if let Update::SessionLimits(l) = u {
                    let values = [l.download, l.upload, l.config_download, l.config_upload];
                    for (k, v) in LIMIT_KEYS.iter().zip(values) {
                        meta.insert(*k, v).map_err(|e| io(dir, e))?;
                    }
                    meta.insert(ALT_SPEED_KEY, u64::from(l.alt_speed))
                        .map_err(|e| io(dir, e))?;
                }
            }
            let mut t = tx.open_table(TORRENTS).map_err(|e| io(dir, e))?;
            let (puts, deletes): (Vec<_>, Vec<_>) = updates
                .into_iter()
                .partition(|u| matches!(u, Update::Put(..)));
            for u in deletes {
                if let Update::Delete(ih) = u {
                    t.remove(&ih.0).map_err(|e| io(dir, e))?;
                    deleted.push(ih);
                }
            }
            for u in puts {
                if let Update::Put(ih, r) = u {
                    t.insert(&ih.0, r.encode().as_slice())
                        .map_err(|e| io(dir, e))?;
                    deleted.retain(|d| *d != ih);
                }
            }
        }
        tx.commit().map_err(|e| io(dir, e))?;
        for ih in deleted {
            let _ = std::fs::remove_file(self.torrent_path(&ih));
        }
        Ok(())
    }
}

enum OpenError {
    Locked,
    Damaged(String),
}

fn open_db(path: &Path) -> Result<Database, OpenError> {
    let path = path.to_path_buf();
    // redb checks every page on open (a damaged file is refused, not trusted); a panic
    // inside it must not take the client down either
    let r = std::panic::catch_unwind(move || {
        Database::builder()
            .set_cache_size(4 << 20)
            .set_check_integrity_on_open(true)
            .create(&path)
    });
    match r {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => Err(OpenError::Locked),
        Ok(Err(e)) => Err(OpenError::Damaged(e.to_string())),
        Err(_) => Err(OpenError::Damaged(
            "the database library failed reading it".into(),
        )),
    }
}

#[cfg(test)]
mod tests;
