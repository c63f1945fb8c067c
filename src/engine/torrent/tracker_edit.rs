//! Editing a torrent's tracker URLs ([`TrackerEdit`]): the changes an edit makes to its
//! tiers (pure, [`plan`]), then applied to the kept list (`Summary::trackers`, which the
//! record stores, so the edit survives a restart) and to the announce schedule
//! ([`super::announce::TrackerSet`]): a changed or removed tracker gets its `stopped` and
//! nothing more, a new one `started` while the torrent runs.

use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, TrackerEdit, TrackerEditError};
use crate::net::{check_tracker_url, mask_passkey};
use crate::tracker::TrackerClient;

/// One change to a torrent's tracker list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The tracker `.0` becomes `.1` (same tier); removed when `.1` is there already.
    Rename(String, String),
    /// The tracker goes (and its tier, when it was the last).
    Remove(String),
    /// A new tracker in a tier of its own.
    Add(String),
}

/// The changes `edit` makes to `tiers` (the torrent's list, BEP 12), in order; empty when
/// it changes nothing there.
///
/// # Errors
/// [`TrackerEditError::EmptyFind`], [`TrackerEditError::InvalidUrl`] (a URL it would
/// give is not `http`/`https`/`udp` with a host), [`TrackerEditError::Exists`] (an edit's
/// new URL is there already). Not finding a URL is not an error here (the session says
/// [`TrackerEditError::NotFound`] when no torrent had it).
pub fn plan(tiers: &[Vec<String>], edit: &TrackerEdit) -> Result<Vec<Change>, TrackerEditError> {
    let urls: Vec<&str> = tiers.iter().flatten().map(|u| u.trim()).collect();
    let has = |u: &str| urls.contains(&u);
    let valid = |u: &str| {
        check_tracker_url(u).map_err(|why| TrackerEditError::InvalidUrl(mask_passkey(u), why))
    };
    let mut out = Vec::new();
    match edit {
        TrackerEdit::Replace { find, replace } => {
            if find.is_empty() {
                return Err(TrackerEditError::EmptyFind);
            }
            for u in &urls {
                if !u.contains(find.as_str())
                    || out
                        .iter()
                        .any(|c| matches!(c, Change::Rename(o, _) if o == u))
                {
                    continue;
                }
                let new = u.replace(find.as_str(), replace);
                if new != *u {
                    valid(&new)?;
                    out.push(Change::Rename((*u).to_owned(), new));
                }
            }
        }
        TrackerEdit::Add(add) => {
            for u in add.iter().map(|u| u.trim()) {
                valid(u)?;
                if !has(u) && !out.contains(&Change::Add(u.to_owned())) {
                    out.push(Change::Add(u.to_owned()));
                }
            }
        }
        TrackerEdit::Remove(remove) => {
            for u in remove.iter().map(|u| u.trim()) {
                if has(u) && !out.contains(&Change::Remove(u.to_owned())) {
                    out.push(Change::Remove(u.to_owned()));
                }
            }
        }
        TrackerEdit::Edit { old, new } => {
            let (old, new) = (old.trim(), new.trim());
            valid(new)?;
            if has(old) && old != new {
                if has(new) {
                    return Err(TrackerEditError::Exists(mask_passkey(new)));
                }
                out.push(Change::Rename(old.to_owned(), new.to_owned()));
            }
        }
    }
    Ok(out)
}

/// `changes` applied to the kept list `tiers` (empty tiers dropped).
pub fn apply(tiers: &mut Vec<Vec<String>>, changes: &[Change]) {
    for c in changes {
        match c {
            Change::Rename(old, new) => {
                let exists = tiers.iter().flatten().any(|u| u.trim() == new);
                for tier in tiers.iter_mut() {
                    if exists {
                        tier.retain(|u| u.trim() != old);
                    } else if let Some(u) = tier.iter_mut().find(|u| u.trim() == old) {
                        *u = new.clone();
                    }
                }
            }
            Change::Remove(url) => {
                for tier in tiers.iter_mut() {
                    tier.retain(|u| u.trim() != url);
                }
            }
            Change::Add(url) => tiers.push(vec![url.clone()]),
        }
        tiers.retain(|t| !t.is_empty());
    }
}

impl Torrent {
    /// The changes `edit` would make to this torrent's trackers (see [`plan`]).
    ///
    /// # Errors
    /// As [`plan`].
    pub fn plan_tracker_edit(&self, edit: &TrackerEdit) -> Result<Vec<Change>, TrackerEditError> {
        plan(&self.sum.trackers, edit)
    }

