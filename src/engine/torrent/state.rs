//! The torrent's life cycle as one explicit state machine: a pure function from
//! (state, input, facts) to (new state, effects), with no I/O, so every transition is unit
//! tested. The torrent applies the effects (start a check, open the swarm, announce
//! `stopped`, ...).
//!
//! ```text
//!            Start/Resume            slot             check done
//!  Paused ─────────────────► Queued ──────► Checking ───────────► Downloading ──► Seeding
//!    ▲  (needs check)          │                │                     │  complete   │
//!    │                         └── Pause ───────┴──► Paused ◄── Pause ┴─────────────┤
//!    │                                                                              │
//!  Error ◄─────────────── storage error (any running state) ────────────────────────┘
//!    └── Resume: recheck first when files may have changed, else straight back
//! ```
//!
//! `Completed` is a finished torrent that does not serve the swarm (headless `download`
//! without `--seed`, or `seed_after_download = false`); resuming it starts seeding.

use super::jobs::{CheckJob, Fetch, MoveProgress};
use super::live::Live;
use crate::api::{TorrentError, TorrentState};

/// Where a torrent is in its life cycle, with the data and work a state owns: a check (and
/// the storage it reads) exists only in `Checking`, a move's progress only in `Moving`, the
/// state shared with peer connections (and the storage they use) only in `Downloading` and
/// `Seeding`, a magnet link's metadata fetch in `FetchingMetadata` (and, for the hand-over
/// of its connections, through the check that follows), the disk guard's reason only in
/// its pause. Leaving a state drops what it owns (a dropped check stops its thread), or
/// hands it on: a download that completes keeps its connections' state as a seed,
/// [`Effect::Deactivate`] gives that state back to the torrent and [`Effect::HandOver`]
/// the metadata connections. Not `Clone`: there is one check and one shared state per
/// torrent.
#[derive(Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Restored from the session state; its resume data is being compared with its files
    /// (sizes and times, no data read).
    Restoring {
        /// It was paused when the last session ended.
        paused: bool,
    },
    /// Waiting for a check slot (only a few torrents hash at a time).
    QueuedForCheck {
        /// Stay paused once the check is done (a recheck of a paused torrent).
        then_pause: bool,
        /// The metadata fetch of a magnet link whose info dictionary just arrived: its
        /// connections wait for the check, then go on with the full protocol.
        hand_over: Option<Fetch>,
    },
    /// Hashing the data on disk.
    Checking {
        /// Stay paused once the check is done.
        then_pause: bool,
        /// The check running (given with [`Input::CheckSlot`]).
        job: CheckJob,
        /// As in `QueuedForCheck`.
        hand_over: Option<Fetch>,
    },
    /// Fetching the info dictionary from peers (magnet links).
    FetchingMetadata {
        /// The fetch its metadata connections share (given with the [`Facts`]).
        fetch: Fetch,
    },
    /// Fetching pieces.
    Downloading {
        /// What the connections share, from the first peer on until the torrent goes quiet.
        live: Option<Live>,
    },
    /// Complete and serving.
    Seeding {
        /// What the connections share, from the first peer on until the torrent goes quiet.
        live: Option<Live>,
    },
    /// Complete, not serving.
    Completed,
    /// Stopped by the user, or by the disk guard.
    Paused {
        /// The data on disk has not been checked yet (added paused, or paused mid-check).
        needs_check: bool,
        /// Paused by the disk guard (not by the user): the reason shown. The guard resumes
        /// it once space is back ([`Input::GuardResume`]); the user's resume or recheck
        /// leaves the state and so drops it.
        guard: Option<String>,
    },
    /// Stopped by an error; the user resumes or rechecks after fixing it.
    Error(TorrentError),
    /// Its files are being moved to another folder.
    Moving {
        /// Run again once moved.
        resume: bool,
        /// The disk guard's reason when the guard had paused it: it is paused by the guard
        /// again once moved.
        guard: Option<String>,
        /// Bytes moved so far (given with [`Input::MoveStart`]).
        progress: MoveProgress,
    },
}

/// What happened to the torrent.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// The user (or the add) starts it, or resumes it.
    Resume,
    /// The user pauses it.
    Pause,
    /// The disk guard pauses a download: its volume is short of space (the reason shown).
    GuardPause(String),
    /// The disk guard sees space again: resume what it paused (a torrent the user paused
    /// stays paused).
    GuardResume,
    /// The user asks for a recheck.
    Recheck,
    /// A check slot is free for it: the check to run, with the storage it reads (dropped,
    /// so stopped, if the torrent no longer waits for a slot).
    CheckSlot(CheckJob),
    /// The check finished (the torrent has set its verified pieces).
    CheckDone,
    /// The check could not run (e.g. the folder is unreadable, or the storage could not be
    /// opened for it).
    CheckFailed(TorrentError),
    /// The last piece was verified.
    Complete,
    /// A storage fault while running.
    Failed(TorrentError),
    /// Verified pieces turned out missing on disk (a file shrank under a seed).
    PiecesLost,
    /// The metadata of a magnet link arrived and was verified.
    MetadataReady,
    /// A restored torrent's files were compared with its resume data: `trusted` when they
    /// are as recorded (its verified pieces count without a check).
    ResumeData {
        /// The files are as recorded.
        trusted: bool,
    },
    /// Moving its files starts; the mover thread counts its bytes in the progress.
    MoveStart(MoveProgress),
    /// Moving its files ended (moved, or left where they were).
    MoveDone,
}

