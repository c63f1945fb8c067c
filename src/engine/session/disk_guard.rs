//! The disk guard: downloads on a volume with less than `min_free_space` free pause
//! (seeding goes on) and resume when space returns, with a [`RESUME_MARGIN`] so they do
//! not flap. It runs every [`DISK_GUARD_INTERVAL`] while something downloads or waits
//! for space, and measures the default download folder's volume for the status bar; with
//! nothing to watch (or the guard off) it still measures every [`FREE_SPACE_REFRESH`], so
//! the status bar's free space follows what other programs do to the disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Session;
use crate::api::{TorrentId, TorrentState};
use crate::engine::torrent::TimerKey;

/// How often the disk guard measures free space while something downloads.
pub const DISK_GUARD_INTERVAL: Duration = Duration::from_secs(10);
/// How often free space is measured for the status bar when nothing downloads.
pub const FREE_SPACE_REFRESH: Duration = Duration::from_secs(30);
/// A paused download resumes once its volume has this much more than `min_free_space`
/// free (bytes: 64 MiB).
pub const RESUME_MARGIN: u64 = 64 << 20;

/// What the guard does with one torrent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Pause the download; the text says why (for the event log and the torrent's error).
    Pause(String),
    /// Space is back: resume the download the guard paused.
    Resume,
    /// Leave it as it is.
    Keep,
}

/// The guard's rule and its last measurement.
#[derive(Debug, Clone)]
pub(super) struct DiskGuard {
    /// Bytes that must stay free on a downloading torrent's volume; 0: the guard is off.
    min_free: u64,
    /// Free bytes of the default download folder's volume at the last measurement.
    free_space: Option<u64>,
}

impl DiskGuard {
    /// A guard keeping `min_free` bytes free (0: off; free space is still measured).
    pub fn new(min_free: u64) -> DiskGuard {
        DiskGuard {
            min_free,
            free_space: None,
        }
    }

    /// Whether the guard pauses anything at all.
    pub fn is_on(&self) -> bool {
        self.min_free > 0
    }

    /// Free bytes of the default download folder's volume at the last measurement
    /// (`None`: not measured, or the volume does not say).
    pub fn free_space(&self) -> Option<u64> {
        self.free_space
    }

    /// Record a measurement of the default download folder's volume.
    pub fn measured(&mut self, free: Option<u64>) {
        self.free_space = free;
    }

    /// Whether a torrent in `state` (`guarded`: the guard paused it) needs watching.
    pub fn watches(&self, state: TorrentState, guarded: bool) -> bool {
        self.is_on() && (state == TorrentState::Downloading || guarded)
    }

    /// The verdict on a torrent in `state` saving into `dir`, whose volume has `free`
    /// bytes free.
    pub fn verdict(&self, state: TorrentState, guarded: bool, dir: &Path, free: u64) -> Verdict {
        if !self.watches(state, guarded) {
            Verdict::Keep
        } else if state == TorrentState::Downloading && free < self.min_free {
            Verdict::Pause(format!(
                "only {} free on the volume of {} (min_free_space is {})",
                crate::units::size(free),
                dir.display(),
                crate::units::size(self.min_free)
            ))
        } else if guarded && free >= self.min_free.saturating_add(RESUME_MARGIN) {
            Verdict::Resume
        } else {
            Verdict::Keep
        }
    }
}

/// Free space per folder, measured at most once per guard round (torrents often share a
/// folder, and a measurement is a system call).
struct Measure<F> {
    free: HashMap<PathBuf, Option<u64>>,
    measure: F,
}

impl<F: FnMut(&Path) -> Option<u64>> Measure<F> {
    fn new(measure: F) -> Measure<F> {
        Measure {
            free: HashMap::new(),
            measure,
        }
    }

    fn of(&mut self, dir: &Path) -> Option<u64> {
        if let Some(f) = self.free.get(dir) {
            return *f;
        }
        let f = (self.measure)(dir);
        self.free.insert(dir.to_path_buf(), f);
        f
    }
}

impl Session {
    /// One round of the guard: measure, pause and resume; schedule the next round while
    /// anything is watched.
    pub(super) fn disk_guard(&mut self) {
        let mut measure = Measure::new(crate::storage::space::free_space);
        let default_dir = self.settings.download_dir.clone();
        self.guard.measured(measure.of(&default_dir));
        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
        let mut watching = false;
        for id in ids {
            let Some(t) = self.torrents.get(&id) else {
                continue;
            };
            let (state, guarded) = (t.state(), t.guarded());
            if !self.guard.watches(state, guarded) {
                continue;
            }
            watching = true;
            let dir = t.save_dir.clone();
            let Some(free) = measure.of(&dir) else {
                continue;
            };
            match self.guard.verdict(state, guarded, &dir, free) {
                Verdict::Pause(reason) => {
                    self.with(id, |t, env| t.guard_pause(reason, env));
                }
                Verdict::Resume => {
                    self.with(id, |t, env| t.guard_resume(env));
                }
                Verdict::Keep => {}
            }
        }
        self.publish_now = true;
        let next = if watching {
            DISK_GUARD_INTERVAL
        } else {
            FREE_SPACE_REFRESH
        };
        self.timers
            .schedule(TimerKey::DiskGuard, Instant::now() + next);
    }

