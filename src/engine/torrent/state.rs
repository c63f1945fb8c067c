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
    /// Started, but waiting for its turn in the queue (`[queue]` on, its slots taken): out
    /// of the swarm until the session's queue releases it ([`Input::QueueRelease`]).
    Queued {
        /// Complete: it waits for a seeding slot (else a download slot).
        seed: bool,
    },
    /// Its files are being moved to another folder.
    Moving {
        /// Run again once moved.
        resume: bool,
        /// Its data was never checked (added paused): it is paused needing a check again
        /// once moved.
        needs_check: bool,
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
    /// The queue takes its slot: a running torrent waits as [`Lifecycle::Queued`].
    QueueHold,
    /// The queue gives it a slot: a queued torrent runs (the facts say it is not held).
    QueueRelease,
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
    /// The queue holds it: a torrent that would start running now waits as
    /// [`Lifecycle::Queued`] instead (queueing on, not force started, no slot given).
    pub held: bool,
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
            Lifecycle::Queued { seed: false } => TorrentState::QueuedDownload,
            Lifecycle::Queued { seed: true } => TorrentState::QueuedSeed,
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

    /// The running state for a torrent that starts now (or [`Lifecycle::Queued`] when the
    /// queue holds it).
    fn running(facts: Facts, resumed_by_user: bool) -> Lifecycle {
        let serves = facts.seed || resumed_by_user;
        if facts.held && !(facts.complete && !serves && facts.has_metadata()) {
            Lifecycle::Queued {
                seed: facts.complete && facts.has_metadata(),
            }
        } else if let Some(fetch) = facts.fetch {
            Lifecycle::FetchingMetadata { fetch }
        } else if facts.complete {
            if serves {
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
        let seeding = matches!(self, Lifecycle::Seeding { .. });
        let (next, effects): (Lifecycle, Vec<Effect>) = match (&mut *self, input) {
            // --- moving the files
            (
                L::FetchingMetadata { .. } | L::Downloading { .. } | L::Seeding { .. },
                Input::MoveStart(progress),
            ) => (
                L::Moving {
                    resume: true,
                    needs_check: false,
                    guard: None,
                    progress,
                },
                vec![Deactivate(None)],
            ),
            (L::Paused { needs_check, guard }, Input::MoveStart(progress)) => (
                L::Moving {
                    resume: false,
                    needs_check: *needs_check,
                    guard: guard.take(),
                    progress,
                },
                vec![],
            ),
            // a queued torrent was started: it runs (or waits again) once moved
            (L::Queued { .. }, Input::MoveStart(progress)) => (
                L::Moving {
                    resume: true,
                    needs_check: false,
                    guard: None,
                    progress,
                },
                vec![],
            ),
            (L::Completed | L::Error(_), Input::MoveStart(progress)) => (
                L::Moving {
                    resume: false,
                    needs_check: false,
                    guard: None,
                    progress,
                },
                vec![],
            ),
            (
                L::Moving {
                    resume,
                    needs_check,
                    guard,
                    ..
                },
                Input::MoveDone,
            ) => {
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
                            needs_check: *needs_check,
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
            (L::Completed, Input::Resume) if facts.held => (L::Queued { seed: true }, vec![]),
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
            (L::Completed | L::Queued { .. }, Input::Pause) => (L::paused(false), vec![]),

            // --- the queue
            (
                L::FetchingMetadata { .. } | L::Downloading { .. } | L::Seeding { .. },
                Input::QueueHold,
            ) => (L::Queued { seed: seeding }, vec![Deactivate(None)]),
            (L::Queued { .. }, Input::QueueRelease) => {
                let next = Self::running(facts, false);
                let eff = if next.is_running() {
                    vec![Activate]
                } else {
                    vec![]
                };
                (next, eff)
            }

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
            (
                L::Downloading { .. } | L::Seeding { .. } | L::Completed | L::Queued { .. },
                Input::Recheck,
            ) => {
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
mod tests;
