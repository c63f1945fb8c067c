//! A dialog with fields (add, rate limits, move storage): text, path and checkbox fields,
//! the focused one, Tab completion of paths, pasted text, the error of the last refused
//! submit. The dialogs' own rooms ([`super::add`], [`super::limits`],
//! [`super::move_storage`]) build a [`Form`] and read it back when it is submitted.

use crossterm::event::{KeyCode, KeyEvent};

use crate::api::{Command, TorrentId};
use crate::metainfo::magnet::is_magnet;
use crate::tui::input::{TextField, complete_path};

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// Free text.
    Text(TextField),
    /// A path: Tab completes it from the file system; `dirs_only` offers folders only.
    Path {
        /// The text.
        field: TextField,
        /// Offer only folders (a save path).
        dirs_only: bool,
    },
    /// An on/off choice, toggled with Space.
    Check(bool),
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Label shown before or above it.
    pub label: String,
    /// Its value.
    pub kind: FieldKind,
}

impl Field {
    /// A text field.
    pub fn text(label: impl Into<String>, value: impl Into<String>) -> Field {
        Field {
            label: label.into(),
            kind: FieldKind::Text(TextField::new(value)),
        }
    }

    /// A text field filled in with `value`, all of it selected: what the user types
    /// replaces it.
    pub fn prefilled(label: impl Into<String>, value: impl Into<String>) -> Field {
        Field {
            label: label.into(),
            kind: FieldKind::Text(TextField::selected(value)),
        }
    }

    /// A path field.
    pub fn path(label: impl Into<String>, value: impl Into<String>, dirs_only: bool) -> Field {
        Field {
            label: label.into(),
            kind: FieldKind::Path {
                field: TextField::new(value),
                dirs_only,
            },
        }
    }

    /// A checkbox.
    pub fn check(label: impl Into<String>, on: bool) -> Field {
        Field {
            label: label.into(),
            kind: FieldKind::Check(on),
        }
    }

    /// The text of a text or path field (`""` for a checkbox).
    pub fn value(&self) -> &str {
        match &self.kind {
            FieldKind::Text(f) | FieldKind::Path { field: f, .. } => f.text(),
            FieldKind::Check(_) => "",
        }
    }

    /// The state of a checkbox (`false` for text).
    pub fn checked(&self) -> bool {
        matches!(self.kind, FieldKind::Check(true))
    }

    /// The text field, if this is one (text or path).
    pub fn editor(&self) -> Option<&TextField> {
        match &self.kind {
            FieldKind::Text(f) | FieldKind::Path { field: f, .. } => Some(f),
            FieldKind::Check(_) => None,
        }
    }
}

/// What a form does when submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormKind {
    /// Add a torrent: fields torrent, save path, start paused.
    Add,
    /// Rate limits: session ↓, ↑, then (when `torrents` is not empty) torrent ↓, ↑.
    Limits {
        /// Torrents whose limits the last two fields set.
        torrents: Vec<TorrentId>,
    },
    /// Seeding goals: fields ratio, seeding time, inactive time.
    Goals {
        /// The torrents whose goals it sets.
        torrents: Vec<TorrentId>,
    },
    /// Move storage: fields folder, move the files.
    Move {
        /// The torrents to move.
        torrents: Vec<TorrentId>,
    },
    /// Add a peer: field address.
    AddPeer {
        /// The torrent the peer is for.
        torrent: TorrentId,
    },
    /// Category: fields category, save path (a new one), automatic management.
    Category {
        /// The torrents it sets.
        torrents: Vec<TorrentId>,
    },
    /// Tags: field tags (`a, b, -c`).
    Tags {
        /// The torrents it sets.
        torrents: Vec<TorrentId>,
    },
    /// Create a torrent of a file or folder and seed it: fields path, output, trackers,
    /// format, private.
    Create,
    /// Find/replace in tracker URLs: fields find, replace.
    Trackers {
        /// The torrents whose trackers it edits.
        torrents: Vec<TorrentId>,
        /// The engine's count for the texts last counted.
        counted: Option<super::trackers::Counted>,
    },
}

/// A dialog with fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    /// What it does.
    pub kind: FormKind,
    /// Title.
    pub title: String,
    /// Lines of explanation above the fields.
    pub intro: Vec<String>,
    /// The fields.
    pub fields: Vec<Field>,
    /// The focused field.
    pub focus: usize,
    /// Why the last submit was refused, shown until the next key.
    pub error: Option<String>,
    /// Matches of the last path completion that was not unique.
    pub candidates: Vec<String>,
    /// Names Tab offers in field [`Form::choice_field`], a text field (categories, tags),
    /// see [`complete_choice`]; empty: none.
    pub choices: Vec<String>,
    /// The choices' field holds a comma-separated list: Tab completes its last item.
    pub choice_list: bool,
    /// The field the choices are for (0 unless set).
    pub choice_field: usize,
}