    /// After a state change: start the guard's rounds if a torrent now needs watching and
    /// no round is due within [`DISK_GUARD_INTERVAL`] (the first one also measures for the
    /// status bar, and schedules the slower refresh).
    pub(super) fn disk_guard_wanted(&mut self) {
        let soon = Instant::now() + DISK_GUARD_INTERVAL;
        let due = self.timers.deadline(TimerKey::DiskGuard);
        if due.is_none() {
            self.timers.schedule(TimerKey::DiskGuard, Instant::now());
            return;
        }
        if self.guard.is_on()
            && due.is_some_and(|d| d > soon)
            && self
                .torrents
                .values()
                .any(|t| self.guard.watches(t.state(), t.guarded()))
        {
            self.timers.schedule(TimerKey::DiskGuard, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_download_below_the_minimum_pauses_with_the_numbers_in_the_reason() {
        let g = DiskGuard::new(100 * MIB);
        let v = g.verdict(
            TorrentState::Downloading,
            false,
            Path::new("/data"),
            99 * MIB,
        );
        let Verdict::Pause(reason) = v else {
            panic!("expected a pause, got {v:?}");
        };
        assert!(reason.contains("/data"), "{reason}");
        assert!(reason.contains(&crate::units::size(99 * MIB)), "{reason}");
        assert!(reason.contains(&crate::units::size(100 * MIB)), "{reason}");
        // at the minimum exactly it goes on
        assert_eq!(
            g.verdict(TorrentState::Downloading, false, Path::new("/d"), 100 * MIB),
            Verdict::Keep
        );
    }

    #[test]
    fn a_guarded_download_resumes_only_past_the_margin() {
        let g = DiskGuard::new(100 * MIB);
        let dir = Path::new("/d");
        let paused = TorrentState::Paused;
        assert_eq!(g.verdict(paused, true, dir, 100 * MIB), Verdict::Keep);
        assert_eq!(
            g.verdict(paused, true, dir, 100 * MIB + RESUME_MARGIN - 1),
            Verdict::Keep
        );
        assert_eq!(
            g.verdict(paused, true, dir, 100 * MIB + RESUME_MARGIN),
            Verdict::Resume
        );
    }

    #[test]
    fn seeding_and_paused_by_hand_are_left_alone() {
        let g = DiskGuard::new(100 * MIB);
        let dir = Path::new("/d");
        for state in [
            TorrentState::Seeding,
            TorrentState::Paused,
            TorrentState::Completed,
        ] {
            assert!(!g.watches(state, false), "{state:?}");
            assert_eq!(g.verdict(state, false, dir, 0), Verdict::Keep);
            assert_eq!(g.verdict(state, false, dir, u64::MAX), Verdict::Keep);
        }
        assert!(g.watches(TorrentState::Downloading, false));
        assert!(g.watches(TorrentState::Paused, true));
    }

    #[test]
    fn a_minimum_of_zero_turns_the_guard_off_but_keeps_the_measurement() {
        let mut g = DiskGuard::new(0);
        assert!(!g.is_on());
        assert!(!g.watches(TorrentState::Downloading, false));
        assert_eq!(
            g.verdict(TorrentState::Downloading, false, Path::new("/d"), 0),
            Verdict::Keep
        );
        assert_eq!(g.free_space(), None);
        g.measured(Some(42));
        assert_eq!(g.free_space(), Some(42));
    }

    #[test]
    fn each_folder_is_measured_once_per_round() {
        let mut calls = Vec::new();
        let mut m = Measure::new(|dir: &Path| {
            calls.push(dir.to_path_buf());
            (dir == Path::new("/a")).then_some(7)
        });
        assert_eq!(m.of(Path::new("/a")), Some(7));
        assert_eq!(m.of(Path::new("/b")), None);
        assert_eq!(m.of(Path::new("/a")), Some(7));
        assert_eq!(m.of(Path::new("/b")), None, "an unknown answer is kept too");
        drop(m);
        assert_eq!(calls, [PathBuf::from("/a"), PathBuf::from("/b")]);
    }
}
