//! The add dialog: a .torrent file's path (Tab completes it, `*` and `?` match several), a
//! magnet link or the http(s) URL of a .torrent file, typed or pasted; the folder to save in (empty: the default); start paused; a category (Tab offers the session's; with one
//! and no folder its data goes where the category says); skip the hash check (data known
//! to be complete, for cross-seeding); sequential download; first and last pieces first.
//! A typo is refused in
//! the dialog (a missing file, a folder, a malformed magnet link), not reported later as a
//! failed add.

use crate::api::{AddRequest, AddSource, Command};
use crate::metainfo::magnet::{Magnet, is_magnet};
use crate::net::{is_fetchable_scheme, unfetchable_scheme, url_scheme};
use crate::tui::action::Action;
use crate::tui::input::expand_home;
use crate::tui::keymap::Keymap;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The empty dialog; its intro names the key that completes a path; Tab offers
/// `categories` in the category field.
pub fn open(keymap: &Keymap, categories: Vec<String>) -> Form {
    let mut form = Form::new(
        FormKind::Add,
        "Add a torrent",
        vec![
            Field::path("Torrent file, magnet link or http(s) URL", "", false),
            Field::path("Save in (empty: the default folder)", "", true),
            Field::check("Start paused", false),
            Field::text("Category (empty: none)", ""),
            Field::check(
                "Skip hash check (the data is complete: cross-seeding)",
                false,
            ),
            Field::check("Sequential download (pieces in order)", false),
            Field::check("First and last pieces of each file first", false),
        ],
    );
    form.choices = categories;
    form.choice_field = 3;
    let tab = keymap.hint(Action::NextField);
    form.intro = vec![format!(
        "{tab} completes a path or moves to the next field."
    )];
    form
}

/// The add request for the filled-in dialog (`seed`: keep seeding once complete), without a
/// reply channel: the event loop gives it one.
///
/// Errors: the text of what to fix: nothing typed, a malformed magnet link, no such file,
/// a folder given as the torrent, a file given as the save folder.
pub fn submit(form: &Form, seed: bool) -> Submitted {
    let text = form.fields.first().map_or("", |f| f.value()).trim();
    let save = form.fields.get(1).map_or("", |f| f.value()).trim();
    let paused = form.fields.get(2).is_some_and(Field::checked);
    let category = form.fields.get(3).map_or("", |f| f.value()).trim();
    let skip_check = form.fields.get(4).is_some_and(Field::checked);
    let sequential = form.fields.get(5).is_some_and(Field::checked);
    let first_last = form.fields.get(6).is_some_and(Field::checked);
    if !category.is_empty() {
        crate::api::check_category_name(category)?;
    }
    if text.is_empty() {
        return Err(
            "type the path of a .torrent file (Tab completes), a magnet link or a URL".to_owned(),
        );
    }
    let sources = if let Some(scheme) = url_scheme(text) {
        // fetched by the engine; a scheme it cannot fetch is a typo to fix here
        if !is_fetchable_scheme(scheme) {
            return Err(unfetchable_scheme(scheme));
        }
        vec![AddSource::Url(text.to_owned())]
    } else if is_magnet(text) {
        // Checked here so a typo is reported in the dialog, not as a failed add.
        Magnet::parse(text).map_err(|e| e.to_string())?;
        vec![AddSource::Magnet(text.to_owned())]
    } else if let Some(matches) = glob_files(&expand_home(text)) {
        matches?.into_iter().map(AddSource::File).collect()
    } else {
        let path = expand_home(text);
        if !path.exists() {
            return Err(format!("no such file: {}", path.display()));
        }
        if !path.is_file() {
            return Err(format!(
                "{} is a folder: give a .torrent file",
                path.display()
            ));
        }
        vec![AddSource::File(path)]
    };
    let download_dir = if save.is_empty() {
        None
    } else {
        let dir = expand_home(save);
        if dir.exists() && !dir.is_dir() {
            return Err(format!("{} is a file, not a folder", dir.display()));
        }
        Some(dir)
    };
    let notice = match sources.as_slice() {
        // the torrent exists only once its file is fetched
        [url @ AddSource::Url(_)] => format!("fetching {url}…"),
        [_] => "adding…".to_owned(),
        many => format!("adding {} torrents…", many.len()),
    };
    Ok(Outcome {
        commands: sources
            .into_iter()
            .map(|source| {
                Command::Add(
                    AddRequest::new(source)
                        .download_dir(download_dir.clone())
                        .paused(paused)
                        .seed(seed)
                        .category(category)
                        .skip_check(skip_check)
                        .sequential(sequential)
                        .first_last(first_last),
                    None,
                )
            })
            .collect(),
        notice: Some(notice),
    })
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one character.
fn wildcard(pattern: &[char], name: &[char]) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, _) => name.is_empty(),
        (Some(('*', rest)), _) => {
            (0..=name.len()).any(|skip| wildcard(rest, name.get(skip..).unwrap_or_default()))
        }
        (Some(('?', rest)), Some((_, tail))) => wildcard(rest, tail),
        (Some((p, rest)), Some((c, tail))) => p == c && wildcard(rest, tail),
        (Some(_), None) => false,
    }
}