impl Form {
    /// A form of `kind` titled `title` with `fields`, the first one focused.
    pub fn new(kind: FormKind, title: impl Into<String>, fields: Vec<Field>) -> Form {
        Form {
            kind,
            title: title.into(),
            intro: Vec::new(),
            fields,
            focus: 0,
            error: None,
            candidates: Vec::new(),
            choices: Vec::new(),
            choice_list: false,
            choice_field: 0,
        }
    }

    /// Moves the focus by one field, wrapping.
    pub fn move_focus(&mut self, forward: bool) {
        let n = self.fields.len().max(1);
        self.focus = if forward {
            (self.focus + 1) % n
        } else {
            (self.focus + n - 1) % n
        };
        self.candidates.clear();
    }

    /// Tab: completes the focused path field; when there is nothing to complete (or the
    /// field is not a path), moves to the next field.
    pub fn tab(&mut self) {
        let Some(field) = self.fields.get_mut(self.focus) else {
            return;
        };
        if let FieldKind::Text(text) = &mut field.kind
            && self.focus == self.choice_field
            && !self.choices.is_empty()
        {
            let before = text.text().to_owned();
            if let Some(done) = complete_choice(&before, &self.choices, self.choice_list) {
                text.set(done);
                return;
            }
        }
        if let FieldKind::Path { field, dirs_only } = &mut field.kind {
            let dirs_only = *dirs_only;
            let before = field.text().to_owned();
            if !before.is_empty() && !is_magnet(&before) {
                let done = complete_path(&before, |p| {
                    !dirs_only
                        && p.extension()
                            .is_some_and(|e| e.eq_ignore_ascii_case("torrent"))
                });
                let progressed = done.text != before;
                field.set(done.text);
                self.candidates = done.candidates;
                if progressed || !self.candidates.is_empty() {
                    return;
                }
            }
        }
        self.move_focus(true);
    }

    /// Pasted text for the focused text field (control characters, newlines included, are
    /// dropped). Returns whether a text field took it (a checkbox does not).
    pub fn paste(&mut self, text: &str) -> bool {
        self.error = None;
        match self.fields.get_mut(self.focus).map(|f| &mut f.kind) {
            Some(FieldKind::Text(f) | FieldKind::Path { field: f, .. }) => {
                f.paste(text);
                self.candidates.clear();
                true
            }
            _ => false,
        }
    }

