//! The engine/UI contract: plain data that both sides import.
//!
//! The engine publishes [`Snapshot`]s over a `tokio::sync::watch` channel (latest value
//! only, so a slow terminal never queues stale frames) and [`EngineEvent`]s over a
//! `tokio::sync::broadcast` channel; the UI (or the headless `download` front end) sends
//! [`Command`]s back over a bounded `tokio::sync::mpsc`. Front ends do not touch those
//! channels: they hold a [`Client`], the one handle over them.

use serde::{Deserialize, Serialize};

mod categories;
mod client;
mod command;
mod error;
mod event;
mod goals;
mod serde_forms;
mod settings;
mod snapshot;
mod tracker_edit;

pub use categories::{
    Category, CategoryInfo, MAX_LABEL_LEN, add_tags, check_category_name, check_tag, in_category,
    parent_category, remove_tags,
};
pub use client::{Client, ClientError, Reply};
pub use command::{
    AddRequest, AddSource, Command, CommandSender, CreateSource, QueueMove, TorrentBytes,
};
pub use error::{AddError, TorrentError, TorrentErrorKind};
pub use event::{EngineEvent, EventKind, EventLevel, EventReceiver};
pub use goals::{GOAL_ALT_RATE, GoalView, NO_LIMIT, ShareLimits, USE_GLOBAL};
pub use settings::{GoalAction, SessionSettings, SettingsChange, SettingsReply};
pub use snapshot::{
    FilePriority, FileRow, GlobalStats, PauseCause, PeerFlags, PeerRow, PeerSource, PieceState,
    Snapshot, SnapshotReceiver, SourceCount, TorrentDetail, TorrentRow, TorrentState, TrackerRow,
    TrackerStatus, WebSeedRow, WebSeedState, share_ratio,
};
pub use tracker_edit::{TrackerEdit, TrackerEditError, TrackerEditOutcome, TrackerEditReply};

/// Identifies one torrent inside a session; assigned by the engine, never reused.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct TorrentId(pub u64);

impl std::fmt::Display for TorrentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}
