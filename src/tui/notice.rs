//! The message line's notice: one short text ("torrent added", "not added: …") and how it
//! reads, shown until the next key that does something, or replaced by the next notice; a
//! notice about a move ("moving to …") gives way to its outcome when the move ends ("moved
//! to X" / "move failed: reason, files stay in Y"). Notices
//! that must each be read (a watch folder that cannot be used, then the adds that failed
//! at start-up) are queued instead: each key that clears the line shows the next.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::api::{EventKind, EventLevel, TorrentId};

/// How the engine's session-log line of a failed move starts (the reason follows).
const MOVE_FAILED_PREFIX: &str = "moving failed, the files stay where they were: ";

/// Snapshots after which work that was never seen running counts as done (the engine had
/// the command long before: a move within one file system is a rename).
const UNSEEN_SNAPSHOTS: u64 = 3;

/// How a status-line message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    /// A confirmation ("added …").
    Info,
    /// Something did not work.
    Error,
}

/// The notice shown in the message line, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notice {
    shown: Option<(String, NoticeLevel)>,
    /// The shown notice is about work on these torrents: it goes when the work ends.
    work: Option<Work>,
    /// Notices waiting to be shown, in order: the next one shows when the line is cleared.
    queued: VecDeque<(String, NoticeLevel)>,
    /// Torrents of a move that ended elsewhere than asked before its reason arrived: the
    /// session log's line about it replaces the notice.
    unexplained: Vec<TorrentId>,
}

/// The move the shown notice is about.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Work {
    ids: Vec<TorrentId>,
    /// The folder asked for.
    to: PathBuf,
    /// The data moves with it (false: only the location is set, the files stay).
    move_data: bool,
    /// The snapshot `seq` when it was asked for.
    asked_at: u64,
    /// A snapshot showed it running.
    seen: bool,
}

impl Notice {
    /// Shows `text` as a confirmation, replacing what was shown.
    pub fn info(&mut self, text: String) {
        self.shown = Some((text, NoticeLevel::Info));
        self.work = None;
        self.unexplained.clear();
    }

    /// Shows `text` about the move of `ids` to folder `to` (`move_data`: the files go too;
    /// false: only the location is set) asked for at snapshot `seq`: [`Notice::update`]
    /// replaces it with the outcome once the move ends, and [`Notice::move_event`] with the
    /// reason when it fails.
    pub fn moving(
        &mut self,
        text: String,
        ids: Vec<TorrentId>,
        (to, move_data): (PathBuf, bool),
        seq: u64,
    ) {
        self.info(text);
        self.work = Some(Work {
            ids,
            to,
            move_data,
            asked_at: seq,
            seen: false,
        });
    }

    /// A new snapshot `seq`, in which `state` gives a torrent's state: whether it still
    /// moves, and its save folder. Once the move was seen running and now is not (or was
    /// never seen in `UNSEEN_SNAPSHOTS` (3) snapshots: a rename) the notice says "moved to
    /// X" when every torrent is there, else "move failed … files stay in Y" (the reason
    /// follows from the session log, see [`Notice::move_event`]).
    pub fn update(&mut self, seq: u64, state: impl Fn(TorrentId) -> Option<(bool, PathBuf)>) {
        let Some(work) = &mut self.work else {
            return;
        };
        let states: Vec<(TorrentId, Option<(bool, PathBuf)>)> =
            work.ids.iter().map(|id| (*id, state(*id))).collect();
        if states.iter().any(|(_, s)| s.as_ref().is_some_and(|s| s.0)) {
            work.seen = true;
            return;
        }
        // every torrent already shows the new folder (a location set on a paused torrent
        // never shows Moving, and a paused session may publish nothing more): done
        let arrived = !work.move_data
            && states
                .iter()
                .all(|(_, s)| s.as_ref().is_some_and(|(_, at)| same_dir(at, &work.to)));
        if !arrived && !work.seen && seq < work.asked_at + UNSEEN_SNAPSHOTS {
            return;
        }
        let to = work.to.clone();
        let done = if work.move_data {
            "moved to"
        } else {
            "location set to"
        };
        let stayed: Vec<(TorrentId, PathBuf)> = states
            .into_iter()
            .filter_map(|(id, s)| {
                s.filter(|(_, at)| !same_dir(at, &to))
                    .map(|(_, at)| (id, at))
            })
            .collect();
        match stayed.first() {
            None => self.info(format!("{done} {}", to.display())),
            Some((_, from)) => {
                self.error(format!(
                    "move failed, files stay in {} (reason in the session log)",
                    from.display()
                ));
                self.unexplained = stayed.iter().map(|(id, _)| *id).collect();
            }
        }
    }

