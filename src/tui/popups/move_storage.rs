//! The move storage dialog: the folder to move the selected torrents' data to (Tab
//! completes it), and whether to move the files or only set the new location (then the
//! data must already be there, and is checked).

use crate::api::{Command, Snapshot, TorrentId};
use crate::tui::input::expand_home;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The dialog for `torrents` (`what` names them), filled with the first one's save folder
/// (from its list row, so opened from the list or the detail view alike).
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str) -> Form {
    let current = torrents
        .first()
        .and_then(|id| snapshot.row(*id))
        .map(|r| r.save_path.display().to_string())
        .filter(|p| !p.is_empty())
        .or_else(|| {
            snapshot
                .detail
                .as_ref()
                .filter(|d| torrents.first() == Some(&d.id))
                .map(|d| d.save_path.display().to_string())
        })
        .unwrap_or_default();
    let mut form = Form::new(
        FormKind::Move { torrents },
        "Move storage",
        vec![
            Field::path("New folder", current, true),
            Field::check(
                "Move the files (off: only set the location, then recheck)",
                true,
            ),
        ],
    );
    form.intro = vec![format!("Where should {what} be stored?")];
    form
}

/// One move command per torrent to the folder typed into `form`.
///
/// Errors: what to fix: no folder typed, a file given as the folder, or (when the files
/// are not to be moved) a folder that does not exist.
pub fn submit(form: &Form, torrents: &[TorrentId]) -> Submitted {
    let to = form.fields.first().map_or("", |f| f.value()).trim();
    let move_data = form.fields.get(1).is_some_and(Field::checked);
    if to.is_empty() {
        return Err("type the folder to move to".to_owned());
    }
    let to = expand_home(to);
    if to.exists() && !to.is_dir() {
        return Err(format!("{} is a file, not a folder", to.display()));
    }
    if !move_data && !to.is_dir() {
        return Err(format!(
            "{} does not exist: with \"move the files\" off the data must already be there",
            to.display()
        ));
    }
    let commands = torrents
        .iter()
        .map(|id| Command::MoveStorage {
            id: *id,
            to: to.clone(),
            move_data,
        })
        .collect();
    Ok(Outcome {
        commands,
        notice: Some(format!("moving to {}", to.display())),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::api::TorrentDetail;
    use crate::tui::popups::form::FieldKind;

    fn filled(mut form: Form, folder: &str, move_data: bool) -> Form {
        if let FieldKind::Path { field, .. } = &mut form.fields[0].kind {
            field.set(folder);
        }
        form.fields[1].kind = FieldKind::Check(move_data);
        form
    }

    #[test]
    fn opens_on_the_current_folder_of_the_torrent_shown() {
        let snap = Snapshot {
            detail: Some(Arc::new(TorrentDetail {
                id: TorrentId(3),
                save_path: PathBuf::from("/srv/linux"),
                ..TorrentDetail::default()
            })),
            ..Snapshot::default()
        };
        let form = open(&snap, vec![TorrentId(3)], "debian.iso");
        assert_eq!(form.fields[0].value(), "/srv/linux");
        assert!(form.fields[1].checked(), "moves the files by default");
        assert_eq!(form.intro, ["Where should debian.iso be stored?"]);
        let form = open(&snap, vec![TorrentId(4), TorrentId(3)], "2 torrents");
        assert_eq!(
            form.fields[0].value(),
            "",
            "the detail is of another torrent"
        );
    }

    #[test]
    fn opened_from_the_list_it_starts_from_the_rows_folder() {
        let rows: Vec<Arc<crate::api::TorrentRow>> = [(1, "/srv/a"), (2, "/srv/b")]
            .into_iter()
            .map(|(id, path)| {
                Arc::new(crate::api::TorrentRow {
                    id: TorrentId(id),
                    save_path: PathBuf::from(path),
                    ..crate::api::TorrentRow::default()
                })
            })
            .collect();
        // no detail: the list view
        let snap = Snapshot {
            rows: rows.into(),
            ..Snapshot::default()
        };
        let form = open(&snap, vec![TorrentId(2)], "b");
        assert_eq!(form.fields[0].value(), "/srv/b");
        let form = open(&snap, vec![TorrentId(1), TorrentId(2)], "2 torrents");
        assert_eq!(form.fields[0].value(), "/srv/a", "the first one's folder");
    }

    #[test]
    fn every_torrent_moves_to_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("new");
        let ids = [TorrentId(1), TorrentId(2)];
        let form = filled(
            open(&Snapshot::default(), ids.to_vec(), "x"),
            &to.display().to_string(),
            true,
        );
        let outcome = submit(&form, &ids).unwrap();
        assert_eq!(outcome.commands.len(), 2);
        match &outcome.commands[1] {
            Command::MoveStorage {
                id: TorrentId(2),
                to: dest,
                move_data: true,
            } => assert_eq!(dest, &to),
            other => panic!("{other:?}"),
        }
        assert_eq!(outcome.notice, Some(format!("moving to {}", to.display())));
    }

    #[test]
    fn a_folder_that_cannot_be_used_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let form = |folder: &str, move_data| {
            filled(
                open(&Snapshot::default(), vec![TorrentId(1)], "x"),
                folder,
                move_data,
            )
        };
        let ids = [TorrentId(1)];
        assert!(
            submit(&form(" ", true), &ids)
                .unwrap_err()
                .contains("type the folder")
        );
        let err = submit(&form(&file.display().to_string(), true), &ids).unwrap_err();
        assert!(err.contains("is a file, not a folder"), "{err}");
        let missing = dir.path().join("missing");
        let err = submit(&form(&missing.display().to_string(), false), &ids).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        // only setting the location to a folder that exists is fine
        let here = form(&dir.path().display().to_string(), false);
        assert!(matches!(
            submit(&here, &ids).unwrap().commands[..],
            [Command::MoveStorage {
                move_data: false,
                ..
            }]
        ));
    }
}
