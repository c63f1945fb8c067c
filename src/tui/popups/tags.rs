//! The tags dialog for the marked or selected torrents: tags separated by commas are
//! added, those written `-tag` taken off (`hd, -new`); Tab offers the session's tags.
//! Sends [`Command::AddTags`] and [`Command::RemoveTags`].

use crate::api::{Command, Snapshot, TorrentId, check_tag};
use crate::tui::format;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The dialog for `torrents` (`what` names them); the intro lists the first one's tags
/// and the session's.
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str, ascii: bool) -> Form {
    let own = torrents
        .first()
        .and_then(|id| snapshot.row(*id))
        .map(|r| r.tags.join(", "))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "none".to_owned());
    let all: Vec<String> = snapshot.global.tags.to_vec();
    let mut form = Form::new(
        FormKind::Tags { torrents },
        "Tags",
        vec![Field::text(
            "Tags (a, b adds; -a removes; Tab: the tags)",
            "",
        )],
    );
    form.intro = vec![
        format::clean(&format!("Tags of {what}: {own}"), ascii),
        format::clean(
            &format!(
                "All tags: {}",
                if all.is_empty() {
                    "none yet".to_owned()
                } else {
                    all.join(", ")
                }
            ),
            ascii,
        ),
    ];
    form.choices = all;
    form.choice_list = true;
    form
}

/// Split `text` into the tags to add and those to take off (`-tag`), each once.
///
/// # Errors
/// An invalid tag (see [`check_tag`]), or nothing typed.
pub fn parse(text: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut add, mut remove) = (Vec::new(), Vec::new());
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (list, tag) = match item.strip_prefix('-') {
            Some(t) => (&mut remove, t.trim()),
            None => (&mut add, item),
        };
        check_tag(tag)?;
        crate::api::add_tags(list, &[tag.to_owned()]);
    }
    if add.is_empty() && remove.is_empty() {
        return Err("type tags to add (a, b) or to take off (-a)".to_owned());
    }
    Ok((add, remove))
}

/// The commands for what `form` holds.
///
/// Errors: as [`parse`].
pub fn submit(form: &Form, torrents: &[TorrentId]) -> Submitted {
    let (add, remove) = parse(form.fields.first().map_or("", |f| f.value()))?;
    let mut commands = Vec::new();
    let mut said = Vec::new();
    if !add.is_empty() {
        said.push(format!("tagged {}", add.join(", ")));
        commands.push(Command::AddTags {
            ids: torrents.to_vec(),
            tags: add,
        });
    }
    if !remove.is_empty() {
        said.push(format!("untagged {}", remove.join(", ")));
        commands.push(Command::RemoveTags {
            ids: torrents.to_vec(),
            tags: remove,
        });
    }
    Ok(Outcome {
        commands,
        notice: Some(said.join("; ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_to_add_and_to_take_off_each_once() {
        let s = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect::<Vec<String>>();
        assert_eq!(
            parse(" hd, new ,-old, hd, - x ,").unwrap(),
            (s(&["hd", "new"]), s(&["old", "x"]))
        );
        assert!(parse(" , ").is_err(), "nothing typed");
        assert!(parse("-").is_err(), "an empty tag");
        let form = {
            let mut f = open(&Snapshot::default(), vec![TorrentId(1)], "x", false);
            if let crate::tui::popups::form::FieldKind::Text(t) = &mut f.fields[0].kind {
                t.set("a, -b");
            }
            f
        };
        let out = submit(&form, &[TorrentId(1)]).unwrap();
        assert!(matches!(
            out.commands.as_slice(),
            [Command::AddTags { tags: a, .. }, Command::RemoveTags { tags: r, .. }]
                if *a == s(&["a"]) && *r == s(&["b"])
        ));
    }
}
