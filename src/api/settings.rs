//! Session settings a front end may read and change while the session runs: the default
//! save folder, the session's seeding goals (`[seeding]`), the queue's limits (`[queue]`)
//! and the DHT. qBittorrent's `app/preferences` and `app/setPreferences` read and write
//! them; a change holds for this run (the config file is not rewritten).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a torrent that reaches a seeding goal gets (`[seeding] action`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalAction {
    /// Stop it (paused, with the goal as the reason; it stays stopped across restarts).
    #[default]
    Stop,
    /// Remove it from the session; its files stay.
    Remove,
    /// Remove it and delete its files.
    RemoveWithData,
    /// Keep seeding, its upload limited to `alt_upload_rate_limit` (the session's
    /// alternative upload limit; its own limit applies when lower). Config value
    /// `"alt_upload"`. Raising the goal gives it its own limit back.
    AltUpload,
}

/// The session settings in effect (published in every snapshot, see
/// [`GlobalStats::settings`](super::GlobalStats::settings)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSettings {
    /// Where torrents added without a folder (and categories with an implicit path) go.
    #[serde(with = "super::serde_forms::path")]
    pub download_dir: PathBuf,
    /// The session's share ratio goal; -1.0: none.
    pub ratio_limit: f64,
    /// The session's seeding time goal, minutes; -1: none.
    pub seeding_time_limit: i64,
    /// The session's inactive seeding time goal, minutes; -1: none.
    pub inactive_seeding_time_limit: i64,
    /// What a torrent that reaches a goal gets.
    pub goal_action: GoalAction,
    /// Queueing on: torrents take their turn by queue place.
    pub queueing: bool,
    /// Most torrents downloading at once; -1: no limit.
    pub max_active_downloads: i64,
    /// Most torrents seeding at once; -1: no limit.
    pub max_active_uploads: i64,
    /// Most torrents running at once; -1: no limit.
    pub max_active_torrents: i64,
    /// The DHT node runs (BEP 5).
    pub dht: bool,
    /// Peer exchange (BEP 11) is on.
    pub pex: bool,
    /// Local Service Discovery (BEP 14) is on.
    pub lsd: bool,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            download_dir: PathBuf::new(),
            ratio_limit: -1.0,
            seeding_time_limit: -1,
            inactive_seeding_time_limit: -1,
            goal_action: GoalAction::Stop,
            queueing: false,
            max_active_downloads: 3,
            max_active_uploads: 3,
            max_active_torrents: 5,
            dht: false,
            pex: false,
            lsd: false,
        }
    }
}

/// A change of session settings ([`Command::ChangeSettings`](super::Command)): `None`
/// leaves a setting as it is. Values are checked as the config file's are (a ratio of -1
/// or 0 or more, minutes and counts -1 or more); a wrong one refuses the whole change and
/// nothing changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsChange {
    /// A new default save folder (absolute).
    #[serde(with = "super::serde_forms::opt_path")]
    pub download_dir: Option<PathBuf>,
    /// The session's ratio goal (-1.0: none).
    pub ratio_limit: Option<f64>,
    /// The session's seeding time goal, minutes (-1: none).
    pub seeding_time_limit: Option<i64>,
    /// The session's inactive seeding time goal, minutes (-1: none).
    pub inactive_seeding_time_limit: Option<i64>,
    /// What a torrent that reaches a goal gets.
    pub goal_action: Option<GoalAction>,
    /// Queueing on or off.
    pub queueing: Option<bool>,
    /// Most torrents downloading at once (-1: no limit).
    pub max_active_downloads: Option<i64>,
    /// Most torrents seeding at once (-1: no limit).
    pub max_active_uploads: Option<i64>,
    /// Most torrents running at once (-1: no limit).
    pub max_active_torrents: Option<i64>,
    /// Run the DHT node or stop it.
    pub dht: Option<bool>,
}

impl SettingsChange {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == SettingsChange::default()
    }

    /// Check the values.
    ///
    /// # Errors
    /// The first wrong value, named as qBittorrent's preference would be, e.g.
    /// `max_ratio must be -1 (none) or 0 or more (got -3)`.
    pub fn check(&self) -> Result<(), String> {
        if let Some(r) = self.ratio_limit
            && !(r == -1.0 || (r.is_finite() && r >= 0.0))
        {
            return Err(format!(
                "max_ratio must be -1 (none) or 0 or more (got {r})"
            ));
        }
        for (name, v) in [
            ("max_seeding_time", self.seeding_time_limit),
            (
                "max_inactive_seeding_time",
                self.inactive_seeding_time_limit,
            ),
            ("max_active_downloads", self.max_active_downloads),
            ("max_active_uploads", self.max_active_uploads),
            ("max_active_torrents", self.max_active_torrents),
        ] {
            if let Some(v) = v
                && v < -1
            {
                return Err(format!("{name} must be -1 (none) or 0 or more (got {v})"));
            }
        }
        if let Some(d) = &self.download_dir
            && !d.is_absolute()
        {
            return Err(format!(
                "save_path must be an absolute folder (got {})",
                d.display()
            ));
        }
        Ok(())
    }
}

/// The answer to [`Command::ChangeSettings`](super::Command): the settings now in effect,
/// or why the change was refused (nothing changed).
pub type SettingsReply = tokio::sync::oneshot::Sender<Result<SessionSettings, String>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_checked_as_the_config_is() {
        assert!(SettingsChange::default().is_empty());
        assert_eq!(SettingsChange::default().check(), Ok(()));
        let ok = SettingsChange {
            ratio_limit: Some(2.5),
            seeding_time_limit: Some(-1),
            max_active_downloads: Some(0),
            download_dir: Some("/data".into()),
            ..SettingsChange::default()
        };
        assert_eq!(ok.check(), Ok(()));
        for bad in [
            SettingsChange {
                ratio_limit: Some(-3.0),
                ..SettingsChange::default()
            },
            SettingsChange {
                ratio_limit: Some(f64::NAN),
                ..SettingsChange::default()
            },
            SettingsChange {
                max_active_torrents: Some(-2),
                ..SettingsChange::default()
            },
            SettingsChange {
                download_dir: Some("relative".into()),
                ..SettingsChange::default()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
