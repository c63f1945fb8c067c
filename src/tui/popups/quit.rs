//! The quit question, asked while torrents are running (downloading, seeding, checking or
//! moving): quitting stops them and tells their trackers, when they have any (config
//! `confirm_quit`).

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
