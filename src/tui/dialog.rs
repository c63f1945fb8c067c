//! Dialog state: forms with fields (add, limits, move storage) and yes/no questions
//! (remove, delete, quit). Pure data; [`super::App`] applies the keys and turns a
//! submitted dialog into commands, [`super::widgets::dialog`] draws it.

use crossterm::event::{KeyCode, KeyEvent};

use crate::api::TorrentId;

use super::input::{TextField, complete_path};

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
    /// Move storage: fields folder, move the files.
    Move {
        /// The torrents to move.
        torrents: Vec<TorrentId>,
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
        if let FieldKind::Path { field, dirs_only } = &mut field.kind {
            let dirs_only = *dirs_only;
            let before = field.text().to_owned();
            if !before.is_empty() && !crate::metainfo::magnet::is_magnet(&before) {
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

/// What a yes/no dialog confirms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmKind {
    /// Remove torrents (with `delete_data`, their files too).
    Remove {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// Delete the data as well.
        delete_data: bool,
    },
    /// Quit while torrents are active.
    Quit,
}

/// A yes/no question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    /// What it confirms.
    pub kind: ConfirmKind,
    /// Title.
    pub title: String,
    /// The question and what will happen, one line each.
    pub lines: Vec<String>,
}

/// The open dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialog {
    /// A form.
    Form(Form),
    /// A yes/no question.
    Confirm(Confirm),
}