/// What the torrent must do for a transition, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect {
    /// Ask the session for a check slot (it answers with `Torrent::check_slot`, which
    /// feeds [`Input::CheckSlot`]).
    QueueCheck,
    /// Start hashing the data on disk.
    StartCheck,
    /// Leave the check queue, or give the slot back (the check itself stopped when its
    /// state was left).
    CancelCheck,
    /// The check ended: give the slot back.
    ReleaseCheckSlot,
    /// Drop cached file handles so files are opened afresh (after the user fixed them).
    ReopenFiles,
    /// Join the swarm: announce `started`, accept and dial peers.
    Activate,
    /// Leave the swarm: disconnect peers, stop dialling, announce `stopped` where owed. With
    /// the shared state the running state held (when a peer had come): the torrent keeps
    /// its verified pieces and byte counters from it, then drops it.
    Deactivate(Option<Live>),
    /// Announce `completed` to the trackers that know us.
    AnnounceCompleted,
    /// The check after a magnet link's metadata is over: its metadata connections go on
    /// with the full protocol if the torrent runs, or end.
    HandOver(Fetch),
}

/// What the state machine needs to know about the torrent.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Facts {
    /// Every piece is verified.
    pub complete: bool,
    /// Seed once complete.
    pub seed: bool,
    /// `None`: the info dictionary is known. A magnet link still without it: a fresh fetch,
    /// which [`Lifecycle::FetchingMetadata`] keeps if the torrent starts fetching now
    /// (dropped otherwise).
    pub fetch: Option<Fetch>,
}

impl Facts {
    /// The info dictionary is known.
    pub fn has_metadata(&self) -> bool {
        self.fetch.is_none()
    }
}

impl Lifecycle {
    /// The state a front end shows.
    pub fn ui_state(&self) -> TorrentState {
        match self {
            Lifecycle::Restoring { .. } => TorrentState::Checking,
            Lifecycle::QueuedForCheck { .. } => TorrentState::Queued,
            Lifecycle::Checking { .. } => TorrentState::Checking,
            Lifecycle::FetchingMetadata { .. } => TorrentState::FetchingMetadata,
            Lifecycle::Downloading { .. } => TorrentState::Downloading,
            Lifecycle::Seeding { .. } => TorrentState::Seeding,
            Lifecycle::Completed => TorrentState::Completed,
            Lifecycle::Paused { .. } => TorrentState::Paused,
            Lifecycle::Error(_) => TorrentState::Error,
            Lifecycle::Moving { .. } => TorrentState::Moving,
        }
    }

    /// In the swarm (peers and trackers) in this state.
    pub fn is_running(&self) -> bool {
        matches!(
            self,
            Lifecycle::FetchingMetadata { .. }
                | Lifecycle::Downloading { .. }
                | Lifecycle::Seeding { .. }
        )
    }

