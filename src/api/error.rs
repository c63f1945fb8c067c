//! Typed errors of the engine/UI contract: why an add was refused, why a torrent stopped.

use serde::{Deserialize, Serialize};

use std::fmt;

use super::TorrentId;

/// Why [`Command::Add`](super::Command::Add) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum AddError {
    /// The torrent is in the session already; `id` is the existing one (select it).
    #[error("{name} is already added (info hash {info_hash}){}", merged.as_ref().map(|m| format!("; {m}")).unwrap_or_default())]
    AlreadyAdded {
        /// The torrent already in the session.
        id: TorrentId,
        /// Its name.
        name: String,
        /// Its info hash, 40 hex digits.
        info_hash: String,
        /// A magnet link added again: what its trackers and `x.pe` peers brought in, e.g.
        /// `"added 1 tracker and 2 peers from the link"` (they are merged into the torrent);
        /// `None` for a .torrent file.
        merged: Option<String>,
    },
    /// The file could not be read or is not a valid torrent; the text says why (path first).
    #[error("{0}")]
    Invalid(String),
    /// Its files cannot be laid out safely under the download folder.
    #[error("{0}")]
    Storage(String),
    /// The engine is shutting down.
    #[error("the engine is shutting down")]
    ShuttingDown,
}

/// What kind of fault stopped a torrent; each kind says what the user can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TorrentErrorKind {
    /// The download volume is full (ENOSPC, quota).
    NoSpace,
    /// The OS refused access to a file or folder (EACCES, EPERM).
    PermissionDenied,
    /// The file system or file is read-only (EROFS).
    ReadOnly,
    /// A file or the download folder disappeared, was replaced or truncated.
    FilesMissing,
    /// The save folder (or a folder in it) could not be created: a folder above it is not
    /// there and cannot be made (e.g. a save folder under `/proc`). Nothing to put back:
    /// the folder must change.
    FolderNotCreated,
    /// Any other I/O error.
    Storage,
    /// The metadata a magnet link led to hashes right but is not a usable torrent.
    BadMetadata,
    /// Internal failure (a bug): the message has the details.
    Internal,
}

impl TorrentErrorKind {
    /// What to do about it, for the UI: one short sentence.
    pub fn hint(self) -> &'static str {
        match self {
            TorrentErrorKind::NoSpace => {
                "free some space on the download volume, then resume the torrent"
            }
            TorrentErrorKind::PermissionDenied => {
                "fix the owner or mode of the download folder, then resume the torrent"
            }
            TorrentErrorKind::ReadOnly => {
                "make the download folder writable (or move the torrent), then resume it"
            }
            TorrentErrorKind::FilesMissing => {
                "put the files back (or move the torrent to where they are, without moving the files) and resume, or resume to download them again: the data is rechecked"
            }
            TorrentErrorKind::FolderNotCreated => {
                "choose another folder with m (move), or create it and resume the torrent"
            }
            TorrentErrorKind::Storage => "check the disk and the log, then resume the torrent",
            TorrentErrorKind::BadMetadata => {
                "the torrent behind this magnet link cannot be used; remove it"
            }
            TorrentErrorKind::Internal => "please report this; resuming may work",
        }
    }

    /// Whether resuming must re-hash the data first (it may have changed under us).
    pub fn needs_recheck(self) -> bool {
        matches!(self, TorrentErrorKind::FilesMissing)
    }
}

/// Why a torrent is in the Error state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorrentError {
    /// The kind of fault.
    pub kind: TorrentErrorKind,
    /// What happened, naming the file, e.g. `no space left writing /data/x.iso`.
    pub message: String,
}

impl fmt::Display for TorrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TorrentError {}