    /// An editing key for the focused field (Space toggles a checkbox). Returns whether it
    /// was used.
    pub fn edit(&mut self, key: &KeyEvent) -> bool {
        self.error = None;
        let Some(field) = self.fields.get_mut(self.focus) else {
            return false;
        };
        match &mut field.kind {
            FieldKind::Text(f) | FieldKind::Path { field: f, .. } => {
                let used = f.handle(key);
                if used {
                    self.candidates.clear();
                }
                used
            }
            FieldKind::Check(on) => {
                if key.code == KeyCode::Char(' ') {
                    *on = !*on;
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// Tab in a field with `choices`: the first choice that starts with the text (for a
/// `list`, its last comma-separated item, a leading `-` kept), or when the text is a
/// choice, the next one (wrapping); `None` when no choice fits (Tab then moves on).
pub fn complete_choice(text: &str, choices: &[String], list: bool) -> Option<String> {
    let (head, item) = if list {
        match text.rfind(',') {
            Some(i) => (&text[..=i], &text[i + 1..]),
            None => ("", text),
        }
    } else {
        ("", text)
    };
    let lead = item.len() - item.trim_start().len();
    let (space, item) = item.split_at(lead);
    let (minus, item) = match item.strip_prefix('-') {
        Some(rest) if list => ("-", rest),
        _ => ("", item),
    };
    let next = match choices.iter().position(|c| c == item) {
        Some(i) => &choices[(i + 1) % choices.len()],
        None => choices.iter().find(|c| c.starts_with(item))?,
    };
    let space = if head.is_empty() || !space.is_empty() {
        space
    } else {
        " "
    };
    Some(format!("{head}{space}{minus}{next}"))
}

/// What a submitted form asks for.
#[derive(Debug)]
pub struct Outcome {
    /// Commands for the engine, in order.
    pub commands: Vec<Command>,
    /// A line for the message line ("adding…", "limits unchanged").
    pub notice: Option<String>,
}

/// A submitted form's outcome, or why it was refused (shown in the dialog, which stays
/// open).
pub type Submitted = Result<Outcome, String>;

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn form(fields: Vec<Field>) -> Form {
        Form::new(FormKind::Add, "t", fields)
    }

    #[test]
    fn tab_offers_the_choices_then_moves_on() {
        let choices = vec!["films".to_owned(), "tv".to_owned(), "tv/hd".to_owned()];
        assert_eq!(complete_choice("t", &choices, false).as_deref(), Some("tv"));
        assert_eq!(
            complete_choice("tv", &choices, false).as_deref(),
            Some("tv/hd")
        );
        assert_eq!(
            complete_choice("tv/hd", &choices, false).as_deref(),
            Some("films")
        );
        assert_eq!(complete_choice("x", &choices, false), None);
        assert_eq!(
            complete_choice("hd, -f", &choices, true).as_deref(),
            Some("hd, -films")
        );
        assert_eq!(
            complete_choice("a,t", &choices, true).as_deref(),
            Some("a, tv")
        );
        let mut f = form(vec![Field::text("c", "f"), Field::text("d", "")]);
        f.choices = choices;
        f.tab();
        assert_eq!((f.focus, f.fields[0].value()), (0, "films"));
        f.fields[0].kind = FieldKind::Text(TextField::new("zzz"));
        f.tab();
        assert_eq!(f.focus, 1, "nothing to offer: next field");
    }

    #[test]
    fn fields_read_back_what_they_hold() {
        let text = Field::text("a", "1M");
        assert_eq!((text.value(), text.checked()), ("1M", false));
        assert_eq!(text.editor().map(TextField::text), Some("1M"));
        let path = Field::path("p", "/tmp", true);
        assert_eq!(path.value(), "/tmp");
        let check = Field::check("c", true);
        assert_eq!((check.value(), check.checked()), ("", true));
        assert!(check.editor().is_none());
    }

    #[test]
    fn focus_wraps_both_ways_and_drops_candidates() {
        let mut f = form(vec![Field::text("a", ""), Field::check("b", false)]);
        f.candidates = vec!["x".to_owned()];
        f.move_focus(true);
        assert_eq!(f.focus, 1);
        assert!(f.candidates.is_empty());
        f.move_focus(true);
        assert_eq!(f.focus, 0, "wraps forward");
        f.move_focus(false);
        assert_eq!(f.focus, 1, "wraps back");
        let mut empty = form(vec![]);
        empty.move_focus(true);
        assert_eq!(empty.focus, 0);
        empty.tab();
        assert!(!empty.paste("x") && !empty.edit(&key(KeyCode::Char('x'))));
    }

    #[test]
    fn typing_edits_the_focused_field_and_clears_the_error() {
        let mut f = form(vec![Field::text("a", "1"), Field::check("b", false)]);
        f.error = Some("bad".to_owned());
        assert!(f.edit(&key(KeyCode::Char('M'))));
        assert_eq!(f.fields[0].value(), "1M");
        assert_eq!(f.error, None);
        f.move_focus(true);
        assert!(
            !f.edit(&key(KeyCode::Char('x'))),
            "a checkbox takes no letters"
        );
        assert!(f.edit(&key(KeyCode::Char(' '))));
        assert!(f.fields[1].checked(), "Space toggles");
        assert!(f.edit(&key(KeyCode::Char(' '))));
        assert!(!f.fields[1].checked());
    }

    #[test]
    fn a_paste_goes_into_a_text_field_without_its_newline() {
        let mut f = form(vec![Field::path("p", "", false), Field::check("b", false)]);
        assert!(f.paste("magnet:?xt=urn:btih:abc\n"));
        assert_eq!(f.fields[0].value(), "magnet:?xt=urn:btih:abc");
        f.move_focus(true);
        assert!(!f.paste("text"), "a checkbox takes no paste");
        assert!(!f.fields[1].checked());
    }

    #[test]
    fn tab_completes_a_path_before_it_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("debian.torrent"), b"x").unwrap();
        std::fs::write(dir.path().join("debian.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        let typed = format!("{}/deb", dir.path().display());
        let mut f = form(vec![
            Field::path("torrent", typed, false),
            Field::path("save", format!("{}/fo", dir.path().display()), true),
            Field::text("x", ""),
        ]);
        f.tab();
        assert_eq!(f.focus, 0, "completed: the focus stays");
        assert_eq!(
            f.fields[0].value(),
            format!("{}/debian.torrent", dir.path().display()),
            "only .torrent files are offered"
        );
        f.tab();
        assert_eq!(f.focus, 1, "nothing more to complete: next field");
        f.tab();
        assert_eq!(
            f.fields[1].value(),
            format!("{}/folder/", dir.path().display())
        );
        f.move_focus(true);
        f.tab();
        assert_eq!(f.focus, 0, "a text field: next field, wrapping");
        // a magnet link is never completed
        f.fields[0].kind = FieldKind::Path {
            field: TextField::new("magnet:?xt=urn:btih:"),
            dirs_only: false,
        };
        f.tab();
        assert_eq!(f.focus, 1);
        assert_eq!(f.fields[0].value(), "magnet:?xt=urn:btih:");
    }
}
