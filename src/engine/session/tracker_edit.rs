//! Tracker edits across torrents ([`crate::api::Command::EditTrackers`]): every torrent's
//! changes are planned first, so a bad URL for one refuses the whole edit, then applied.

use super::Session;
use crate::api::{TorrentId, TrackerEdit, TrackerEditError, TrackerEditOutcome};
use crate::net::mask_passkey;

impl Session {
    /// Apply `edit` to the torrents `ids` (gone ones skipped); with `dry_run` only count.
    ///
    /// # Errors
    /// [`TrackerEditError::NoTorrent`] when none of `ids` is there; a torrent's plan's
    /// error (nothing changed then); [`TrackerEditError::NotFound`] for an edit or a
    /// removal whose URL none of them has.
    pub(super) fn edit_trackers(
        &mut self,
        ids: &[TorrentId],
        edit: &TrackerEdit,
        dry_run: bool,
    ) -> Result<TrackerEditOutcome, TrackerEditError> {
        let mut plans = Vec::new();
        for id in ids {
            if let Some(t) = self.torrents.get(id)
                && !plans.iter().any(|(i, _)| i == id)
            {
                plans.push((*id, t.plan_tracker_edit(edit)?));
            }
        }
        if plans.is_empty() {
            return Err(TrackerEditError::NoTorrent);
        }
        let outcome = TrackerEditOutcome {
            urls: plans.iter().map(|(_, c)| c.len()).sum(),
            torrents: plans.iter().filter(|(_, c)| !c.is_empty()).count(),
        };
        if outcome.urls == 0 {
            match edit {
                TrackerEdit::Edit { old, .. } => {
                    return Err(TrackerEditError::NotFound(mask_passkey(old)));
                }
                TrackerEdit::Remove(urls) => {
                    let first = urls.first().map(|u| mask_passkey(u)).unwrap_or_default();
                    return Err(TrackerEditError::NotFound(first));
                }
                TrackerEdit::Replace { .. } | TrackerEdit::Add(_) => {}
            }
        }
        if !dry_run {
            for (id, changes) in plans {
                if !changes.is_empty() {
                    self.with(id, |t, env| t.edit_trackers(&changes, env));
                }
            }
            self.publish_now = true;
        }
        Ok(outcome)
    }
}