    /// Apply `changes` (from [`Torrent::plan_tracker_edit`]): the kept list changes (and
    /// is written at the next checkpoint), the announce schedule follows at once, the
    /// session log says how many URLs changed (masked URLs only).
    pub fn edit_trackers(&mut self, changes: &[Change], env: &mut Env<'_>) {
        if changes.is_empty() {
            return;
        }
        apply(&mut self.sum.trackers, changes);
        let running = self.life.is_running().then_some(env.now);
        let mut stops = Vec::new();
        for c in changes {
            let stop = match c {
                Change::Rename(old, new) => {
                    self.trackers
                        .rename_tracker(old, new, TrackerClient::supports, running)
                }
                Change::Remove(url) => self.trackers.remove_tracker(url, running),
                Change::Add(url) => {
                    self.trackers
                        .add_tracker(url, TrackerClient::supports, running);
                    None
                }
            };
            stops.extend(stop.flatten());
        }
        for job in stops {
            self.spawn_announce(job, env);
        }
        if running.is_some() {
            self.schedule_announce(env);
        }
        self.persist_dirty = true;
        let what: Vec<String> = changes
            .iter()
            .take(3)
            .map(|c| match c {
                Change::Rename(o, n) => format!("{} → {}", mask_passkey(o), mask_passkey(n)),
                Change::Remove(u) => format!("removed {}", mask_passkey(u)),
                Change::Add(u) => format!("added {}", mask_passkey(u)),
            })
            .collect();
        let more = changes.len().saturating_sub(what.len());
        let n = changes.len();
        self.log(
            env,
            EventLevel::Info,
            EventKind::TrackersEdited,
            format!(
                "tracker{} edited: {}{}",
                if n == 1 { "" } else { "s" },
                what.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiers(t: &[&[&str]]) -> Vec<Vec<String>> {
        t.iter()
            .map(|t| t.iter().map(|u| (*u).to_owned()).collect())
            .collect()
    }

    #[test]
    fn replace_changes_every_url_that_contains_the_text() {
        let t = tiers(&[
            &["http://a.example/announce?pk=P1", "udp://b.example:80"],
            &["http://c.example/P1/announce"],
        ]);
        let edit = TrackerEdit::Replace {
            find: "P1".into(),
            replace: "P2".into(),
        };
        let changes = plan(&t, &edit).unwrap();
        assert_eq!(
            changes,
            [
                Change::Rename(
                    "http://a.example/announce?pk=P1".into(),
                    "http://a.example/announce?pk=P2".into()
                ),
                Change::Rename(
                    "http://c.example/P1/announce".into(),
                    "http://c.example/P2/announce".into()
                ),
            ]
        );
        let mut kept = t.clone();
        apply(&mut kept, &changes);
        assert_eq!(
            kept,
            tiers(&[
                &["http://a.example/announce?pk=P2", "udp://b.example:80"],
                &["http://c.example/P2/announce"],
            ])
        );
    }

    #[test]
    fn a_replace_that_makes_a_bad_url_changes_nothing() {
        let t = tiers(&[&["http://a.example/announce?pk=s3cr3tkey1"]]);
        let edit = TrackerEdit::Replace {
            find: "http".into(),
            replace: "ftp".into(),
        };
        let e = plan(&t, &edit).unwrap_err();
        assert!(
            matches!(&e, TrackerEditError::InvalidUrl(u, _) if u.contains("pk=***")),
            "{e}"
        );
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let empty = TrackerEdit::Replace {
            find: String::new(),
            replace: "x".into(),
        };
        assert_eq!(plan(&t, &empty), Err(TrackerEditError::EmptyFind));
    }

    #[test]
    fn a_rename_onto_a_url_already_there_drops_the_old_one() {
        let t = tiers(&[&["http://a.example/x", "http://a.example/y"]]);
        let edit = TrackerEdit::Replace {
            find: "/x".into(),
            replace: "/y".into(),
        };
        let changes = plan(&t, &edit).unwrap();
        let mut kept = t.clone();
        apply(&mut kept, &changes);
        assert_eq!(kept, tiers(&[&["http://a.example/y"]]));
        // an explicit edit onto an existing URL is refused (qBittorrent's editTracker)
        let edit = TrackerEdit::Edit {
            old: "http://a.example/x".into(),
            new: "http://a.example/y".into(),
        };
        assert!(matches!(plan(&t, &edit), Err(TrackerEditError::Exists(_))));
    }

    #[test]
    fn add_and_remove_skip_what_is_there_or_not() {
        let t = tiers(&[&["http://a.example/a"], &["http://b.example/b"]]);
        let add = TrackerEdit::Add(vec![
            "http://a.example/a".into(),
            "udp://c.example:6969".into(),
        ]);
        let changes = plan(&t, &add).unwrap();
        assert_eq!(changes, [Change::Add("udp://c.example:6969".into())]);
        assert!(plan(&t, &TrackerEdit::Add(vec!["file:///etc/passwd".into()])).is_err());
        let remove = TrackerEdit::Remove(vec!["http://b.example/b".into(), "http://z/".into()]);
        let changes = plan(&t, &remove).unwrap();
        assert_eq!(changes, [Change::Remove("http://b.example/b".into())]);
        let mut kept = t.clone();
        apply(&mut kept, &changes);
        assert_eq!(
            kept,
            tiers(&[&["http://a.example/a"]]),
            "the empty tier goes"
        );
    }
}