    /// An engine event about torrent `id` (`from`: its save folder now): a move's failure
    /// (a disk error, or a refusal such as "cannot move while checking") replaces the
    /// move's notice with "move failed: reason, files stay in `from`". Returns whether it
    /// did (then the event needs no notice of its own).
    pub fn move_event(
        &mut self,
        id: TorrentId,
        level: EventLevel,
        kind: EventKind,
        message: &str,
        from: &Path,
    ) -> bool {
        let watched = self.work.as_ref().is_some_and(|w| w.ids.contains(&id))
            || self.unexplained.contains(&id);
        let failure = level >= EventLevel::Warn
            && matches!(kind, EventKind::DiskError | EventKind::StateChanged);
        if !watched || !failure {
            return false;
        }
        let reason = message.strip_prefix(MOVE_FAILED_PREFIX).unwrap_or(message);
        self.error(format!(
            "move failed: {reason}, files stay in {}",
            from.display()
        ));
        self.unexplained.clear();
        true
    }

    /// Shows `text` as an error, replacing what was shown.
    pub fn error(&mut self, text: String) {
        self.shown = Some((text, NoticeLevel::Error));
        self.work = None;
        self.unexplained.clear();
    }

    /// Shows the error that `text` builds only when nothing is shown, so a stream of engine
    /// errors never hides the answer to what the user just did. Returns whether it shows.
    pub fn error_if_quiet(&mut self, text: impl FnOnce() -> String) -> bool {
        if self.shown.is_some() {
            return false;
        }
        self.error(text());
        true
    }

    /// Shows `text` as a confirmation, or clears the line for `None` (then the next queued
    /// notice, if any, shows).
    pub fn set(&mut self, text: Option<String>) {
        match text {
            Some(t) => self.info(t),
            None => self.clear(),
        }
    }

    /// Shows `text` at `level` now if the line is empty, else after what is shown and
    /// queued before it: never replaces a notice the user has not read.
    pub fn enqueue(&mut self, text: String, level: NoticeLevel) {
        if self.shown.is_none() {
            self.shown = Some((text, level));
            self.work = None;
        } else {
            self.queued.push_back((text, level));
        }
    }

    /// Clears the line; the next queued notice, if any, shows instead.
    pub fn clear(&mut self) {
        self.shown = self.queued.pop_front();
        self.work = None;
    }

    /// The text shown and its level.
    pub fn get(&self) -> Option<(&str, NoticeLevel)> {
        self.shown.as_ref().map(|(t, l)| (t.as_str(), *l))
    }

    /// Notices waiting behind the one shown.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }
}

