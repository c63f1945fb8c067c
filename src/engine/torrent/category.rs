//! A torrent's category, tags and automatic management (qBittorrent's): with automatic
//! management on, its data lives where its category says ([`Place`]): in the category's
//! download path while downloading, then (the "final folder", `ManageRecord::final_dir`)
//! in its save path once complete, moved there by the move-storage machinery
//! (`relocate.rs`). Changing the category of an auto-managed torrent moves its data; with
//! automatic management off the data stays where it is.

use std::path::PathBuf;

use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, ShareLimits, TorrentState};
use crate::engine::categories::Place;

/// Whether a state counts as complete for the final move.
fn done(s: TorrentState) -> bool {
    matches!(s, TorrentState::Seeding | TorrentState::Completed)
}

impl Torrent {
    /// Its category (`""`: none).
    pub fn category(&self) -> &str {
        &self.manage.category
    }

    /// Its tags, in the order given.
    pub fn tags(&self) -> &[String] {
        &self.manage.tags
    }

    /// Whether automatic management is on.
    pub fn auto_managed(&self) -> bool {
        self.manage.auto_managed
    }

    /// Where it goes once complete, if it moves then.
    pub fn final_dir(&self) -> Option<&PathBuf> {
        self.manage.final_dir.as_ref()
    }

    /// As added, before it starts: its category, tags, automatic management, the folder
    /// it moves to on completion (`final_dir`) and its category's goals.
    pub fn set_manage_on_add(
        &mut self,
        category: String,
        tags: Vec<String>,
        auto_managed: bool,
        final_dir: Option<PathBuf>,
        limits: ShareLimits,
    ) {
        self.manage.category = category;
        self.manage.tags = Vec::new();
        crate::api::add_tags(&mut self.manage.tags, &tags);
        self.manage.auto_managed = auto_managed;
        self.manage.final_dir = final_dir.filter(|f| *f != self.save_dir);
        self.goals.category = limits.sanitized();
        self.persist_dirty = true;
    }

    /// Restored: its category's goals (no look at the goals yet, it is not seeding).
    pub fn restore_category_goals(&mut self, limits: ShareLimits) {
        self.goals.category = limits.sanitized();
    }

    /// Put it in category `name` (`""`: none), which resolves to `place`; an auto-managed
    /// torrent's data moves there.
    pub fn set_category(&mut self, name: &str, place: &Place, env: &mut Env<'_>) {
        if self.manage.category == name {
            return;
        }
        let before = std::mem::replace(&mut self.manage.category, name.to_owned());
        self.persist_dirty = true;
        *env.publish_now = true;
        let shown = |c: &str| {
            if c.is_empty() {
                "none".to_owned()
            } else {
                format!("{c:?}")
            }
        };
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!("category {} (was {})", shown(name), shown(&before)),
        );
        self.set_category_goals(place.limits, env);
        if self.manage.auto_managed {
            self.follow_category(place, env);
        }
    }

    /// Its category was edited (or removed, `place` then is no category's): its goals, and
    /// when auto-managed its data, follow.
    pub fn category_changed(&mut self, place: &Place, env: &mut Env<'_>) {
        self.set_category_goals(place.limits, env);
        if self.manage.auto_managed {
            self.follow_category(place, env);
        }
    }

    /// Automatic management on (the data moves where its category says) or off (it stays
    /// where it is, and no longer moves on completion).
    pub fn set_auto_managed(&mut self, on: bool, place: &Place, env: &mut Env<'_>) {
        if self.manage.auto_managed == on {
            return;
        }
        self.manage.auto_managed = on;
        self.persist_dirty = true;
        *env.publish_now = true;
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!("automatic management {}", if on { "on" } else { "off" }),
        );
        if on {
            self.follow_category(place, env);
        } else {
            self.manage.final_dir = None;
        }
    }

    /// Add `tags` (each once, after its own); returns whether any was new.
    pub fn add_tags(&mut self, tags: &[String]) -> bool {
        let changed = crate::api::add_tags(&mut self.manage.tags, tags);
        self.persist_dirty |= changed;
        changed
    }

    /// Take `tags` off (an empty list: every tag); returns whether any was there.
    pub fn remove_tags(&mut self, tags: &[String]) -> bool {
        let changed = if tags.is_empty() {
            !std::mem::take(&mut self.manage.tags).is_empty()
        } else {
            crate::api::remove_tags(&mut self.manage.tags, tags)
        };
        self.persist_dirty |= changed;
        changed
    }

    /// Move the data where `place` says: the download path while incomplete (the save
    /// path becomes its final folder), else the save path.
    fn follow_category(&mut self, place: &Place, env: &mut Env<'_>) {
        let (to, final_dir) = match &place.download {
            Some(d) if !self.complete() => (d.clone(), Some(place.save.clone())),
            _ => (place.save.clone(), None),
        };
        self.manage.final_dir = final_dir.filter(|f| *f != to);
        self.persist_dirty = true;
        if to != self.save_dir {
            self.move_storage(to, true, env);
        }
    }

    /// The state shown changed: one that becomes complete with a final folder to go to
    /// asks the session for the move (not started inside the state machine's step).
    pub(super) fn category_state_changed(&mut self, before: TorrentState, after: TorrentState) {
        if done(after) && !done(before) && self.manage.final_dir.is_some() {
            self.final_move_due = true;
        }
    }

    /// Whether the final move is due (and no longer, once asked).
    pub fn take_final_move(&mut self) -> bool {
        std::mem::take(&mut self.final_move_due)
    }

    /// Move the data to its final folder (complete, from a category's download path to its
    /// save path).
    pub fn move_to_final(&mut self, env: &mut Env<'_>) {
        if !self.complete() {
            return;
        }
        let Some(to) = self.manage.final_dir.take() else {
            return;
        };
        self.persist_dirty = true;
        if to != self.save_dir {
            self.move_storage(to, true, env);
        }
    }
}