    /// The error, in [`Lifecycle::Error`].
    pub fn error(&self) -> Option<&TorrentError> {
        match self {
            Lifecycle::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The check running, in [`Lifecycle::Checking`].
    pub fn check_job(&self) -> Option<&CheckJob> {
        match self {
            Lifecycle::Checking { job, .. } => Some(job),
            _ => None,
        }
    }

    /// The metadata fetch, in [`Lifecycle::FetchingMetadata`].
    pub fn fetch(&self) -> Option<&Fetch> {
        match self {
            Lifecycle::FetchingMetadata { fetch } => Some(fetch),
            _ => None,
        }
    }

    /// Take the metadata connections waiting for the check out of its states.
    fn take_hand_over(&mut self) -> Option<Fetch> {
        match self {
            Lifecycle::QueuedForCheck { hand_over, .. } | Lifecycle::Checking { hand_over, .. } => {
                hand_over.take()
            }
            _ => None,
        }
    }

    /// Waiting for a check slot, no metadata connections waiting.
    pub fn queued(then_pause: bool) -> Lifecycle {
        Lifecycle::QueuedForCheck {
            then_pause,
            hand_over: None,
        }
    }

    /// What the connections share, in a running state once a peer came.
    pub fn live(&self) -> Option<&Live> {
        match self {
            Lifecycle::Downloading { live } | Lifecycle::Seeding { live } => live.as_ref(),
            _ => None,
        }
    }

    /// Where a running state keeps what the connections share (`None` in the other
    /// states: nothing may be shared there).
    pub fn live_slot(&mut self) -> Option<&mut Option<Live>> {
        match self {
            Lifecycle::Downloading { live } | Lifecycle::Seeding { live } => Some(live),
            _ => None,
        }
    }

    /// Take what the connections share out of the state (the torrent goes quiet, or the
    /// session ends).
    pub fn take_live(&mut self) -> Option<Live> {
        self.live_slot().and_then(Option::take)
    }

    /// The storage open in this state: the one a check reads, or the one the connections
    /// use.
    pub fn disk(&self) -> Option<&std::sync::Arc<crate::storage::disk::TorrentDisk>> {
        match self {
            Lifecycle::Checking { job, .. } => Some(job.disk()),
            _ => self.live().map(Live::disk),
        }
    }

    /// A paused torrent, not paused by the disk guard.
    pub fn paused(needs_check: bool) -> Lifecycle {
        Lifecycle::Paused {
            needs_check,
            guard: None,
        }
    }

    /// The disk guard's reason, when the guard paused it (in [`Lifecycle::Paused`], or in
    /// [`Lifecycle::Moving`] when the move started from that pause).
    pub fn guard(&self) -> Option<&str> {
        match self {
            Lifecycle::Paused { guard, .. } | Lifecycle::Moving { guard, .. } => guard.as_deref(),
            _ => None,
        }
    }

    /// The bytes moved so far, in [`Lifecycle::Moving`].
    pub fn move_progress(&self) -> Option<&MoveProgress> {
        match self {
            Lifecycle::Moving { progress, .. } => Some(progress),
            _ => None,
        }
    }

    /// The running state for a torrent that starts now.
    fn running(facts: Facts, resumed_by_user: bool) -> Lifecycle {
        if let Some(fetch) = facts.fetch {
            Lifecycle::FetchingMetadata { fetch }
        } else if facts.complete {
            if facts.seed || resumed_by_user {
                Lifecycle::Seeding { live: None }
            } else {
                Lifecycle::Completed
            }
        } else {
            Lifecycle::Downloading { live: None }
        }
    }

    /// Apply `input`; returns the effects to carry out, in order. Inputs that make no
    /// sense in the current state (pausing a paused torrent, a stale check result) change
    /// nothing and return no effects. What the connections share goes on with a download
    /// that completes (and a seed that lost pieces); leaving the running states hands it
    /// back in [`Effect::Deactivate`]. A magnet link's metadata connections go on from
    /// `FetchingMetadata` through the check, and come back in [`Effect::HandOver`] when it
    /// is over.
    pub fn step(&mut self, input: Input, facts: Facts) -> Vec<Effect> {
        use Effect::*;
        use Lifecycle as L;
        let running = self.is_running();
        let (next, effects): (Lifecycle, Vec<Effect>) = match (&mut *self, input) {
            // --- moving the files
            (
                L::FetchingMetadata { .. } | L::Downloading { .. } | L::Seeding { .. },
                Input::MoveStart(progress),
            ) => (
                L::Moving {
                    resume: true,
                    guard: None,
                    progress,
                },
                vec![Deactivate(None)],
            ),
            (
                L::Paused {
                    needs_check: false,
                    guard,
                },
                Input::MoveStart(progress),
            ) => (
                L::Moving {
                    resume: false,
                    guard: guard.take(),
                    progress,
                },
                vec![],
            ),
            (L::Completed | L::Error(_), Input::MoveStart(progress)) => (
                L::Moving {
                    resume: false,
                    guard: None,
                    progress,
                },
                vec![],
            ),
            (L::Moving { resume, guard, .. }, Input::MoveDone) => {
                if *resume {
                    let next = Self::running(facts, false);
                    let eff = if next.is_running() {
                        vec![Activate]
                    } else {
                        vec![]
                    };
                    (next, eff)
                } else {
                    (
                        L::Paused {
                            needs_check: false,
                            guard: guard.take(),
                        },
                        vec![],
                    )
                }
            }
            // the move goes on; the user's word (or the guard's resume) ends the guard's pause
            (L::Moving { guard, .. }, Input::Resume | Input::Recheck | Input::GuardResume) => {
                *guard = None;
                return Vec::new();
            }
            (L::Moving { .. }, _) => return Vec::new(),
            // --- restored from the session state
            (L::Restoring { paused }, Input::ResumeData { trusted }) => match (*paused, trusted) {
                (true, true) => (L::paused(false), vec![]),
                (true, false) => (L::paused(true), vec![]),
                (false, false) => (L::queued(false), vec![QueueCheck]),
                (false, true) => {
                    let next = Self::running(facts, false);
                    let eff = if next.is_running() {
                        vec![Activate]
                    } else {
                        vec![]
                    };
                    (next, eff)
                }
            },
            (L::Restoring { .. }, Input::Pause) => (L::Restoring { paused: true }, vec![]),
            (L::Restoring { .. }, Input::Resume) => (L::Restoring { paused: false }, vec![]),

            // --- resume / start
            // a magnet link: nothing on disk to check before the metadata is here
            (L::Paused { .. } | L::Error(_), Input::Resume) if !facts.has_metadata() => {
                (Self::running(facts, false), vec![Activate])
            }
            (_, Input::Recheck) if !facts.has_metadata() => return Vec::new(),
            // the user paused it: the guard does not resume it
            (L::Paused { guard: None, .. }, Input::GuardResume) => return Vec::new(),
            (
                L::Paused {
                    needs_check: true, ..
                },
                Input::Resume,
            ) => (L::queued(false), vec![QueueCheck]),
            (
                L::Paused {
                    needs_check: false, ..
                },
                Input::Resume | Input::GuardResume,
            ) => {
                let next = Self::running(facts, false);
                let eff = if next.is_running() {
                    vec![Activate]
                } else {
                    vec![]
                };
                (next, eff)
            }
            (L::Completed, Input::Resume) => (L::Seeding { live: None }, vec![Activate]),
            (L::Error(e), Input::Resume) => {
                if e.kind.needs_recheck() {
                    (L::queued(false), vec![ReopenFiles, QueueCheck])
                } else {
                    let next = Self::running(facts, false);
                    let eff = if next.is_running() {
                        vec![ReopenFiles, Activate]
                    } else {
                        vec![ReopenFiles]
                    };
                    (next, eff)
                }
            }
            (L::QueuedForCheck { then_pause, .. }, Input::Resume) => {
                *then_pause = false;
                return Vec::new();
            }
            (L::Checking { then_pause, .. }, Input::Resume) => {
                // the same check goes on
                *then_pause = false;
                return Vec::new();
            }

            // --- pause
            (
                L::QueuedForCheck {
                    then_pause: false, ..
                },
                Input::Pause,
            )
            | (
                L::Checking {
                    then_pause: false, ..
                },
                Input::Pause,
            ) => (L::paused(true), vec![CancelCheck]),
            (
                L::FetchingMetadata { .. } | L::Downloading { .. } | L::Seeding { .. },
                Input::Pause,
            ) => (L::paused(false), vec![Deactivate(None)]),
            (L::Downloading { .. }, Input::GuardPause(reason)) => (
                L::Paused {
                    needs_check: false,
                    guard: Some(reason),
                },
                vec![Deactivate(None)],
            ),
            (L::Completed, Input::Pause) => (L::paused(false), vec![]),

            // --- recheck
            (L::QueuedForCheck { .. }, Input::Recheck) => return Vec::new(),
            (
                L::Checking {
                    then_pause,
                    hand_over,
                    ..
                },
                Input::Recheck,
            ) => {
                // start over (the running check stops with its state)
                (
                    L::QueuedForCheck {
                        then_pause: *then_pause,
                        hand_over: hand_over.take(),
                    },
                    vec![CancelCheck, QueueCheck],
                )
            }
            (L::FetchingMetadata { .. }, Input::Recheck) => return Vec::new(),
            (L::Paused { .. }, Input::Recheck) => (L::queued(true), vec![QueueCheck]),
            (L::Error(_), Input::Recheck) => (L::queued(false), vec![ReopenFiles, QueueCheck]),
            (L::Downloading { .. } | L::Seeding { .. } | L::Completed, Input::Recheck) => {
                let mut eff = Vec::new();
                if running {
                    eff.push(Deactivate(None));
                }
                eff.push(QueueCheck);
                (L::queued(false), eff)
            }

            // --- checking
            (
                L::QueuedForCheck {
                    then_pause,
                    hand_over,
                },
                Input::CheckSlot(job),
            ) => (
                L::Checking {
                    then_pause: *then_pause,
                    job,
                    hand_over: hand_over.take(),
                },
                vec![StartCheck],
            ),
            (
                L::Checking {
                    then_pause: true, ..
                },
                Input::CheckDone,
            ) => (L::paused(false), vec![ReleaseCheckSlot]),
            (
                L::Checking {
                    then_pause: false, ..
                },
                Input::CheckDone,
            ) => {
                let next = Self::running(facts, false);
                let eff = if next.is_running() {
                    vec![ReleaseCheckSlot, Activate]
                } else {
                    vec![ReleaseCheckSlot]
                };
                (next, eff)
            }
            // the check failed, or its storage could not be opened when the slot came
            (L::QueuedForCheck { .. } | L::Checking { .. }, Input::CheckFailed(e)) => {
                (L::Error(e), vec![ReleaseCheckSlot])
            }

            // --- while running
            (L::Downloading { live }, Input::Complete) => {
                if facts.seed {
                    (L::Seeding { live: live.take() }, vec![AnnounceCompleted])
                } else {
                    (L::Completed, vec![AnnounceCompleted, Deactivate(None)])
                }
            }
            (L::Seeding { live }, Input::PiecesLost) => {
                (L::Downloading { live: live.take() }, vec![])
            }
            (L::Completed, Input::PiecesLost) => (L::Downloading { live: None }, vec![Activate]),
            // the metadata connections wait for the check; trackers and known addresses
            // stay (no `stopped`): the check is quick, then the download starts
            (L::FetchingMetadata { fetch }, Input::MetadataReady) => (
                L::QueuedForCheck {
                    then_pause: false,
                    hand_over: Some(fetch.clone()),
                },
                vec![QueueCheck],
            ),

            // --- faults
            (L::Error(_), Input::Failed(_)) => return Vec::new(),
            (L::QueuedForCheck { .. } | L::Checking { .. }, Input::Failed(e)) => {
                (L::Error(e), vec![CancelCheck])
            }
            (_, Input::Failed(e)) => {
                let eff = if running {
                    vec![Deactivate(None)]
                } else {
                    vec![]
                };
                (L::Error(e), eff)
            }

            // anything else: ignored
            _ => return Vec::new(),
        };
        // what the state left shared with its connections (a state that goes on took it)
        // goes back to the torrent with the effect that leaves the swarm
        let mut released = self.take_live();
        // the check is over (or given up): its metadata connections come back last
        let hand_over = self.take_hand_over();
        *self = next;
        effects
            .into_iter()
            .map(|e| match e {
                Deactivate(None) => Deactivate(released.take()),
                e => e,
            })
            .chain(hand_over.map(HandOver))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TorrentErrorKind;
    use crate::engine::torrent::live::fixture;
    use Effect::*;
    use std::sync::atomic::Ordering;

    const DL: Facts = Facts {
        complete: false,
        seed: true,
        fetch: None,
    };
    const DONE: Facts = Facts {
        complete: true,
        seed: true,
        fetch: None,
    };
    const DONE_NO_SEED: Facts = Facts {
        complete: true,
        seed: false,
        fetch: None,
    };

    fn err(kind: TorrentErrorKind) -> TorrentError {
        TorrentError {
            kind,
            message: "x".into(),
        }
    }

    fn job(key: u64) -> CheckJob {
        CheckJob::new(key, fixture::disk(key))
    }

    fn checking(then_pause: bool) -> Lifecycle {
        Lifecycle::Checking {
            then_pause,
            job: job(1),
            hand_over: None,
        }
    }

    fn slot() -> Input {
        Input::CheckSlot(job(1))
    }

    fn move_start() -> Input {
        Input::MoveStart(MoveProgress::default())
    }

    fn new() -> Lifecycle {
        Lifecycle::paused(true)
    }

    #[test]
    fn add_check_download_complete_seed() {
        let mut s = new();
        assert_eq!(s.step(Input::Resume, DL), vec![QueueCheck]);
        assert_eq!(s.ui_state(), TorrentState::Queued);
        assert_eq!(s.step(slot(), DL), vec![StartCheck]);
        assert_eq!(s.ui_state(), TorrentState::Checking);
        assert_eq!(
            s.step(Input::CheckDone, DL),
            vec![ReleaseCheckSlot, Activate]
        );
        assert_eq!(s, Lifecycle::Downloading { live: None });
        assert_eq!(s.step(Input::Complete, DONE), vec![AnnounceCompleted]);
        assert_eq!(s, Lifecycle::Seeding { live: None });
        assert!(s.step(Input::Complete, DONE).is_empty(), "complete once");
    }

    #[test]
    fn complete_without_seeding_leaves_the_swarm_and_resume_seeds() {
        let mut s = Lifecycle::Downloading { live: None };
        assert_eq!(
            s.step(Input::Complete, DONE_NO_SEED),
            vec![AnnounceCompleted, Deactivate(None)]
        );
        assert_eq!(s, Lifecycle::Completed);
        assert_eq!(s.step(Input::Resume, DONE_NO_SEED), vec![Activate]);
        assert_eq!(s, Lifecycle::Seeding { live: None });
    }

    #[test]
    fn found_complete_at_check() {
        let mut s = checking(false);
        assert_eq!(
            s.step(Input::CheckDone, DONE),
            vec![ReleaseCheckSlot, Activate]
        );
        assert_eq!(s, Lifecycle::Seeding { live: None });
        let mut s = checking(false);
        assert_eq!(
            s.step(Input::CheckDone, DONE_NO_SEED),
            vec![ReleaseCheckSlot]
        );
        assert_eq!(s, Lifecycle::Completed);
    }

    #[test]
    fn pause_in_every_state() {
        for (mut s, eff, after) in [
            (
                Lifecycle::queued(false),
                vec![CancelCheck],
                Lifecycle::paused(true),
            ),
            (checking(false), vec![CancelCheck], Lifecycle::paused(true)),
            (
                Lifecycle::Downloading { live: None },
                vec![Deactivate(None)],
                Lifecycle::paused(false),
            ),
            (
                Lifecycle::Seeding { live: None },
                vec![Deactivate(None)],
                Lifecycle::paused(false),
            ),
            (fetching(), vec![Deactivate(None)], Lifecycle::paused(false)),
            (Lifecycle::Completed, vec![], Lifecycle::paused(false)),
        ] {
            assert_eq!(s.step(Input::Pause, DL), eff, "{after:?}");
            assert_eq!(s, after);
            assert!(
                s.step(Input::Pause, DL).is_empty(),
                "pausing twice is a no-op"
            );
        }
        let mut e = Lifecycle::Error(err(TorrentErrorKind::NoSpace));
        assert!(e.step(Input::Pause, DL).is_empty());
        assert_eq!(e.ui_state(), TorrentState::Error);
    }

    #[test]
    fn resume_after_pause() {
        let mut s = Lifecycle::paused(false);
        assert_eq!(s.step(Input::Resume, DL), vec![Activate]);
        assert_eq!(s, Lifecycle::Downloading { live: None });
        let mut s = Lifecycle::paused(false);
        assert_eq!(s.step(Input::Resume, DONE_NO_SEED), vec![]);
        assert_eq!(s, Lifecycle::Completed);
    }

    #[test]
    fn errors_are_recoverable() {
        // disk full while downloading: resume goes straight back, files reopened
        let mut s = Lifecycle::Downloading { live: None };
        assert_eq!(
            s.step(Input::Failed(err(TorrentErrorKind::NoSpace)), DL),
            vec![Deactivate(None)]
        );
        assert_eq!(s.error().unwrap().kind, TorrentErrorKind::NoSpace);
        assert!(
            s.step(Input::Failed(err(TorrentErrorKind::Storage)), DL)
                .is_empty(),
            "first error kept"
        );
        assert_eq!(s.step(Input::Resume, DL), vec![ReopenFiles, Activate]);
        assert_eq!(s, Lifecycle::Downloading { live: None });
        // files deleted: resume rechecks first
        let mut s = Lifecycle::Seeding { live: None };
        s.step(Input::Failed(err(TorrentErrorKind::FilesMissing)), DONE);
        assert_eq!(s.step(Input::Resume, DONE), vec![ReopenFiles, QueueCheck]);
        assert_eq!(s, Lifecycle::queued(false));
        // an explicit recheck from Error
        let mut s = Lifecycle::Error(err(TorrentErrorKind::PermissionDenied));
        assert_eq!(s.step(Input::Recheck, DL), vec![ReopenFiles, QueueCheck]);
        // a check that cannot run
        let mut s = checking(false);
        assert_eq!(
            s.step(
                Input::CheckFailed(err(TorrentErrorKind::PermissionDenied)),
                DL
            ),
            vec![ReleaseCheckSlot]
        );
        assert_eq!(s.ui_state(), TorrentState::Error);
        // a fault while queued or checking cancels the check
        let mut s = checking(false);
        assert_eq!(
            s.step(Input::Failed(err(TorrentErrorKind::Storage)), DL),
            vec![CancelCheck]
        );
    }

    #[test]
    fn recheck_from_each_state() {
        let mut s = Lifecycle::Seeding { live: None };
        assert_eq!(
            s.step(Input::Recheck, DONE),
            vec![Deactivate(None), QueueCheck]
        );
        assert_eq!(s, Lifecycle::queued(false));
        let mut s = Lifecycle::paused(false);
        assert_eq!(s.step(Input::Recheck, DL), vec![QueueCheck]);
        s.step(slot(), DL);
        assert_eq!(s.step(Input::CheckDone, DL), vec![ReleaseCheckSlot]);
        assert_eq!(
            s,
            Lifecycle::paused(false),
            "a paused torrent stays paused after its recheck"
        );
        let mut s = checking(false);
        assert_eq!(s.step(Input::Recheck, DL), vec![CancelCheck, QueueCheck]);
        let mut s = Lifecycle::Completed;
        assert_eq!(s.step(Input::Recheck, DONE), vec![QueueCheck]);
        // resume during a paused recheck: run once it is done
        let mut s = checking(true);
        assert!(s.step(Input::Resume, DL).is_empty());
        assert_eq!(
            s.step(Input::CheckDone, DL),
            vec![ReleaseCheckSlot, Activate]
        );
    }

    #[test]
    fn lost_pieces_and_stale_inputs() {
        let mut s = Lifecycle::Seeding { live: None };
        assert!(s.step(Input::PiecesLost, DL).is_empty());
        assert_eq!(s, Lifecycle::Downloading { live: None });
        let mut s = Lifecycle::Completed;
        assert_eq!(s.step(Input::PiecesLost, DL), vec![Activate]);
        // a check result after the user paused: ignored
        let mut s = Lifecycle::paused(true);
        assert!(s.step(Input::CheckDone, DL).is_empty());
        assert!(s.step(slot(), DL).is_empty());
        assert!(s.step(Input::Complete, DONE).is_empty());
        assert_eq!(s, Lifecycle::paused(true));
    }

    #[test]
    fn restored_torrents_come_back_without_a_check_when_their_files_match() {
        let mut s = Lifecycle::Restoring { paused: false };
        assert_eq!(s.ui_state(), TorrentState::Checking);
        assert_eq!(
            s.step(Input::ResumeData { trusted: true }, DONE),
            vec![Activate]
        );
        assert_eq!(s, Lifecycle::Seeding { live: None });
        let mut s = Lifecycle::Restoring { paused: false };
        assert_eq!(
            s.step(Input::ResumeData { trusted: false }, DL),
            vec![QueueCheck]
        );
        let mut s = Lifecycle::Restoring { paused: true };
        assert!(s.step(Input::ResumeData { trusted: true }, DL).is_empty());
        assert_eq!(s, Lifecycle::paused(false));
        let mut s = Lifecycle::Restoring { paused: true };
        s.step(Input::ResumeData { trusted: false }, DL);
        assert_eq!(s, Lifecycle::paused(true));
        // the user acts before the comparison is done
        let mut s = Lifecycle::Restoring { paused: false };
        assert!(s.step(Input::Pause, DL).is_empty());
        assert_eq!(s, Lifecycle::Restoring { paused: true });
        assert!(s.step(Input::Resume, DL).is_empty());
        assert_eq!(
            s.step(Input::ResumeData { trusted: true }, DL),
            vec![Activate]
        );
        assert_eq!(s, Lifecycle::Downloading { live: None });
        let mut s = Lifecycle::Restoring { paused: false };
        s.step(Input::Failed(err(TorrentErrorKind::Storage)), DL);
        assert_eq!(s.ui_state(), TorrentState::Error);
    }

    #[test]
    fn moving_stops_the_swarm_and_comes_back_to_it() {
        let mut s = Lifecycle::Seeding { live: None };
        assert_eq!(s.step(move_start(), DONE), vec![Deactivate(None)]);
        assert_eq!(s.ui_state(), TorrentState::Moving);
        assert!(
            s.step(Input::Pause, DONE).is_empty(),
            "nothing else while moving"
        );
        assert!(s.step(Input::Recheck, DONE).is_empty());
        assert_eq!(s.step(Input::MoveDone, DONE), vec![Activate]);
        assert_eq!(s, Lifecycle::Seeding { live: None });
        let mut s = Lifecycle::paused(false);
        assert!(s.step(move_start(), DL).is_empty());
        assert!(s.step(Input::MoveDone, DL).is_empty());
        assert_eq!(s, Lifecycle::paused(false));
        let mut s = checking(false);
        assert!(s.step(move_start(), DL).is_empty(), "not while checking");
    }

    fn no_meta() -> Facts {
        Facts {
            fetch: Some(fixture::fetch()),
            ..DL
        }
    }

    fn fetching() -> Lifecycle {
        Lifecycle::FetchingMetadata {
            fetch: fixture::fetch(),
        }
    }

    #[test]
    fn magnet_metadata() {
        // a magnet link added (paused, unchecked) or paused starts fetching at once
        for start in [
            Lifecycle::paused(true),
            Lifecycle::paused(false),
            Lifecycle::Error(err(TorrentErrorKind::BadMetadata)),
        ] {
            let mut s = start;
            assert_eq!(s.step(Input::Resume, no_meta()), vec![Activate]);
            assert_eq!(s.ui_state(), TorrentState::FetchingMetadata);
        }
        let mut s = fetching();
        // nothing to recheck yet
        assert!(s.step(Input::Recheck, no_meta()).is_empty());
        assert_eq!(s.ui_state(), TorrentState::FetchingMetadata);
        let mut p = Lifecycle::paused(true);
        assert!(p.step(Input::Recheck, no_meta()).is_empty());
        // metadata: check (no stopped announce), then download
        assert_eq!(s.step(Input::MetadataReady, DL), vec![QueueCheck]);
        assert_eq!(s.step(slot(), DL), vec![StartCheck]);
        let eff = s.step(Input::CheckDone, DL);
        assert_eq!(eff[..2], [ReleaseCheckSlot, Activate]);
        assert!(matches!(eff[2], HandOver(_)), "{eff:?}");
        assert_eq!(s, Lifecycle::Downloading { live: None });
        // pausing while fetching
        let mut s = fetching();
        assert_eq!(s.step(Input::Pause, no_meta()), vec![Deactivate(None)]);
    }

    #[test]
    fn the_fetch_lives_in_its_state_and_its_connections_wait_for_the_check() {
        // a magnet link starts: the fetch given with the facts is the state's
        let facts = no_meta();
        let given = facts.fetch.clone().unwrap();
        let mut s = Lifecycle::paused(true);
        assert_eq!(s.step(Input::Resume, facts), vec![Activate]);
        assert_eq!(s.fetch(), Some(&given));
        // a known torrent gets none
        let mut k = Lifecycle::paused(false);
        k.step(Input::Resume, DL);
        assert!(k.fetch().is_none());
        // the metadata arrives: the fetch goes through the queue and the check
        assert_eq!(s.step(Input::MetadataReady, DL), vec![QueueCheck]);
        assert!(s.fetch().is_none(), "no longer fetching");
        assert!(s.step(Input::Resume, DL).is_empty(), "still queued");
        assert_eq!(s.step(slot(), DL), vec![StartCheck]);
        // a recheck starts the check over, the connections still wait
        assert_eq!(s.step(Input::Recheck, DL), vec![CancelCheck, QueueCheck]);
        assert_eq!(s.step(slot(), DL), vec![StartCheck]);
        // the check is done: they come back, last, to go on with the full protocol
        let eff = s.step(Input::CheckDone, DONE);
        assert_eq!(eff.len(), 3);
        assert_eq!(eff.last(), Some(&HandOver(given.clone())));
        assert_eq!(s, Lifecycle::Seeding { live: None });
        // pausing during the check hands them back too (to be closed)
        let mut s = fetching();
        let f = s.fetch().unwrap().clone();
        s.step(Input::MetadataReady, DL);
        assert_eq!(
            s.step(Input::Pause, DL),
            vec![CancelCheck, HandOver(f.clone())]
        );
        assert_eq!(s, Lifecycle::paused(true));
        // and a fault
        let mut s = fetching();
        let f = s.fetch().unwrap().clone();
        s.step(Input::MetadataReady, DL);
        assert_eq!(
            s.step(Input::Failed(err(TorrentErrorKind::Storage)), DL),
            vec![CancelCheck, HandOver(f)]
        );
    }

    #[test]
    fn the_check_lives_in_the_checking_state() {
        let mut s = Lifecycle::paused(true);
        s.step(Input::Resume, DL);
        let job = job(9);
        let h = job.handles();
        assert_eq!(s.step(Input::CheckSlot(job), DL), vec![StartCheck]);
        assert_eq!(s.check_job().map(CheckJob::key), Some(9));
        // resuming a paused recheck keeps the same check running
        let mut p = checking(true);
        let ph = p.check_job().unwrap().handles();
        assert!(p.step(Input::Resume, DL).is_empty());
        assert_eq!(p.check_job().map(CheckJob::key), Some(1));
        assert!(!ph.cancel.load(Ordering::Relaxed), "still running");
        // leaving the state stops it
        assert_eq!(s.step(Input::Pause, DL), vec![CancelCheck]);
        assert!(s.check_job().is_none());
        assert!(
            h.cancel.load(Ordering::Relaxed),
            "the thread is told to stop"
        );
    }

    #[test]
    fn a_recheck_replaces_the_running_check() {
        let mut s = checking(false);
        let old = s.check_job().unwrap().handles();
        assert_eq!(s.step(Input::Recheck, DL), vec![CancelCheck, QueueCheck]);
        assert!(old.cancel.load(Ordering::Relaxed), "the old check stops");
        assert!(s.check_job().is_none(), "queued: no check yet");
        assert_eq!(s.step(Input::CheckSlot(job(2)), DL), vec![StartCheck]);
        assert_eq!(s.check_job().map(CheckJob::key), Some(2));
    }

    #[test]
    fn a_slot_that_comes_too_late_drops_its_check() {
        let mut s = Lifecycle::paused(true);
        let job = job(3);
        let h = job.handles();
        assert!(s.step(Input::CheckSlot(job), DL).is_empty());
        assert!(h.cancel.load(Ordering::Relaxed));
        assert!(s.check_job().is_none());
    }

    #[test]
    fn the_move_progress_lives_in_the_moving_state() {
        let mut s = Lifecycle::Downloading { live: None };
        let progress = MoveProgress::default();
        s.step(Input::MoveStart(progress.clone()), DL);
        progress
            .counter()
            .fetch_add(1000, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(s.move_progress().map(MoveProgress::moved), Some(1000));
        assert_eq!(s.check_job(), None);
        assert_eq!(s.step(Input::MoveDone, DL), vec![Activate]);
        assert!(s.move_progress().is_none(), "gone with the state");
        // a move refused (checking) keeps no progress
        let mut c = checking(false);
        assert!(c.step(move_start(), DL).is_empty());
        assert!(c.move_progress().is_none());
    }

    fn guard_paused(reason: &str) -> Lifecycle {
        Lifecycle::Paused {
            needs_check: false,
            guard: Some(reason.into()),
        }
    }

    #[test]
    fn the_guards_reason_lives_in_its_pause() {
        let mut s = Lifecycle::Downloading { live: None };
        assert_eq!(
            s.step(Input::GuardPause("full".into()), DL),
            vec![Deactivate(None)]
        );
        assert_eq!(s, guard_paused("full"));
        assert_eq!(s.guard(), Some("full"));
        assert_eq!(s.ui_state(), TorrentState::Paused);
        // space is back: the guard resumes it, and its reason goes with the pause
        assert_eq!(s.step(Input::GuardResume, DL), vec![Activate]);
        assert_eq!(s, Lifecycle::Downloading { live: None });
        assert_eq!(s.guard(), None);
        // the guard pauses downloads only
        for mut s in [
            Lifecycle::Seeding { live: None },
            fetching(),
            Lifecycle::paused(false),
            checking(false),
        ] {
            assert!(s.step(Input::GuardPause("full".into()), DL).is_empty());
            assert_eq!(s.guard(), None);
        }
    }

    #[test]
    fn the_guard_does_not_resume_what_the_user_paused() {
        let mut s = Lifecycle::paused(false);
        assert!(s.step(Input::GuardResume, DL).is_empty());
        assert_eq!(s, Lifecycle::paused(false));
        // the user's resume or recheck of a guarded pause drops the reason
        let mut s = guard_paused("full");
        assert_eq!(s.step(Input::Resume, DL), vec![Activate]);
        assert_eq!(s.guard(), None);
        let mut s = guard_paused("full");
        assert_eq!(s.step(Input::Recheck, DL), vec![QueueCheck]);
        assert_eq!(s.guard(), None);
        // and a user pause after the guard's is the user's (the guard no longer resumes it)
        let mut s = guard_paused("full");
        assert!(s.step(Input::Pause, DL).is_empty());
        assert_eq!(
            s.guard(),
            Some("full"),
            "pausing a paused torrent changes nothing"
        );
    }

    #[test]
    fn a_move_carries_the_guards_pause() {
        let mut s = guard_paused("full");
        assert!(s.step(move_start(), DL).is_empty());
        assert_eq!(s.ui_state(), TorrentState::Moving);
        assert_eq!(s.guard(), Some("full"));
        assert!(s.step(Input::MoveDone, DL).is_empty());
        assert_eq!(
            s,
            guard_paused("full"),
            "paused by the guard again once moved"
        );
        // the guard's resume during the move ends its pause; the move goes on
        let mut s = guard_paused("full");
        s.step(move_start(), DL);
        assert!(s.step(Input::GuardResume, DL).is_empty());
        assert_eq!(s.ui_state(), TorrentState::Moving);
        assert_eq!(s.guard(), None);
        assert!(s.step(Input::MoveDone, DL).is_empty());
        assert_eq!(s, Lifecycle::paused(false));
        // a move out of a running state has no guard
        let mut s = Lifecycle::Downloading { live: None };
        s.step(move_start(), DL);
        assert_eq!(s.guard(), None);
    }

    fn live_download(key: u64) -> Lifecycle {
        Lifecycle::Downloading {
            live: Some(fixture::live(key)),
        }
    }

    /// The shared state an effect list hands back, if any.
    fn handed_back(effects: Vec<Effect>) -> Option<Live> {
        effects.into_iter().find_map(|e| match e {
            Deactivate(live) => live,
            _ => None,
        })
    }

    #[test]
    fn the_shared_state_lives_in_the_running_states() {
        let s = live_download(4);
        assert_eq!(s.live().map(|l| l.disk().key), Some(4));
        assert_eq!(
            s.disk().map(|d| d.key),
            Some(4),
            "its storage is the live one"
        );
        // no other state can hold one
        for mut s in [
            Lifecycle::paused(false),
            Lifecycle::Completed,
            fetching(),
            Lifecycle::queued(false),
            Lifecycle::Error(err(TorrentErrorKind::Storage)),
        ] {
            assert!(s.live_slot().is_none(), "{s:?}");
            assert!(s.disk().is_none(), "{s:?}");
        }
        // a running state without peers holds nothing yet
        let mut s = Lifecycle::Seeding { live: None };
        assert_eq!(s.live_slot(), Some(&mut None));
        assert!(s.take_live().is_none());
    }

    #[test]
    fn leaving_the_swarm_hands_the_shared_state_back() {
        let leave: Vec<(Input, Facts)> = vec![
            (Input::Pause, DL),
            (Input::GuardPause("full".into()), DL),
            (Input::Recheck, DL),
            (Input::Failed(err(TorrentErrorKind::NoSpace)), DL),
            (move_start(), DL),
            (Input::Complete, DONE_NO_SEED),
        ];
        for (input, facts) in leave {
            let mut s = live_download(7);
            let what = format!("{input:?}");
            let back = handed_back(s.step(input, facts)).expect(&what);
            assert_eq!(back.disk().key, 7, "{what}");
            assert!(s.live().is_none() && s.disk().is_none(), "{what}: {s:?}");
        }
        // without peers there is nothing to hand back
        let mut s = Lifecycle::Downloading { live: None };
        assert_eq!(s.step(Input::Pause, DL), vec![Deactivate(None)]);
    }

    #[test]
    fn completing_keeps_the_shared_state_and_losing_pieces_too() {
        let mut s = live_download(3);
        let held = s.live().unwrap().shared().clone();
        assert_eq!(s.step(Input::Complete, DONE), vec![AnnounceCompleted]);
        assert_eq!(s.ui_state(), TorrentState::Seeding);
        assert!(
            std::sync::Arc::ptr_eq(s.live().unwrap().shared(), &held),
            "the seed serves with the same state"
        );
        assert!(s.step(Input::PiecesLost, DL).is_empty());
        assert_eq!(s.ui_state(), TorrentState::Downloading);
        assert!(std::sync::Arc::ptr_eq(s.live().unwrap().shared(), &held));
        // the torrent goes quiet: it takes the state out, the download goes on
        assert!(s.take_live().is_some());
        assert_eq!(s, Lifecycle::Downloading { live: None });
        // inputs that change nothing keep it
        let mut s = live_download(3);
        assert!(s.step(Input::Resume, DL).is_empty());
        assert!(s.step(Input::MetadataReady, DL).is_empty());
        assert!(s.live().is_some());
    }

    #[test]
    fn a_check_holds_its_storage_and_drops_it_when_done() {
        let mut s = Lifecycle::queued(false);
        assert!(s.disk().is_none(), "queued: nothing open yet");
        let job = job(8);
        let disk = job.disk().clone();
        assert_eq!(s.step(Input::CheckSlot(job), DL), vec![StartCheck]);
        assert!(std::sync::Arc::ptr_eq(s.disk().unwrap(), &disk));
        assert!(s.live_slot().is_none(), "no connections while checking");
        assert_eq!(
            s.step(Input::CheckDone, DL),
            vec![ReleaseCheckSlot, Activate]
        );
        assert_eq!(s, Lifecycle::Downloading { live: None });
        assert!(s.disk().is_none(), "opened again when a peer comes");
        assert_eq!(
            std::sync::Arc::strong_count(&disk),
            1,
            "the check's storage went with its state"
        );
        // the storage could not be opened when the slot came
        let mut s = Lifecycle::queued(true);
        assert_eq!(
            s.step(
                Input::CheckFailed(err(TorrentErrorKind::PermissionDenied)),
                DL
            ),
            vec![ReleaseCheckSlot]
        );
        assert_eq!(s.ui_state(), TorrentState::Error);
    }
}
