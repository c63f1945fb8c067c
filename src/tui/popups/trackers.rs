//! The tracker find/replace dialog for the marked (or selected) torrents: a text to find
//! in their tracker URLs (a passkey, a host) and its replacement. The first Enter asks the
//! engine how many URLs would change (a dry run of [`Command::EditTrackers`]) and shows
//! it; Enter again with the same texts replaces; the result goes to the message line.

use crate::api::{Command, TorrentId, TrackerEdit, TrackerEditError, TrackerEditOutcome};
use crate::tui::format;
use crate::tui::theme::Symbols;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// What the dialog has counted so far: the texts and the engine's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// The text found.
    pub find: String,
    /// Its replacement.
    pub replace: String,
    /// How many URLs in how many torrents would change.
    pub outcome: TrackerEditOutcome,
}

/// The dialog for `torrents` (labelled `what`), fields Find and Replace, empty.
pub fn open(torrents: Vec<TorrentId>, what: &str, sym: &Symbols) -> Form {
    let what = format::fit_with(what, 40, sym.ascii, sym.ellipsis);
    let mut form = Form::new(
        FormKind::Trackers {
            torrents,
            counted: None,
        },
        format!("Tracker URLs: {what}"),
        vec![Field::text("Find", ""), Field::text("Replace with", "")],
    );
    form.intro = intro(None);
    form
}

fn intro(counted: Option<&Counted>) -> Vec<String> {
    match counted {
        None => vec![
            "Find / replace in tracker URLs (a passkey, a host).".to_owned(),
            "Enter: count the URLs that would change.".to_owned(),
        ],
        Some(c) if c.outcome.urls == 0 => vec![
            "No tracker URL of these torrents contains it.".to_owned(),
            "Change the text and press Enter to count again.".to_owned(),
        ],
        Some(c) => vec![
            format!("{} would change.", c.outcome),
            "Enter: replace. Esc: leave them as they are.".to_owned(),
        ],
    }
}

/// A submitted dialog: a dry run while the texts were not counted yet (or changed since,
/// or changed nothing), else the edit itself.
///
/// Errors: nothing to find.
pub fn submit(form: &Form, torrents: &[TorrentId], counted: Option<&Counted>) -> Submitted {
    let find = form.fields.first().map_or("", Field::value).to_owned();
    let replace = form.fields.get(1).map_or("", Field::value).to_owned();
    if find.is_empty() {
        return Err("Find: type the text to look for in the tracker URLs".to_owned());
    }
    let confirmed =
        counted.is_some_and(|c| c.find == find && c.replace == replace && c.outcome.urls > 0);
    let edit = TrackerEdit::Replace { find, replace };
    Ok(Outcome {
        commands: vec![Command::EditTrackers {
            ids: torrents.to_vec(),
            edit,
            dry_run: !confirmed,
            reply: None,
        }],
        notice: confirmed.then(|| "replacing in tracker URLs…".to_owned()),
    })
}

/// Whether a submit of `form` (in the state `counted`) closes it: only the confirmed
/// replacement does; a count keeps it open for its answer.
pub fn closes(form: &Form, counted: Option<&Counted>) -> bool {
    let find = form.fields.first().map_or("", Field::value);
    let replace = form.fields.get(1).map_or("", Field::value);
    counted.is_some_and(|c| c.find == find && c.replace == replace && c.outcome.urls > 0)
}

/// The engine counted (`dry_run`): keep the answer in the open `form` and say it there;
/// a refusal shows as the form's error.
pub fn counted(
    form: &mut Form,
    find: String,
    replace: String,
    result: Result<TrackerEditOutcome, TrackerEditError>,
) {
    let FormKind::Trackers { counted, .. } = &mut form.kind else {
        return;
    };
    match result {
        Ok(outcome) => {
            let c = Counted {
                find,
                replace,
                outcome,
            };
            form.intro = intro(Some(&c));
            *counted = Some(c);
            form.error = None;
        }
        Err(e) => {
            *counted = None;
            form.intro = intro(None);
            form.error = Some(e.to_string());
        }
    }
}

/// The message line's text for a replacement's answer.
pub fn done_text(result: &Result<TrackerEditOutcome, TrackerEditError>) -> String {
    match result {
        Ok(o) => format!("tracker URLs replaced: {o}"),
        Err(e) => format!("tracker URLs not changed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::popups::form::FieldKind;
    use crate::tui::theme::Theme;

    fn typed(form: &mut Form, find: &str, replace: &str) {
        for (field, text) in form.fields.iter_mut().zip([find, replace]) {
            if let FieldKind::Text(f) = &mut field.kind {
                f.set(text);
            }
        }
    }

    #[test]
    fn the_first_enter_counts_and_the_second_replaces() {
        let ids = vec![TorrentId(1), TorrentId(2)];
        let mut form = open(ids.clone(), "2 torrents", &Theme::default().sym);
        assert!(submit(&form, &ids, None).is_err(), "nothing to find");
        typed(&mut form, "P1", "P2");
        let out = submit(&form, &ids, None).unwrap();
        let [Command::EditTrackers { dry_run, edit, .. }] = &out.commands[..] else {
            panic!("{:?}", out.commands);
        };
        assert!(*dry_run);
        assert_eq!(
            edit,
            &TrackerEdit::Replace {
                find: "P1".into(),
                replace: "P2".into()
            }
        );
        assert!(!closes(&form, None));
        let outcome = TrackerEditOutcome {
            urls: 3,
            torrents: 2,
        };
        counted(&mut form, "P1".into(), "P2".into(), Ok(outcome));
        assert_eq!(form.intro[0], "3 tracker URLs in 2 torrents would change.");
        let FormKind::Trackers { counted: c, .. } = &form.kind else {
            panic!()
        };
        let c = c.clone();
        assert!(closes(&form, c.as_ref()));
        let out = submit(&form, &ids, c.as_ref()).unwrap();
        assert!(matches!(
            &out.commands[..],
            [Command::EditTrackers { dry_run: false, .. }]
        ));
        // changed texts are counted again first
        typed(&mut form, "P1", "P3");
        assert!(!closes(&form, c.as_ref()));
        assert_eq!(
            done_text(&Ok(outcome)),
            "tracker URLs replaced: 3 tracker URLs in 2 torrents"
        );
    }
}
