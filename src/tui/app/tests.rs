//! The model alone: actions change its state and queue commands; nothing is drawn.

use std::sync::Arc;

use super::*;
use crate::api::{GlobalStats, TorrentState};

fn row(id: u64, name: &str, state: TorrentState) -> Arc<TorrentRow> {
    Arc::new(TorrentRow {
        id: TorrentId(id),
        rev: 1,
        name: name.to_owned(),
        size: 1024,
        done: 512,
        pieces_have: 1,
        pieces_total: 2,
        state,
        ..TorrentRow::default()
    })
}

/// Three torrents: two downloading (active), one paused.
fn snapshot(seq: u64) -> Arc<Snapshot> {
    Arc::new(Snapshot {
        seq,
        global: GlobalStats::default(),
        rows: vec![
            row(1, "alpha", TorrentState::Downloading),
            row(2, "beta", TorrentState::Paused),
            row(3, "gamma", TorrentState::Downloading),
        ]
        .into(),
        ..Snapshot::default()
    })
}

fn app() -> App {
    App::new(snapshot(1))
}

#[test]
fn starts_on_the_list_with_the_first_torrent_selected() {
    let app = app();
    assert_eq!(app.screen(), Screen::List);
    assert_eq!(app.selected(), Some(TorrentId(1)));
    assert_eq!(app.visible_len(), 3);
    assert_eq!(app.context(), Context::List);
    assert!(app.dialog().is_none() && !app.help_open() && !app.should_quit());
}

#[test]
fn the_detail_view_focuses_its_torrent_and_back_unfocuses_it() {
    let mut app = app();
    app.apply(Action::OpenDetail);
    assert_eq!(app.screen(), Screen::Detail);
    assert!(matches!(
        app.take_commands()[..],
        [Command::Focus(Some(TorrentId(1)))]
    ));
    app.apply(Action::NextTab);
    assert_eq!(app.tab(), Tab::General.step(true));
    app.apply(Action::Back);
    assert_eq!(app.screen(), Screen::List);
    assert!(matches!(app.take_commands()[..], [Command::Focus(None)]));
    // a second Back on the list asks the engine nothing
    app.apply(Action::Back);
    assert!(app.take_commands().is_empty());
}

#[test]
fn the_key_context_follows_what_is_open() {
    let mut app = app();
    app.apply(Action::Help);
    assert_eq!(app.context(), Context::Help);
    app.apply(Action::CloseHelp);
    app.apply(Action::Search);
    assert_eq!(app.context(), Context::Search);
    app.apply(Action::SearchCancel);
    app.apply(Action::Add);
    assert_eq!(app.context(), Context::Form);
    app.apply(Action::Cancel);
    assert_eq!(app.context(), Context::List);
}

