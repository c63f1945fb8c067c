//! The category dialog (qBittorrent's "set category") for the marked or selected
//! torrents: the category's name (Tab offers the session's categories; empty: none), a
//! save path when the name is new (empty: the implicit one, under the parent's path or the
//! download folder), and automatic management (on: the data moves where the category
//! says). Sends [`Command::CreateCategory`] for a new name, then [`Command::SetCategory`]
//! and [`Command::SetAutoManaged`].

use std::path::PathBuf;

use crate::api::{Category, Command, Snapshot, TorrentId, check_category_name};
use crate::tui::format;
use crate::tui::input::expand_home;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The dialog for `torrents` (`what` names them), filled with the first one's category
/// and automatic management.
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str, ascii: bool) -> Form {
    let first = torrents.first().and_then(|id| snapshot.row(*id));
    let current = first.map(|r| r.category.clone()).unwrap_or_default();
    let auto = first.is_none_or(|r| r.auto_managed || r.category.is_empty());
    let names: Vec<String> = (snapshot.global.categories.iter())
        .map(|c| c.category.name.clone())
        .collect();
    let mut form = Form::new(
        FormKind::Category { torrents },
        "Category",
        vec![
            Field::prefilled("Category (empty: none; Tab: the categories)", current),
            Field::path("Save path of a new category (empty: implicit)", "", true),
            Field::check(
                "Automatic management (the data moves with the category)",
                auto,
            ),
        ],
    );
    let known = if names.is_empty() {
        "none yet: type a name to create one (tv, tv/hd)".to_owned()
    } else {
        names.join(", ")
    };
    form.intro = vec![
        format!("Category of {what}:"),
        format::clean(&format!("Categories: {known}"), ascii),
    ];
    form.choices = names;
    form
}

/// The commands for what `form` holds.
///
/// Errors: an invalid name, or a save path given for a category that exists.
pub fn submit(form: &Form, torrents: &[TorrentId], snapshot: &Snapshot) -> Submitted {
    let name = form
        .fields
        .first()
        .map_or("", |f| f.value())
        .trim()
        .to_owned();
    let save = form.fields.get(1).map_or("", |f| f.value()).trim();
    let auto = form.fields.get(2).is_some_and(Field::checked);
    let mut commands = Vec::new();
    let exists = (snapshot.global.categories.iter()).any(|c| c.category.name == name);
    if !name.is_empty() {
        check_category_name(&name)?;
        if !exists {
            commands.push(Command::CreateCategory(Category {
                name: name.clone(),
                save_path: if save.is_empty() {
                    PathBuf::new()
                } else {
                    expand_home(save)
                },
                ..Category::default()
            }));
        } else if !save.is_empty() {
            return Err(format!(
                "{name:?} exists: leave the save path empty (the category keeps its own)"
            ));
        }
    }
    commands.push(Command::SetCategory {
        ids: torrents.to_vec(),
        category: name.clone(),
    });
    commands.push(Command::SetAutoManaged {
        ids: torrents.to_vec(),
        on: auto,
    });
    let notice = match (name.is_empty(), exists) {
        (true, _) => "no category".to_owned(),
        (false, true) => format!("category {name}"),
        (false, false) => format!("category {name} created"),
    };
    Ok(Outcome {
        commands,
        notice: Some(notice),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::{CategoryInfo, GlobalStats, TorrentRow};
    use crate::tui::popups::form::FieldKind;

    fn snapshot() -> Snapshot {
        let info = |n: &str| CategoryInfo {
            category: Category {
                name: n.to_owned(),
                ..Category::default()
            },
            ..CategoryInfo::default()
        };
        Snapshot {
            global: GlobalStats {
                categories: vec![info("films"), info("tv")].into(),
                ..GlobalStats::default()
            },
            rows: vec![Arc::new(TorrentRow {
                id: TorrentId(1),
                category: "tv".to_owned(),
                auto_managed: true,
                ..TorrentRow::default()
            })]
            .into(),
            ..Snapshot::default()
        }
    }

    fn set(form: &mut Form, i: usize, text: &str) {
        match &mut form.fields[i].kind {
            FieldKind::Text(f) | FieldKind::Path { field: f, .. } => f.set(text),
            FieldKind::Check(_) => {}
        }
    }

    #[test]
    fn an_existing_category_is_set_a_new_one_created_first_and_empty_is_none() {
        let snap = snapshot();
        let ids = vec![TorrentId(1)];
        let mut form = open(&snap, ids.clone(), "x", false);
        assert_eq!(form.fields[0].value(), "tv", "its category");
        assert!(form.fields[2].checked());
        assert_eq!(form.choices, ["films", "tv"]);
        set(&mut form, 0, "films");
        let out = submit(&form, &ids, &snap).unwrap();
        assert!(matches!(
            out.commands.as_slice(),
            [Command::SetCategory { category, .. }, Command::SetAutoManaged { on: true, .. }]
                if category == "films"
        ));
        set(&mut form, 0, "docs/old");
        set(&mut form, 1, "/srv/docs");
        let out = submit(&form, &ids, &snap).unwrap();
        match out.commands.as_slice() {
            [
                Command::CreateCategory(c),
                Command::SetCategory { category, .. },
                _,
            ] => {
                assert_eq!(c.name, "docs/old");
                assert_eq!(c.save_path, PathBuf::from("/srv/docs"));
                assert_eq!(category, "docs/old");
            }
            other => panic!("{other:?}"),
        }
        set(&mut form, 0, "tv");
        assert!(
            submit(&form, &ids, &snap).is_err(),
            "a path for an existing one"
        );
        set(&mut form, 0, "bad/");
        assert!(submit(&form, &ids, &snap).is_err());
        set(&mut form, 0, "");
        set(&mut form, 1, "");
        let out = submit(&form, &ids, &snap).unwrap();
        assert!(matches!(
            &out.commands[0],
            Command::SetCategory { category, .. } if category.is_empty()
        ));
    }
}
