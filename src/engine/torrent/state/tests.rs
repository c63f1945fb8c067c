//! The life-cycle state machine's tests: transitions, effects, and what each state owns.

use super::*;
use crate::api::TorrentErrorKind;
use crate::engine::torrent::live::fixture;
use Effect::*;
use std::sync::atomic::Ordering;

const DL: Facts = Facts {
    complete: false,
    seed: true,
    fetch: None,
    held: false,
};
const DONE: Facts = Facts {
    complete: true,
    seed: true,
    fetch: None,
    held: false,
};
const DONE_NO_SEED: Facts = Facts {
    complete: true,
    seed: false,
    fetch: None,
    held: false,
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
    // added paused, never checked: it moves, and still needs its check after
    let mut s = Lifecycle::paused(true);
    assert!(s.step(move_start(), DL).is_empty());
    assert_eq!(s.ui_state(), TorrentState::Moving);
    assert!(s.step(Input::MoveDone, DL).is_empty());
    assert_eq!(s, Lifecycle::paused(true));
    assert_eq!(
        s.step(Input::Resume, DL),
        vec![QueueCheck],
        "checked on resume"
    );
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

const HELD: Facts = Facts {
    complete: false,
    seed: true,
    fetch: None,
    held: true,
};

#[test]
fn a_held_start_waits_queued_and_a_release_runs_it() {
    let mut s = Lifecycle::paused(false);
    assert!(
        s.step(Input::Resume, HELD).is_empty(),
        "no swarm while queued"
    );
    assert_eq!(s, Lifecycle::Queued { seed: false });
    assert_eq!(s.ui_state(), TorrentState::QueuedDownload);
    // a resume changes nothing: the queue decides
    assert!(s.step(Input::Resume, HELD).is_empty());
    assert_eq!(s.step(Input::QueueRelease, DL), vec![Activate]);
    assert!(matches!(s, Lifecycle::Downloading { .. }));
    // the queue takes the slot back: it leaves the swarm
    assert_eq!(s.step(Input::QueueHold, DL), vec![Deactivate(None)]);
    assert_eq!(s, Lifecycle::Queued { seed: false });
    // paused by the user from the queue: paused, no check needed
    assert!(s.step(Input::Pause, DL).is_empty());
    assert_eq!(s, Lifecycle::paused(false));
}

#[test]
fn a_held_seed_waits_for_a_seeding_slot_and_a_completed_torrent_stays_completed() {
    let held_done = Facts { held: true, ..DONE };
    let mut s = Lifecycle::paused(false);
    s.step(Input::Resume, held_done);
    assert_eq!(s.ui_state(), TorrentState::QueuedSeed);
    let mut seeding = Lifecycle::Seeding { live: None };
    seeding.step(Input::QueueHold, DONE);
    assert_eq!(seeding, Lifecycle::Queued { seed: true });
    // a completed (not serving) torrent does not compete for a slot when its check ends
    let mut c = checking(false);
    c.step(
        Input::CheckDone,
        Facts {
            held: true,
            ..DONE_NO_SEED
        },
    );
    assert_eq!(c, Lifecycle::Completed);
    // resuming it by hand makes it a seed: held, it waits
    assert!(
        c.step(
            Input::Resume,
            Facts {
                held: true,
                ..DONE_NO_SEED
            }
        )
        .is_empty()
    );
    assert_eq!(c, Lifecycle::Queued { seed: true });
}

#[test]
fn a_check_that_ends_while_held_queues_and_a_queued_torrent_can_be_rechecked_or_moved() {
    let mut s = checking(false);
    assert_eq!(s.step(Input::CheckDone, HELD), vec![ReleaseCheckSlot]);
    assert_eq!(s, Lifecycle::Queued { seed: false });
    assert_eq!(s.step(Input::Recheck, HELD), vec![QueueCheck]);
    assert_eq!(s, Lifecycle::queued(false));
    let mut q = Lifecycle::Queued { seed: false };
    assert!(q.step(move_start(), HELD).is_empty());
    assert!(matches!(q, Lifecycle::Moving { resume: true, .. }));
    assert!(
        q.step(Input::MoveDone, HELD).is_empty(),
        "still held: it waits"
    );
    assert_eq!(q, Lifecycle::Queued { seed: false });
    // a magnet link waits as a download; released it fetches its metadata
    let mut m = Lifecycle::paused(false);
    m.step(
        Input::Resume,
        Facts {
            held: true,
            ..no_meta()
        },
    );
    assert_eq!(m, Lifecycle::Queued { seed: false });
    assert_eq!(m.step(Input::QueueRelease, no_meta()), vec![Activate]);
    assert!(matches!(m, Lifecycle::FetchingMetadata { .. }));
    // a hold or a release where it makes no sense does nothing
    let mut p = Lifecycle::paused(false);
    assert!(p.step(Input::QueueHold, DL).is_empty());
    assert!(p.step(Input::QueueRelease, DL).is_empty());
    assert_eq!(p, Lifecycle::paused(false));
}