/// Whether folders `a` and `b` are the same (a trailing `/` typed in the dialog aside).
fn same_dir(a: &Path, b: &Path) -> bool {
    a.components().eq(b.components())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_notice_wins_and_keeps_its_level() {
        let mut n = Notice::default();
        assert_eq!(n.get(), None);
        n.info("torrent added".to_owned());
        assert_eq!(n.get(), Some(("torrent added", NoticeLevel::Info)));
        n.error("not added: bad file".to_owned());
        assert_eq!(n.get(), Some(("not added: bad file", NoticeLevel::Error)));
        n.set(Some("shutting down…".to_owned()));
        assert_eq!(n.get(), Some(("shutting down…", NoticeLevel::Info)));
        n.set(None);
        assert_eq!(n.get(), None);
        n.info("x".to_owned());
        n.clear();
        assert_eq!(n.get(), None);
    }

    #[test]
    fn queued_notices_each_show_in_turn() {
        let mut n = Notice::default();
        n.enqueue("watch folder unusable".to_owned(), NoticeLevel::Info);
        n.enqueue("2 torrents not added".to_owned(), NoticeLevel::Error);
        n.enqueue("third".to_owned(), NoticeLevel::Info);
        assert_eq!(n.get(), Some(("watch folder unusable", NoticeLevel::Info)));
        assert_eq!(n.queued(), 2);
        // a notice of the user's own action shows now; the queue waits behind it
        n.info("torrent added".to_owned());
        assert_eq!(n.queued(), 2);
        n.clear();
        assert_eq!(n.get(), Some(("2 torrents not added", NoticeLevel::Error)));
        n.set(None);
        assert_eq!(n.get(), Some(("third", NoticeLevel::Info)));
        assert_eq!(n.queued(), 0);
        n.clear();
        assert_eq!(n.get(), None);
    }

    #[test]
    fn a_background_error_never_hides_what_is_shown() {
        let mut n = Notice::default();
        n.info("removed debian.iso".to_owned());
        assert!(!n.error_if_quiet(|| unreachable!("not built when hidden")));
        assert_eq!(n.get(), Some(("removed debian.iso", NoticeLevel::Info)));
        n.clear();
        assert!(n.error_if_quiet(|| "disk full".to_owned()));
        assert_eq!(n.get(), Some(("disk full", NoticeLevel::Error)));
        assert!(
            !n.error_if_quiet(|| "second".to_owned()),
            "the first error stays"
        );
        assert_eq!(n.get().map(|(t, _)| t), Some("disk full"));
    }

    #[test]
    fn a_move_notice_gives_way_to_the_outcome() {
        let ids = vec![TorrentId(1), TorrentId(2)];
        let srv = PathBuf::from("/srv");
        let old = PathBuf::from("/home/u/dl");
        let mut n = Notice::default();
        n.moving(
            "moving to /srv".to_owned(),
            ids.clone(),
            (srv.clone(), true),
            10,
        );
        let at = |dir: &PathBuf, busy: Option<TorrentId>| {
            let dir = dir.clone();
            move |id| Some((Some(id) == busy, dir.clone()))
        };
        n.update(11, at(&old, None));
        assert_eq!(
            n.get().map(|(t, _)| t),
            Some("moving to /srv"),
            "not seen yet: the engine may not have it"
        );
        for seq in 12..15 {
            n.update(seq, at(&old, Some(TorrentId(2))));
        }
        assert_eq!(
            n.get().map(|(t, _)| t),
            Some("moving to /srv"),
            "still moving"
        );
        n.update(15, at(&PathBuf::from("/srv/"), None));
        assert_eq!(n.get(), Some(("moved to /srv", NoticeLevel::Info)));

        // a rename never seen running: the outcome after a few snapshots
        n.moving(
            "moving to /srv".to_owned(),
            ids.clone(),
            (srv.clone(), true),
            20,
        );
        n.update(21, at(&srv, None));
        n.update(22, at(&srv, None));
        assert_eq!(n.get().map(|(t, _)| t), Some("moving to /srv"));
        n.update(23, at(&srv, None));
        assert_eq!(n.get().map(|(t, _)| t), Some("moved to /srv"));

        // only the location set (the files stay): said so, not "moved"
        n.moving(
            "moving to /srv".to_owned(),
            ids.clone(),
            (srv.clone(), false),
            24,
        );
        // the row shows the new folder at the next snapshot: said at once (a paused
        // session may publish no further snapshot)
        n.update(25, at(&srv, None));
        assert_eq!(n.get().map(|(t, _)| t), Some("location set to /srv"));

        // another notice in between is not taken away
        n.moving(
            "moving to /srv".to_owned(),
            ids.clone(),
            (srv.clone(), true),
            30,
        );
        n.info("torrent added".to_owned());
        n.update(40, at(&srv, None));
        assert_eq!(n.get().map(|(t, _)| t), Some("torrent added"));
    }

    #[test]
    fn a_failed_move_says_why_and_where_the_files_stay() {
        let ids = vec![TorrentId(1)];
        let old = PathBuf::from("/home/u/dl");
        let mut n = Notice::default();
        // the reason arrives while the move runs
        n.moving(
            "moving to /proc/nope".to_owned(),
            ids.clone(),
            ("/proc/nope".into(), true),
            1,
        );
        assert!(!n.move_event(
            TorrentId(9),
            EventLevel::Error,
            EventKind::DiskError,
            "other torrent",
            &old
        ));
        assert!(!n.move_event(
            TorrentId(1),
            EventLevel::Info,
            EventKind::StateChanged,
            "moving its files from a to b",
            &old
        ));
        let line = format!("{MOVE_FAILED_PREFIX}/proc/nope: Permission denied");
        assert!(n.move_event(
            TorrentId(1),
            EventLevel::Error,
            EventKind::DiskError,
            &line,
            &old
        ));
        assert_eq!(
            n.get(),
            Some((
                "move failed: /proc/nope: Permission denied, files stay in /home/u/dl",
                NoticeLevel::Error
            ))
        );
        n.update(5, |_| Some((false, old.clone())));
        assert!(n.get().unwrap().0.contains("Permission denied"), "kept");

        // the move ends before its reason arrives: said at once, the reason replaces it
        n.moving(
            "moving to /x".to_owned(),
            ids.clone(),
            ("/x".into(), true),
            10,
        );
        n.update(11, |_| Some((true, old.clone())));
        n.update(12, |_| Some((false, old.clone())));
        assert_eq!(
            n.get(),
            Some((
                "move failed, files stay in /home/u/dl (reason in the session log)",
                NoticeLevel::Error
            ))
        );
        assert!(n.move_event(
            TorrentId(1),
            EventLevel::Warn,
            EventKind::StateChanged,
            "cannot move while checking",
            &old
        ));
        assert_eq!(
            n.get().map(|(t, _)| t),
            Some("move failed: cannot move while checking, files stay in /home/u/dl")
        );
        assert!(
            !n.move_event(
                TorrentId(1),
                EventLevel::Error,
                EventKind::DiskError,
                "later",
                &old
            ),
            "explained once"
        );
    }
}
