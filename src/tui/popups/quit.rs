//! The quit question, asked while torrents are running (downloading, seeding, checking or
//! moving): quitting stops them and tells their trackers, when they have any (config
//! `confirm_quit`); and the question before stopping the daemon a TUI is attached to
//! ([`open_daemon`], always asked).

use crate::api::{Snapshot, TorrentRow, TorrentState};
use crate::tui::action::Action;
use crate::tui::keymap::Keymap;

use super::confirm::{Confirm, ConfirmKind};

fn is_running(row: &TorrentRow) -> bool {
    row.state.is_active() || matches!(row.state, TorrentState::Checking | TorrentState::Moving)
}

/// Torrents that quitting would stop: active ones, and those checking or moving data.
pub fn running(snapshot: &Snapshot) -> usize {
    snapshot.rows.iter().filter(|r| is_running(r)).count()
}

/// Whether quitting tells a tracker: one of the running torrents has one.
pub fn tells_trackers(snapshot: &Snapshot) -> bool {
    snapshot
        .rows
        .iter()
        .any(|r| is_running(r) && r.has_trackers)
}

/// The question while `active` torrents run (`trackers`: some of them have a tracker,
/// which quitting tells); the answer keys come from `keymap`.
pub fn open(active: usize, trackers: bool, keymap: &Keymap) -> Confirm {
    let yes = keymap.hint(Action::Confirm);
    let no = keymap.hint(Action::Deny);
    Confirm {
        kind: ConfirmKind::Quit,
        title: "Quit ratorrent?".to_owned(),
        lines: vec![
            format!(
                "{active} torrent{} {} running: {} stop{}.",
                if active == 1 { "" } else { "s" },
                if active == 1 { "is" } else { "are" },
                if active == 1 { "it will" } else { "they" },
                if trackers {
                    " and the trackers are told"
                } else {
                    ""
                },
            ),
            String::new(),
            format!("{yes}: quit    {no}: stay"),
        ],
        enter_denies: false,
    }
}

/// The question before stopping the daemon (pid `pid`) this TUI is attached to, while
/// `active` torrents run (`trackers`: some of them have a tracker).
pub fn open_daemon(pid: u32, active: usize, trackers: bool, keymap: &Keymap) -> Confirm {
    let yes = keymap.hint(Action::Confirm);
    let no = keymap.hint(Action::Deny);
    let quit = keymap.hint(Action::Quit);
    let torrents = match active {
        0 => "No torrent is running.".to_owned(),
        1 => format!(
            "1 torrent is running: it stops{}.",
            if trackers {
                " and its trackers are told"
            } else {
                ""
            }
        ),
        n => format!(
            "{n} torrents are running: they stop{}.",
            if trackers {
                " and the trackers are told"
            } else {
                ""
            }
        ),
    };
    Confirm {
        kind: ConfirmKind::QuitDaemon,
        title: "Stop the daemon?".to_owned(),
        lines: vec![
            format!("The daemon (pid {pid}) stops. {torrents}"),
            "Nothing seeds until it is started again.".to_owned(),
            format!("({quit} quits this TUI and leaves the daemon running.)"),
            String::new(),
            format!("{yes}: stop the daemon    {no}: stay"),
        ],
        enter_denies: true,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::api::{TorrentId, TorrentRow};

    #[test]
    fn running_counts_what_quitting_stops() {
        use TorrentState as S;
        let states = [
            S::FetchingMetadata,
            S::Downloading,
            S::Seeding,
            S::Checking,
            S::Moving,
            S::Paused,
            S::Error,
            S::Completed,
            S::Queued,
        ];
        let rows: Vec<Arc<TorrentRow>> = states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Arc::new(TorrentRow {
                    id: TorrentId(i as u64),
                    state: *s,
                    ..TorrentRow::default()
                })
            })
            .collect();
        let snap = Snapshot {
            rows: rows.into(),
            ..Snapshot::default()
        };
        assert_eq!(
            running(&snap),
            5,
            "fetching metadata, downloading, seeding, checking and moving; not paused, in \
             error, completed or queued"
        );
        assert_eq!(running(&Snapshot::default()), 0);
    }

    #[test]
    fn the_question_agrees_in_number_and_names_the_keys() {
        let one = open(1, true, &Keymap::default());
        assert_eq!(one.kind, ConfirmKind::Quit);
        assert_eq!(
            one.lines[0],
            "1 torrent is running: it will stop and the trackers are told."
        );
        assert_eq!(one.lines[2], "y: quit    n: stay");
        let three = open(3, true, &Keymap::default());
        assert_eq!(
            three.lines[0],
            "3 torrents are running: they stop and the trackers are told."
        );
        let keys: BTreeMap<String, Vec<String>> = [("yes".to_owned(), vec!["Y".to_owned()])].into();
        let custom = open(2, true, &Keymap::new(&keys).unwrap());
        assert_eq!(custom.lines[2], "Y: quit    n: stay");
    }

    #[test]
    fn stopping_the_daemon_names_it_and_what_stops() {
        let c = open_daemon(4321, 2, true, &Keymap::default());
        assert_eq!(c.kind, ConfirmKind::QuitDaemon);
        assert_eq!(
            c.lines[0],
            "The daemon (pid 4321) stops. 2 torrents are running: they stop and the trackers are told."
        );
        assert_eq!(
            c.lines[2],
            "(q quits this TUI and leaves the daemon running.)"
        );
        assert_eq!(c.lines[4], "y: stop the daemon    n: stay");
        assert!(c.enter_denies, "Enter does not stop a daemon");
        assert_eq!(
            open_daemon(1, 0, false, &Keymap::default()).lines[0],
            "The daemon (pid 1) stops. No torrent is running."
        );
    }

    #[test]
    fn trackers_are_named_only_when_a_running_torrent_has_one() {
        let row = |id, state, has_trackers| {
            Arc::new(TorrentRow {
                id: TorrentId(id),
                state,
                has_trackers,
                ..TorrentRow::default()
            })
        };
        let snap = |rows: Vec<Arc<TorrentRow>>| Snapshot {
            rows: rows.into(),
            ..Snapshot::default()
        };
        let trackerless = snap(vec![
            row(1, TorrentState::Seeding, false),
            row(2, TorrentState::Paused, true),
        ]);
        assert!(!tells_trackers(&trackerless), "the paused one is not told");
        let tracked = snap(vec![
            row(1, TorrentState::Seeding, false),
            row(2, TorrentState::Downloading, true),
        ]);
        assert!(tells_trackers(&tracked));
        assert_eq!(
            open(1, false, &Keymap::default()).lines[0],
            "1 torrent is running: it will stop."
        );
        assert_eq!(
            open(2, false, &Keymap::default()).lines[0],
            "2 torrents are running: they stop."
        );
    }
}
