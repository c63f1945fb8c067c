//! Commands: what a front end asks of the engine.

use std::path::PathBuf;

use tokio::sync::oneshot;

use super::TorrentId;

/// Sending end of the command channel.
pub type CommandSender = tokio::sync::mpsc::Sender<Command>;

/// Add a torrent from a .torrent file.
#[derive(Debug)]
pub struct AddRequest {
    /// Path of the .torrent file to read.
    pub torrent: PathBuf,
    /// Where to store the payload; the session default when `None`.
    pub download_dir: Option<PathBuf>,
    /// Add in the paused state.
    pub paused: bool,
    /// Keep seeding once complete (`false`: stop at completion, state `Completed`).
    pub seed: bool,
}

/// A request to the engine. Commands that can fail carry a oneshot for the answer,
/// so a front end can show the error (e.g. "not a valid torrent: ...").
#[derive(Debug)]
pub enum Command {
    /// Add a torrent; replies with its id or a readable error.
    Add(
        AddRequest,
        Option<oneshot::Sender<Result<TorrentId, String>>>,
    ),
    /// Stop a torrent's peers and announce `stopped`; data stays.
    Pause(TorrentId),
    /// Start a paused torrent again.
    Resume(TorrentId),
    /// Pause if running, resume if paused.
    TogglePause(TorrentId),
    /// Forget a torrent (data stays on disk).
    Remove(TorrentId),
    /// Stop every torrent, send `stopped` to trackers, then reply and end the engine.
    Shutdown(oneshot::Sender<()>),
}