#[test]
fn actions_apply_to_the_marked_torrents_in_list_order() {
    let mut app = app();
    // mark gamma first, then alpha: the commands still follow the list
    app.apply(Action::Bottom);
    app.apply(Action::ToggleMark);
    app.apply(Action::Top);
    app.apply(Action::ToggleMark);
    assert_eq!(app.marks().len(), 2);
    app.apply(Action::Recheck);
    let ids: Vec<TorrentId> = app
        .take_commands()
        .into_iter()
        .map(|c| match c {
            Command::Recheck(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, [TorrentId(1), TorrentId(3)]);
    app.apply(Action::ClearMarks);
    app.apply(Action::TogglePause);
    assert!(matches!(
        app.take_commands()[..],
        [Command::TogglePause(TorrentId(2))]
    ));
}

#[test]
fn a_confirmed_remove_sends_one_command_per_torrent_and_drops_their_marks() {
    let mut app = app();
    app.apply(Action::ToggleMark);
    app.apply(Action::ToggleMark);
    app.apply(Action::Remove);
    assert!(app.take_commands().is_empty(), "nothing before the answer");
    assert!(matches!(app.dialog(), Some(Dialog::Confirm(_))));
    app.apply(Action::Deny);
    assert!(app.dialog().is_none());
    assert_eq!(app.marks().len(), 2, "no keeps the marks");
    app.apply(Action::Remove);
    app.apply(Action::Confirm);
    let removed: Vec<(TorrentId, bool)> = app
        .take_commands()
        .into_iter()
        .map(|c| match c {
            Command::Remove { id, delete_data } => (id, delete_data),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(removed, [(TorrentId(1), false), (TorrentId(2), false)]);
    assert!(app.marks().is_empty());
}

#[test]
fn quit_asks_first_only_while_torrents_are_active_and_when_configured() {
    let mut app = app();
    app.apply(Action::Quit);
    assert!(!app.should_quit());
    assert!(matches!(app.dialog(), Some(Dialog::Confirm(_))));
    app.apply(Action::Confirm);
    assert!(app.should_quit());

    let opts = UiOptions {
        confirm_quit: false,
        ..UiOptions::default()
    };
    let mut app = App::with_options(snapshot(1), opts);
    app.apply(Action::Quit);
    assert!(app.should_quit() && app.dialog().is_none());

    let mut app = App::new(Arc::new(Snapshot::default()));
    app.apply(Action::Quit);
    assert!(app.should_quit(), "nothing active: no question");
}

#[test]
fn an_add_result_selects_the_torrent_once_a_snapshot_shows_it() {
    let mut app = app();
    app.add_result(Ok(TorrentId(4)));
    assert_eq!(app.notice(), Some("torrent added"));
    assert_eq!(app.selected(), Some(TorrentId(1)), "not shown yet");
    let mut rows: Vec<Arc<TorrentRow>> = snapshot(2).rows.to_vec();
    rows.push(row(4, "delta", TorrentState::Checking));
    let next = Arc::new(Snapshot {
        seq: 2,
        rows: rows.into(),
        ..Snapshot::default()
    });
    assert!(app.set_snapshot(next));
    assert_eq!(app.selected(), Some(TorrentId(4)));

    app.add_result(Err(AddError::AlreadyAdded {
        id: TorrentId(2),
        name: "beta".to_owned(),
        info_hash: "bb".repeat(20),
        merged: None,
    }));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    assert_eq!(app.notice(), Some("beta is already added: selected it"));
}

#[test]
fn an_unchanged_snapshot_asks_for_no_redraw() {
    let mut app = app();
    let same = app.snapshot().clone();
    assert!(!app.set_snapshot(same));
    assert!(!app.set_snapshot(snapshot(1)), "equal content");
    assert!(app.set_snapshot(snapshot(2)));
}

#[test]
fn the_state_filter_hides_rows_and_keeps_a_shown_selection() {
    let mut app = app();
    app.apply(Action::Bottom);
    assert_eq!(app.selected(), Some(TorrentId(3)));
    // All -> Downloading: alpha and gamma stay, gamma stays selected
    app.apply(Action::FilterNext);
    assert_eq!(app.view().filter, StateFilter::All.step(true));
    let shown: Vec<TorrentId> = app.visible_rows().map(|r| r.id).collect();
    assert!(!shown.contains(&TorrentId(2)), "{shown:?}");
    assert_eq!(app.selected(), Some(TorrentId(3)));
}

#[test]
fn failed_adds_are_counted_with_where_to_read_why() {
    let mut app = app();
    app.adds_failed(&[]);
    assert_eq!(app.notice(), None, "nothing failed: nothing said");
    app.adds_failed(&["/tmp/a.torrent: not a torrent".to_owned()]);
    assert_eq!(
        app.notice(),
        Some("1 torrent not added (why: e, session log): /tmp/a.torrent: not a torrent")
    );
    let mut app = self::app();
    let reasons: Vec<String> = (0..5).map(|i| format!("/tmp/{i}.torrent: bad")).collect();
    app.adds_failed(&reasons);
    let notice = app.notice().unwrap();
    assert!(
        notice.starts_with("5 torrents not added (why: e, session log): /tmp/0.torrent"),
        "{notice}"
    );
    assert!(notice.find("session log").unwrap() < 80);
}

#[test]
fn failed_adds_wait_behind_the_watch_folder_notice_and_show_at_the_next_key() {
    let mut app = app();
    app.set_notice(Some(
        "watch folder /w cannot be used: permission denied".to_owned(),
    ));
    app.adds_failed(&["/tmp/a.torrent: not a torrent".to_owned()]);
    assert_eq!(
        app.notice(),
        Some("watch folder /w cannot be used: permission denied"),
        "the watch folder's notice is not replaced"
    );
    assert_eq!(app.notices_queued(), 1);
    app.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(
        app.notice_level(),
        Some((
            "1 torrent not added (why: e, session log): /tmp/a.torrent: not a torrent",
            NoticeLevel::Error
        ))
    );
    assert_eq!(app.notices_queued(), 0);
    app.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(app.notice(), None);
}

#[test]
fn a_peer_added_by_hand_is_sent_and_confirmed() {
    let mut app = app();
    app.apply(Action::OpenDetail);
    app.take_commands();
    app.apply(Action::AddPeer);
    assert!(matches!(app.dialog(), Some(Dialog::Form(_))));
    let _ = app.handle_paste("127.0.0.2:6881");
    app.apply(Action::Submit);
    assert!(app.dialog().is_none());
    assert!(app.take_commands().iter().any(|c| matches!(
        c,
        Command::AddPeer {
            id: TorrentId(1),
            ..
        }
    )));
    assert_eq!(
        app.notice(),
        Some("peer 127.0.0.2:6881 added; dialling it while the torrent runs")
    );
}

/// A peer the engine refuses (the IP filter blocks it) replaces the form's "added" at once;
/// the same refusal in the history sent at start does not show.
#[test]
fn a_refused_peer_replaces_its_added_notice_but_not_from_the_history() {
    use crate::api::{EngineEvent, EventKind, EventLevel};
    let refused = |seq| EngineEvent {
        seq,
        at: std::time::SystemTime::UNIX_EPOCH,
        torrent: Some(TorrentId(1)),
        level: EventLevel::Warn,
        kind: EventKind::PeerRefused,
        message: "peer 10.9.9.9:6881 not added: the IP filter blocks it".to_owned(),
    };
    let mut app = app();
    app.push_history([refused(1)]);
    assert_eq!(app.notice(), None, "an old refusal stays in the log");
    app.apply(Action::OpenDetail);
    app.apply(Action::AddPeer);
    let _ = app.handle_paste("10.9.9.9:6881");
    app.apply(Action::Submit);
    assert!(
        app.notice()
            .unwrap()
            .starts_with("peer 10.9.9.9:6881 added")
    );
    app.push_events([refused(2)]);
    let (text, level) = app.notice.get().unwrap();
    assert_eq!(
        text,
        "alpha: peer 10.9.9.9:6881 not added: the IP filter blocks it"
    );
    assert_eq!(level, crate::tui::notice::NoticeLevel::Error);
}

#[test]
fn an_engine_error_names_its_torrent_once_on_the_message_line() {
    use crate::api::{EngineEvent, EventKind, EventLevel};
    let event = |seq, message: &str| EngineEvent {
        seq,
        at: std::time::SystemTime::UNIX_EPOCH,
        torrent: Some(TorrentId(1)),
        level: EventLevel::Error,
        kind: EventKind::DiskError,
        message: message.to_owned(),
    };
    let mut app = app();
    app.push_events([event(1, "alpha: no such file or folder creating /proc/xx")]);
    let (text, _) = app.notice.get().unwrap();
    assert!(text.starts_with("alpha: no such file"), "{text}");
    assert!(!text.contains("alpha: alpha"), "{text}");
    // a message without the name gets it
    app.notice.clear();
    app.push_events([event(2, "disk error")]);
    let (text, _) = app.notice.get().unwrap();
    assert!(text.starts_with("alpha: disk error"), "{text}");
}

#[test]
fn a_glob_of_many_files_tells_their_adds_together_counted() {
    let dir = tempfile::tempdir().unwrap();
    for n in ["a", "b", "c"] {
        std::fs::write(dir.path().join(format!("{n}.torrent")), b"d").unwrap();
    }
    let mut app = app();
    app.apply(Action::Add);
    let pattern = format!("{}/*.torrent", dir.path().display());
    for c in pattern.chars() {
        app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    let adds = app
        .handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
        .into_iter()
        .filter(|c| matches!(c, Command::Add(..)))
        .count();
    assert_eq!(adds, 3);
    assert_eq!(app.notice(), Some("adding 3 torrents…"));
    app.add_result(Ok(TorrentId(7)));
    assert_eq!(app.notice(), Some("adding 3 torrents…"), "not one by one");
    app.add_result(Err(AddError::AlreadyAdded {
        id: TorrentId(2),
        name: "beta".to_owned(),
        info_hash: "bb".repeat(20),
        merged: None,
    }));
    app.add_result(Err(AddError::Invalid("not a torrent".to_owned())));
    assert_eq!(
        app.notice(),
        Some("added 1 of 3 torrents, 1 already added, 1 not added (why: e, session log)")
    );
    // the next single add is told on its own again
    app.add_result(Ok(TorrentId(8)));
    assert_eq!(app.notice(), Some("torrent added"));
}

#[test]
fn a_detail_whose_torrent_leaves_the_filter_stays_on_it() {
    let mut app = app();
    // Downloading filter: alpha and gamma; open gamma
    app.apply(Action::FilterNext);
    app.apply(Action::Bottom);
    app.apply(Action::OpenDetail);
    assert_eq!(app.selected(), Some(TorrentId(3)));
    app.take_commands();
    // gamma is paused: it leaves the filter, the detail stays on it
    let paused = Arc::new(Snapshot {
        seq: 2,
        rows: vec![
            row(1, "alpha", TorrentState::Downloading),
            row(2, "beta", TorrentState::Paused),
            row(3, "gamma", TorrentState::Paused),
        ]
        .into(),
        ..Snapshot::default()
    });
    app.set_snapshot(paused);
    assert_eq!(app.screen(), Screen::Detail);
    assert_eq!(app.selected(), Some(TorrentId(3)), "not alpha");
    assert_eq!(app.view().filter, StateFilter::All);
    assert_eq!(
        app.notice(),
        Some("gamma left the filter: showing all torrents")
    );
    // the next key acts on gamma
    app.apply(Action::TogglePause);
    assert!(matches!(
        app.take_commands()[..],
        [Command::TogglePause(TorrentId(3))]
    ));
    // removed: back to the list
    app.set_snapshot(snapshot(3));
    let gone = Arc::new(Snapshot {
        seq: 4,
        rows: vec![row(1, "alpha", TorrentState::Downloading)].into(),
        ..Snapshot::default()
    });
    app.set_snapshot(gone);
    assert_eq!(app.screen(), Screen::List);
}

#[test]
fn esc_clears_the_marks_the_search_and_the_filter() {
    let mut app = app();
    app.apply(Action::FilterNext);
    app.apply(Action::ToggleMark);
    assert_eq!(app.visible_len(), 2);
    app.apply(Action::ClearMarks);
    assert_eq!(app.view().filter, StateFilter::All);
    assert!(app.marks().is_empty());
    assert_eq!(app.visible_len(), 3);
}
