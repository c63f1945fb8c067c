//! The quit question, asked while torrents are running (downloading, seeding, checking or
//! moving): quitting stops them and tells the trackers (config `confirm_quit`).

use crate::api::{Snapshot, TorrentState};
use crate::tui::action::Action;
use crate::tui::keymap::Keymap;

use super::confirm::{Confirm, ConfirmKind};

/// Torrents that quitting would stop: active ones, and those checking or moving data.
pub fn running(snapshot: &Snapshot) -> usize {
    snapshot
        .rows
        .iter()
        .filter(|r| {
            r.state.is_active() || matches!(r.state, TorrentState::Checking | TorrentState::Moving)
        })
        .count()
}

/// The question while `active` torrents run; the answer keys come from `keymap`.
pub fn open(active: usize, keymap: &Keymap) -> Confirm {
    let yes = keymap.hint(Action::Confirm);
    let no = keymap.hint(Action::Deny);
    Confirm {
        kind: ConfirmKind::Quit,
        title: "Quit ratorrent?".to_owned(),
        lines: vec![
            format!(
                "{active} torrent{} {} running: {} stop and the trackers are told.",
                if active == 1 { "" } else { "s" },
                if active == 1 { "is" } else { "are" },
                if active == 1 { "it will" } else { "they" },
            ),
            String::new(),
            format!("{yes}: quit    {no}: stay"),
        ],
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
        let one = open(1, &Keymap::default());
        assert_eq!(one.kind, ConfirmKind::Quit);
        assert_eq!(
            one.lines[0],
            "1 torrent is running: it will stop and the trackers are told."
        );
        assert_eq!(one.lines[2], "y: quit    n: stay");
        let three = open(3, &Keymap::default());
        assert_eq!(
            three.lines[0],
            "3 torrents are running: they stop and the trackers are told."
        );
        let keys: BTreeMap<String, Vec<String>> = [("yes".to_owned(), vec!["Y".to_owned()])].into();
        let custom = open(2, &Keymap::new(&keys).unwrap());
        assert_eq!(custom.lines[2], "Y: quit    n: stay");
    }
}
