//! The create dialog: make a torrent of a file or folder (Tab completes its path) and seed
//! it at once. The .torrent file goes beside it (or where given); trackers one tier per
//! `;` with the URLs of a tier separated by commas; the format hybrid (default: every
//! client reads it), v1 or v2; private. The engine hashes it ([`AddSource::Create`]) and
//! adds it seeding from where the data is; the session log says what was made.

use std::path::PathBuf;

use crate::api::{AddRequest, AddSource, Command, CreateSource};
use crate::metainfo::MetaVersion;
use crate::tui::action::Action;
use crate::tui::input::expand_home;
use crate::tui::keymap::Keymap;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The empty dialog; its intro names the key that completes a path.
pub fn open(keymap: &Keymap) -> Form {
    let mut form = Form::new(
        FormKind::Create,
        "Create a torrent and seed it",
        vec![
            Field::path("File or folder to share", "", false),
            Field::path("Write the .torrent to (empty: beside it)", "", false),
            Field::text("Trackers (tiers split by ';', URLs by ',')", ""),
            Field::text(FORMAT_LABEL, "hybrid"),
            Field::check("Private (trackers only: no DHT, PEX, LSD)", false),
        ],
    );
    // Tab in the format field goes to the next format (wrapping), as in a category field
    form.choices = ["hybrid", "v1", "v2"].map(str::to_owned).to_vec();
    form.choice_field = FORMAT_FIELD;
    let tab = keymap.hint(Action::NextField);
    form.intro = vec![format!(
        "{tab} completes a path. Hashing runs in the background."
    )];
    form
}

/// The format field's place in the dialog.
const FORMAT_FIELD: usize = 3;
/// The format field's label.
const FORMAT_LABEL: &str = "Format: hybrid, v1 or v2 (Tab: the next one)";

/// The tiers in `text`: split by `;`, each tier's URLs by `,`; blanks trimmed, empty ones
/// dropped.
pub fn parse_tiers(text: &str) -> Vec<Vec<String>> {
    text.split(';')
        .map(|tier| {
            tier.split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// The add request for the filled-in dialog, without a reply channel.
///
/// Errors: what to fix: nothing typed, no such file or folder, an output that exists or is
/// a folder, an unknown format.
pub fn submit(form: &Form) -> Submitted {
    let value = |i: usize| form.fields.get(i).map_or("", |f| f.value()).trim();
    let path = value(0);
    if path.is_empty() {
        return Err("type the file or folder to share (Tab completes)".to_owned());
    }
    let path = std::path::absolute(expand_home(path)).map_err(|e| e.to_string())?;
    if !path.exists() {
        return Err(format!("no such file or folder: {}", path.display()));
    }
    let output = match value(1) {
        "" => None,
        o => Some(std::path::absolute(expand_home(o)).map_err(|e| e.to_string())?),
    };
    let version = match value(3).to_ascii_lowercase().as_str() {
        "" | "hybrid" => MetaVersion::Hybrid,
        "v1" => MetaVersion::V1,
        "v2" => MetaVersion::V2,
        other => return Err(format!("format {other:?}: type hybrid, v1 or v2")),
    };
    let source = CreateSource {
        path: path.clone(),
        output,
        version,
        trackers: parse_tiers(value(2)),
        private: form.fields.get(4).is_some_and(Field::checked),
    };
    let out: PathBuf = source.output_path();
    if out.exists() {
        return Err(format!(
            "{} exists: give another file to write",
            out.display()
        ));
    }
    // the whole path: where the .torrent goes is not shown anywhere else on screen
    let name = crate::tui::format::clean(&out.to_string_lossy(), false);
    Ok(Outcome {
        commands: vec![Command::Add(
            AddRequest::new(AddSource::Create(source)).seed(true),
            None,
        )],
        notice: Some(format!("creating {name}… (seeds once hashed)")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::popups::form::FieldKind;

    fn filled(values: &[&str]) -> Form {
        let mut form = open(&Keymap::default());
        for (f, v) in form.fields.iter_mut().zip(values) {
            match &mut f.kind {
                FieldKind::Path { field, .. } | FieldKind::Text(field) => field.set(*v),
                FieldKind::Check(_) => {}
            }
        }
        form
    }

    #[test]
    fn tiers_are_split_by_semicolons_and_commas() {
        assert_eq!(
            parse_tiers(" http://a/announce, http://b/announce ; udp://c:1 ;;"),
            vec![
                vec![
                    "http://a/announce".to_string(),
                    "http://b/announce".to_string()
                ],
                vec!["udp://c:1".to_string()]
            ]
        );
        assert!(parse_tiers("  ").is_empty());
    }

    #[test]
    fn tab_in_the_format_field_goes_round_the_formats_and_elsewhere_moves_on() {
        let mut form = open(&Keymap::default());
        form.focus = FORMAT_FIELD;
        let mut seen = Vec::new();
        for _ in 0..4 {
            form.tab();
            assert_eq!(form.focus, FORMAT_FIELD, "Tab stays in the format field");
            seen.push(form.fields[FORMAT_FIELD].value().to_owned());
        }
        assert_eq!(seen, ["v1", "v2", "hybrid", "v1"]);
        // a format typed in part is completed
        if let super::super::form::FieldKind::Text(f) = &mut form.fields[FORMAT_FIELD].kind {
            f.set("hy");
        }
        form.tab();
        assert_eq!(form.fields[FORMAT_FIELD].value(), "hybrid");
        // the trackers field has no choices: Tab moves on
        form.focus = 2;
        form.tab();
        assert_eq!(form.focus, FORMAT_FIELD);
    }

    #[test]
    fn a_folder_becomes_a_create_request_and_mistakes_stay_in_the_dialog() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("album");
        std::fs::create_dir(&data).unwrap();
        let d = data.to_str().unwrap();
        let o = submit(&filled(&[d, "", "http://t/announce", "v2"])).unwrap();
        let [Command::Add(req, None)] = o.commands.as_slice() else {
            panic!("{:?}", o.commands);
        };
        let AddSource::Create(c) = &req.source else {
            panic!("{:?}", req.source);
        };
        assert_eq!(c.version, MetaVersion::V2);
        assert_eq!(c.output_path(), dir.path().join("album.torrent"));
        assert_eq!(c.trackers, vec![vec!["http://t/announce".to_string()]]);
        assert!(req.seed);
        assert_eq!(
            o.notice,
            Some(format!(
                "creating {}… (seeds once hashed)",
                dir.path().join("album.torrent").display()
            ))
        );
        for (values, why) in [
            (vec![""], "type the file or folder"),
            (vec!["/no/such/place"], "no such file or folder"),
            (vec![d, "", "", "v3"], "type hybrid, v1 or v2"),
        ] {
            let e = submit(&filled(&values)).unwrap_err();
            assert!(e.contains(why), "{values:?}: {e}");
        }
        std::fs::write(dir.path().join("album.torrent"), b"x").unwrap();
        let e = submit(&filled(&[d])).unwrap_err();
        assert!(e.contains("exists"), "{e}");
    }
}
