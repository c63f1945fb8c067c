//! The remove question: remove torrents from the list, keeping their data (the default),
//! or removing and DELETING their data, which names each torrent, its size and folder (up
//! to five) and says that the files cannot be recovered; there Enter answers no.

use crate::api::{Command, Snapshot, TorrentId};
use crate::tui::action::Action;
use crate::tui::format;
use crate::tui::keymap::Keymap;

use super::confirm::{Confirm, ConfirmKind};
use super::form::Outcome;
use crate::units;

/// Torrents named one by one in the delete question; the rest are counted.
const NAMED: usize = 5;

/// The question for removing `ids` (`what` names them: `"debian.iso"`, `"3 torrents"`),
/// deleting their data with `delete_data`; the answer keys come from `keymap`.
pub fn open(
    ids: Vec<TorrentId>,
    delete_data: bool,
    what: &str,
    snapshot: &Snapshot,
    keymap: &Keymap,
) -> Confirm {
    let mut lines = Vec::new();
    let its = if ids.len() == 1 { "its" } else { "their" };
    if delete_data {
        lines.push(format!("Remove {what} and DELETE {its} data from disk:"));
        let detail = snapshot.detail.as_ref();
        for id in ids.iter().take(NAMED) {
            if let Some(row) = snapshot.row(*id) {
                let place = detail
                    .filter(|d| d.id == *id)
                    .map(|d| format!(" in {}", d.save_path.display()))
                    .unwrap_or_default();
                lines.push(format!(
                    "  {} ({}){place}",
                    format::clean(&row.name, false),
                    units::size(row.size)
                ));
            }
        }
        if ids.len() > NAMED {
            lines.push(format!("  … and {} more", ids.len() - NAMED));
        }
        lines.push("The files cannot be recovered.".to_owned());
    } else {
        lines.push(format!("Remove {what} from the list?"));
        lines.push("The downloaded data stays on disk.".to_owned());
    }
    lines.push(String::new());
    let yes = keymap.hint(Action::Confirm);
    let no = keymap.hint(Action::Deny);
    if delete_data {
        // a destructive default is no default: Enter keeps
        lines.push(format!("{yes}: remove and delete    {no}, Enter: keep"));
    } else {
        lines.push(format!("{yes}: remove    {no}: keep"));
    }
    Confirm {
        kind: ConfirmKind::Remove { ids, delete_data },
        title: if delete_data {
            "Remove and delete data".to_owned()
        } else {
            "Remove torrent".to_owned()
        },
        lines,
        enter_denies: delete_data,
    }
}

/// The answer yes: one remove command per torrent, and what the message line says.
pub fn confirmed(ids: &[TorrentId], delete_data: bool, what: &str) -> Outcome {
    Outcome {
        commands: ids
            .iter()
            .map(|id| Command::Remove {
                id: *id,
                delete_data,
            })
            .collect(),
        notice: Some(if delete_data {
            let its = if ids.len() == 1 { "its" } else { "their" };
            format!("removed {what} and deleted {its} data")
        } else {
            format!("removed {what} (data kept)")
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::api::{TorrentDetail, TorrentRow};

    fn snapshot(n: u64) -> Snapshot {
        let rows: Vec<Arc<TorrentRow>> = (1..=n)
            .map(|i| {
                Arc::new(TorrentRow {
                    id: TorrentId(i),
                    name: format!("t{i}\u{1b}[2J"),
                    size: 1024 * i,
                    ..TorrentRow::default()
                })
            })
            .collect();
        Snapshot {
            rows: rows.into(),
            detail: Some(Arc::new(TorrentDetail {
                id: TorrentId(1),
                save_path: PathBuf::from("/srv/t"),
                ..TorrentDetail::default()
            })),
            ..Snapshot::default()
        }
    }

    #[test]
    fn keeping_the_data_says_so() {
        let c = open(
            vec![TorrentId(2)],
            false,
            "t2",
            &snapshot(2),
            &Keymap::default(),
        );
        assert_eq!(c.title, "Remove torrent");
        assert_eq!(
            c.lines,
            [
                "Remove t2 from the list?",
                "The downloaded data stays on disk.",
                "",
                "y: remove    n: keep"
            ]
        );
        assert_eq!(
            c.kind,
            ConfirmKind::Remove {
                ids: vec![TorrentId(2)],
                delete_data: false
            }
        );
    }

    #[test]
    fn deleting_names_what_goes_and_where() {
        let ids: Vec<TorrentId> = (1..=7).map(TorrentId).collect();
        let c = open(ids, true, "7 torrents", &snapshot(7), &Keymap::default());
        assert_eq!(c.title, "Remove and delete data");
        assert_eq!(
            c.lines[0],
            "Remove 7 torrents and DELETE their data from disk:"
        );
        assert_eq!(
            c.lines[1], "  t1\u{fffd}[2J (1.00 KiB) in /srv/t",
            "names cleaned"
        );
        assert_eq!(
            c.lines[2], "  t2\u{fffd}[2J (2.00 KiB)",
            "no detail: no folder"
        );
        assert_eq!(c.lines[6], "  … and 2 more");
        assert_eq!(c.lines[7], "The files cannot be recovered.");
        assert_eq!(c.lines[9], "y: remove and delete    n, Enter: keep");
        assert!(c.enter_denies, "Enter never deletes");
        let one = open(
            vec![TorrentId(1)],
            true,
            "t1",
            &snapshot(1),
            &Keymap::default(),
        );
        assert_eq!(one.lines[0], "Remove t1 and DELETE its data from disk:");
        let keep = open(
            vec![TorrentId(1)],
            false,
            "t1",
            &snapshot(1),
            &Keymap::default(),
        );
        assert!(!keep.enter_denies, "keeping the data: Enter says yes");
    }

    #[test]
    fn yes_removes_each_torrent() {
        let ids = [TorrentId(1), TorrentId(4)];
        let outcome = confirmed(&ids, true, "2 torrents");
        assert!(
            matches!(
                outcome.commands[..],
                [
                    Command::Remove {
                        id: TorrentId(1),
                        delete_data: true
                    },
                    Command::Remove {
                        id: TorrentId(4),
                        delete_data: true
                    }
                ]
            ),
            "{outcome:?}"
        );
        assert_eq!(
            outcome.notice.as_deref(),
            Some("removed 2 torrents and deleted their data")
        );
        let one = confirmed(&ids[..1], true, "t1");
        assert_eq!(
            one.notice.as_deref(),
            Some("removed t1 and deleted its data")
        );
        let kept = confirmed(&ids[..1], false, "t1");
        assert_eq!(kept.notice.as_deref(), Some("removed t1 (data kept)"));
    }
}
