//! The message line's notice: one short text ("torrent added", "not added: …") and how it
//! reads, shown until the next key that does something, or replaced by the next notice; a
//! notice about work on torrents ("moving to …") also goes when that work ends. Notices
//! that must each be read (a watch folder that cannot be used, then the adds that failed
//! at start-up) are queued instead: each key that clears the line shows the next.

use std::collections::VecDeque;

use crate::api::TorrentId;

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
}

/// Work the shown notice is about.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Work {
    ids: Vec<TorrentId>,
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
    }

    /// Shows `text` about work on `ids` asked for at snapshot `seq` (a move): it goes by
    /// itself once [`Notice::update`] sees the work end.
    pub fn info_while(&mut self, text: String, ids: Vec<TorrentId>, seq: u64) {
        self.info(text);
        self.work = Some(Work {
            ids,
            asked_at: seq,
            seen: false,
        });
    }

    /// A new snapshot `seq`, in which `busy` tells whether a torrent's work still runs:
    /// the notice about work goes once the work was seen running and now is not, or was
    /// never seen in `UNSEEN_SNAPSHOTS` (3) snapshots.
    pub fn update(&mut self, seq: u64, busy: impl Fn(TorrentId) -> bool) {
        let Some(work) = &mut self.work else {
            return;
        };
        if work.ids.iter().any(|id| busy(*id)) {
            work.seen = true;
            return;
        }
        if work.seen || seq >= work.asked_at + UNSEEN_SNAPSHOTS {
            self.clear();
        }
    }

    /// Shows `text` as an error, replacing what was shown.
    pub fn error(&mut self, text: String) {
        self.shown = Some((text, NoticeLevel::Error));
        self.work = None;
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
    fn a_notice_about_work_goes_when_the_work_ends() {
        let ids = vec![TorrentId(1), TorrentId(2)];
        let mut n = Notice::default();
        n.info_while("moving to /srv".to_owned(), ids.clone(), 10);
        n.update(11, |_| false);
        assert!(
            n.get().is_some(),
            "not seen yet: the engine may not have it"
        );
        n.update(12, |id| id == TorrentId(2));
        n.update(13, |id| id == TorrentId(2));
        n.update(14, |id| id == TorrentId(2));
        assert_eq!(
            n.get().map(|(t, _)| t),
            Some("moving to /srv"),
            "still moving"
        );
        n.update(15, |_| false);
        assert_eq!(n.get(), None, "the move ended");

        // a move never seen running (a rename) goes after a few snapshots
        n.info_while("moving to /srv".to_owned(), ids.clone(), 20);
        n.update(21, |_| false);
        n.update(22, |_| false);
        assert!(n.get().is_some());
        n.update(23, |_| false);
        assert_eq!(n.get(), None);

        // another notice in between is not taken away
        n.info_while("moving to /srv".to_owned(), ids, 30);
        n.info("torrent added".to_owned());
        n.update(40, |_| false);
        assert_eq!(n.get().map(|(t, _)| t), Some("torrent added"));
    }
}
