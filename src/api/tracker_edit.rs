//! Editing the tracker URLs of torrents: the request ([`TrackerEdit`]), its answer
//! ([`TrackerEditOutcome`]) and why one is refused ([`TrackerEditError`]). The same
//! mechanism serves a find/replace across many torrents (a changed passkey or host) and the
//! per-torrent edits of qBittorrent's Web API (`torrents/addTrackers`, `removeTrackers`,
//! `editTracker`).

use serde::{Deserialize, Serialize};

/// What to change in the tracker lists (BEP 12 tiers) of the torrents named with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrackerEdit {
    /// In every tracker URL that contains `find`, replace each occurrence by `replace`
    /// (plain text, case-sensitive). A URL that becomes one the torrent already has is
    /// dropped (the tier keeps the other).
    Replace {
        /// Text to look for; not empty.
        find: String,
        /// Its replacement (may be empty).
        replace: String,
    },
    /// Add these URLs, each as a tier of its own (every tier is announced to); URLs the
    /// torrent has already are skipped.
    Add(Vec<String>),
    /// Remove these URLs (exact match); URLs the torrent does not have are skipped.
    Remove(Vec<String>),
    /// Change one tracker's URL in place (same tier): `old` must be one of the torrent's
    /// and `new` must not (qBittorrent's `editTracker`).
    Edit {
        /// The URL as the torrent has it.
        old: String,
        /// Its new URL.
        new: String,
    },
}

/// What an edit changed (or, for a dry run, would change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrackerEditOutcome {
    /// Tracker URLs changed, added or removed, all torrents together.
    pub urls: usize,
    /// Torrents whose tracker list changed.
    pub torrents: usize,
}

impl std::fmt::Display for TrackerEditOutcome {
    /// `3 tracker URLs in 2 torrents`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} tracker URL{} in {} torrent{}",
            self.urls,
            s(self.urls),
            self.torrents,
            s(self.torrents)
        )
    }
}

/// Why a tracker edit was refused; nothing was changed. URLs in the texts are masked
/// ([`crate::net::mask_passkey`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum TrackerEditError {
    /// A URL the edit would give a torrent is not a usable tracker URL (`http`, `https`
    /// or `udp` with a host): the masked URL and why.
    #[error("not a usable tracker URL: {0}: {1}")]
    InvalidUrl(String, String),
    /// [`TrackerEdit::Replace`] with nothing to find.
    #[error("nothing to find: the text to replace is empty")]
    EmptyFind,
    /// [`TrackerEdit::Edit`] or [`TrackerEdit::Remove`]: none of the torrents has the URL
    /// (masked).
    #[error("no such tracker: {0}")]
    NotFound(String),
    /// [`TrackerEdit::Edit`]: the torrent has the new URL already (masked).
    #[error("the torrent has this tracker already: {0}")]
    Exists(String),
    /// None of the torrents named is there any more (or none was named).
    #[error("no such torrent")]
    NoTorrent,
}

/// The answer to [`Command::EditTrackers`](super::Command::EditTrackers).
pub type TrackerEditReply =
    tokio::sync::oneshot::Sender<Result<TrackerEditOutcome, TrackerEditError>>;