/// The files a glob in the last component of `path` names (`~/dl/*.torrent`), sorted;
/// `None` when the path has no `*` or `?` there.
///
/// Errors: the folder cannot be read; nothing matches.
pub fn glob_files(path: &std::path::Path) -> Option<Result<Vec<std::path::PathBuf>, String>> {
    let name = path.file_name()?.to_str()?;
    if !name.contains(['*', '?']) {
        return None;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let pattern: Vec<char> = name.chars().collect();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => return Some(Err(format!("{}: {e}", dir.display()))),
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n: Vec<char> = e.file_name().to_string_lossy().chars().collect();
            wildcard(&pattern, &n) && e.path().is_file()
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    Some(if files.is_empty() {
        Err(format!("no file matches {}", path.display()))
    } else {
        Ok(files)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::popups::form::FieldKind;

    /// The dialog with the torrent field, the save field and the checkbox filled in.
    fn filled(torrent: &str, save: &str, paused: bool) -> Form {
        let mut form = open(&Keymap::default(), Vec::new());
        for (field, text) in form.fields.iter_mut().zip([torrent, save]) {
            if let FieldKind::Path { field, .. } = &mut field.kind {
                field.set(text);
            }
        }
        form.fields[2].kind = FieldKind::Check(paused);
        form
    }

    fn request(outcome: Outcome) -> AddRequest {
        let mut commands = outcome.commands.into_iter();
        match (commands.next(), commands.next()) {
            (Some(Command::Add(request, None)), None) => request,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn opens_empty_with_the_completion_key_named() {
        let form = open(&Keymap::default(), Vec::new());
        assert_eq!(form.kind, FormKind::Add);
        assert_eq!(form.fields.len(), 7);
        assert!(
            form.fields
                .iter()
                .all(|f| f.value().is_empty() && !f.checked())
        );
        assert!(
            form.intro[0].starts_with("Tab completes"),
            "{:?}",
            form.intro
        );
    }

    #[test]
    fn a_torrent_file_is_added_with_the_options_given() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.torrent");
        std::fs::write(&file, b"d4:infod4:name1:aee").unwrap();
        let save = dir.path().join("not-yet");
        let outcome = submit(
            &filled(
                &format!("  {}  ", file.display()),
                &save.display().to_string(),
                true,
            ),
            false,
        )
        .unwrap();
        assert_eq!(outcome.notice.as_deref(), Some("adding…"));
        let req = request(outcome);
        assert_eq!(req.source, AddSource::File(file));
        assert_eq!(req.download_dir, Some(save), "a folder to be made is fine");
        assert!(req.paused && !req.seed);
        assert!(!req.skip_check && !req.sequential && !req.first_last);
        let req = request(submit(&filled(&link(), "", false), true).unwrap());
        assert_eq!(req.download_dir, None, "empty: the default folder");
        assert!(!req.paused && req.seed);
    }

    fn link() -> String {
        format!("magnet:?xt=urn:btih:{}&dn=debian", "c".repeat(40))
    }

    #[test]
    fn skip_check_sequential_and_first_last_go_with_the_add() {
        let mut form = filled(&link(), "", false);
        for i in [4, 6] {
            form.fields[i].kind = FieldKind::Check(true);
        }
        let req = request(submit(&form, true).unwrap());
        assert!(req.skip_check && !req.sequential && req.first_last);
        form.fields[5].kind = FieldKind::Check(true);
        form.fields[4].kind = FieldKind::Check(false);
        let req = request(submit(&form, true).unwrap());
        assert!(!req.skip_check && req.sequential && req.first_last);
    }

    #[test]
    fn an_http_url_goes_to_the_engine_and_another_scheme_is_refused_here() {
        let url = "https://t.example/dl/42.torrent?passkey=0123456789abcdef";
        let out = submit(&filled(url, "", false), true).unwrap();
        assert_eq!(
            out.notice.as_deref(),
            Some("fetching https://t.example/dl/42.torrent?passkey=***…"),
            "the passkey is never shown"
        );
        assert_eq!(request(out).source, AddSource::Url(url.to_owned()));
        let err = submit(&filled("file:///tmp/a.torrent", "", false), true).unwrap_err();
        assert_eq!(
            err,
            "only http:// and https:// URLs can be fetched, not file://"
        );
    }

    #[test]
    fn a_magnet_link_is_checked_before_it_is_sent() {
        let req = request(submit(&filled(&link(), "", false), true).unwrap());
        assert_eq!(req.source, AddSource::Magnet(link()));
        let err = submit(&filled("magnet:?xt=urn:btih:aaaa", "", false), true).unwrap_err();
        assert!(err.contains("malformed"), "{err}");
    }

    #[test]
    fn typos_are_refused_with_what_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.torrent");
        std::fs::write(&file, b"x").unwrap();
        let refused = |torrent: &str, save: &str| submit(&filled(torrent, save, false), true);
        assert!(refused("   ", "").unwrap_err().contains("type the path"));
        let missing = dir.path().join("missing.torrent");
        assert_eq!(
            refused(&missing.display().to_string(), "").unwrap_err(),
            format!("no such file: {}", missing.display())
        );
        assert!(
            refused(&dir.path().display().to_string(), "")
                .unwrap_err()
                .contains("is a folder")
        );
        let as_save = refused(&file.display().to_string(), &file.display().to_string());
        assert!(as_save.unwrap_err().contains("is a file, not a folder"));
    }

    #[test]
    fn a_glob_adds_every_file_it_matches() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.torrent", "a.torrent", "notes.txt"] {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join("c.torrent")).unwrap();
        let glob = |pattern: &str| {
            submit(
                &filled(&format!("{}/{pattern}", dir.path().display()), "", false),
                true,
            )
        };
        let out = glob("*.torrent").unwrap();
        assert_eq!(out.notice.as_deref(), Some("adding 2 torrents…"));
        let sources: Vec<AddSource> = out
            .commands
            .into_iter()
            .map(|c| match c {
                Command::Add(r, None) => r.source,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            sources,
            [
                AddSource::File(dir.path().join("a.torrent")),
                AddSource::File(dir.path().join("b.torrent"))
            ]
        );
        assert_eq!(glob("?.torrent").unwrap().commands.len(), 2);
        assert!(glob("*.iso").unwrap_err().starts_with("no file matches"));
    }

    #[test]
    fn home_is_expanded() {
        let Some(home) = dirs::home_dir() else {
            return;
        };
        let err = submit(&filled("~/surely-not-here.torrent", "", false), true).unwrap_err();
        assert_eq!(
            err,
            format!(
                "no such file: {}",
                home.join("surely-not-here.torrent").display()
            )
        );
    }

    #[test]
    fn a_category_goes_with_the_add_and_tab_offers_the_categories() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.torrent");
        std::fs::write(&file, b"d4:infod4:name1:aee").unwrap();
        let mut form = filled(&file.display().to_string(), "", false);
        form.choices = vec!["films".to_owned(), "tv".to_owned()];
        form.focus = 3;
        if let FieldKind::Text(t) = &mut form.fields[3].kind {
            t.set("t");
        }
        form.tab();
        assert_eq!(form.fields[3].value(), "tv");
        let r = request(submit(&form, true).unwrap());
        assert_eq!(r.category, "tv");
        assert!(r.auto_managed_in_effect(), "a category and no folder");
        if let FieldKind::Text(t) = &mut form.fields[3].kind {
            t.set("tv/");
        }
        assert!(submit(&form, true).is_err(), "an invalid name");
    }
}
