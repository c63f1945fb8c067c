//! A one-line text field (dialogs, the search line) and file-path completion.
//!
//! Editing keys follow readline: Left/Right, Home/End (Ctrl-A/Ctrl-E), Backspace, Del,
//! Ctrl-U (delete to the start), Ctrl-K (to the end), Ctrl-W (the word before the cursor).

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Longest text a field takes, in characters (a long magnet link fits).
pub const MAX_CHARS: usize = 8192;

/// A one-line text field with a cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextField {
    text: String,
    /// Cursor position in characters (0 ..= char count).
    cursor: usize,
    /// The whole text is selected (a value filled in for the user): what is typed or
    /// pasted first replaces it, Backspace, Del and the delete keys clear it, a cursor key
    /// keeps it and moves on.
    selected: bool,
}

impl TextField {
    /// A field holding `text`, cursor at the end.
    pub fn new(text: impl Into<String>) -> Self {
        let text: String = text.into();
        let text: String = text
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_CHARS)
            .collect();
        let cursor = text.chars().count();
        TextField {
            text,
            cursor,
            selected: false,
        }
    }

    /// A field holding `text`, all of it selected: typing replaces it (`"4.00 MiB/s"` in
    /// the limits dialog becomes `"1M"`, never `"4.00 MiB/s1M"`).
    pub fn selected(text: impl Into<String>) -> Self {
        let mut field = TextField::new(text);
        field.selected = !field.text.is_empty();
        field
    }

    /// Whether the whole text is selected (drawn highlighted).
    pub fn is_selected(&self) -> bool {
        self.selected
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Cursor position, in characters.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text, cursor at the end.
    pub fn set(&mut self, text: impl Into<String>) {
        *self = TextField::new(text);
    }

    fn byte_at(&self, char_index: usize) -> usize {
        self.text
            .char_indices()
            .nth(char_index)
            .map_or(self.text.len(), |(b, _)| b)
    }

    /// Applies an editing key; returns whether the key was used (text or cursor changed or
    /// could have). Control characters are never inserted.
    pub fn handle(&mut self, key: &KeyEvent) -> bool {
        if key.kind == KeyEventKind::Release {
            return false;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.modifiers.contains(KeyModifiers::ALT) {
            return false;
        }
        if self.selected {
            let deletes = matches!(key.code, KeyCode::Backspace | KeyCode::Delete)
                || (ctrl && matches!(key.code, KeyCode::Char('u' | 'k' | 'w')));
            let types = !ctrl && matches!(key.code, KeyCode::Char(c) if !c.is_control());
            let moves = matches!(
                key.code,
                KeyCode::Left | KeyCode::Right | KeyCode::Home | KeyCode::End
            ) || (ctrl && matches!(key.code, KeyCode::Char('a' | 'e')));
            if deletes || types {
                self.text.clear();
                self.cursor = 0;
            }
            if deletes || types || moves {
                self.selected = false;
            }
            if deletes {
                return true;
            }
        }
        let len = self.text.chars().count();
        match key.code {
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = len,
            KeyCode::Char('u') if ctrl => {
                let b = self.byte_at(self.cursor);
                self.text.replace_range(..b, "");
                self.cursor = 0;
            }
            KeyCode::Char('k') if ctrl => {
                let b = self.byte_at(self.cursor);
                self.text.truncate(b);
            }
            KeyCode::Char('w') if ctrl => {
                let chars: Vec<char> = self.text.chars().collect();
                let mut start = self.cursor;
                while start > 0 && chars[start - 1] == ' ' {
                    start -= 1;
                }
                while start > 0 && chars[start - 1] != ' ' && chars[start - 1] != '/' {
                    start -= 1;
                }
                if start == self.cursor && start > 0 {
                    start -= 1;
                }
                let (a, b) = (self.byte_at(start), self.byte_at(self.cursor));
                self.text.replace_range(a..b, "");
                self.cursor = start;
            }
            KeyCode::Char(c) if !ctrl && !c.is_control() => {
                if len < MAX_CHARS {
                    let b = self.byte_at(self.cursor);
                    self.text.insert(b, c);
                    self.cursor += 1;
                }
            }
            KeyCode::Backspace => {
                if self.cursor > 0 {
                    let (a, b) = (self.byte_at(self.cursor - 1), self.byte_at(self.cursor));
                    self.text.replace_range(a..b, "");
                    self.cursor -= 1;
                }
            }
            KeyCode::Delete => {
                if self.cursor < len {
                    let (a, b) = (self.byte_at(self.cursor), self.byte_at(self.cursor + 1));
                    self.text.replace_range(a..b, "");
                }
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(len),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = len,
            _ => return false,
        }
        true
    }

    /// Inserts pasted text at the cursor (control characters dropped); a selected text is
    /// replaced.
    pub fn paste(&mut self, text: &str) {
        if std::mem::take(&mut self.selected) {
            self.text.clear();
            self.cursor = 0;
        }
        for c in text.chars().filter(|c| !c.is_control()) {
            if self.text.chars().count() >= MAX_CHARS {
                break;
            }
            let b = self.byte_at(self.cursor);
            self.text.insert(b, c);
            self.cursor += 1;
        }
    }
}

/// `~` or `~/…` at the start of `text` expanded to the home directory.
pub fn expand_home(text: &str) -> PathBuf {
    if text == "~" {
        return dirs::home_dir().unwrap_or_else(|| PathBuf::from("~"));
    }
    match (text.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(text),
    }
}

/// The result of completing a path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// The completed text (unchanged when nothing could be added).
    pub text: String,
    /// The names that match when more than one does (at most 50, sorted); empty when the
    /// completion was unique or nothing matched.
    pub candidates: Vec<String>,
}

/// Completes the path in `text` against the file system, like a shell: the longest common
/// prefix of the entries of its folder that start with its last component; a unique folder
/// gets a trailing `/`. With `want`, only entries for which it returns true (and folders)
/// are offered (e.g. `.torrent` files). Hidden entries are offered only when the component
/// starts with `.`. Never fails: an unreadable folder completes nothing.
pub fn complete_path(text: &str, want: impl Fn(&Path) -> bool) -> Completion {
    let (dir_text, prefix) = match text.rfind('/') {
        Some(i) => (&text[..=i], &text[i + 1..]),
        None => ("", text),
    };
    let dir = if dir_text.is_empty() {
        PathBuf::from(".")
    } else {
        expand_home(dir_text)
    };
    let mut names: Vec<(String, bool)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten().take(10_000) {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                continue;
            }
            let path = entry.path();
            let is_dir = path.is_dir();
            if is_dir || want(&path) {
                names.push((name, is_dir));
            }
        }
    }
    names.sort();
    match names.as_slice() {
        [] => Completion {
            text: text.to_owned(),
            candidates: Vec::new(),
        },
        [(name, is_dir)] => Completion {
            text: format!("{dir_text}{name}{}", if *is_dir { "/" } else { "" }),
            candidates: Vec::new(),
        },
        many => {
            let first = &many[0].0;
            let mut common = first.len();
            for (name, _) in &many[1..] {
                common = common.min(
                    first
                        .char_indices()
                        .zip(name.chars())
                        .find(|((_, a), b)| a != b)
                        .map_or(first.len().min(name.len()), |((i, _), _)| i),
                );
            }
            let common = &first[..common];
            Completion {
                text: format!("{dir_text}{common}"),
                candidates: many
                    .iter()
                    .take(50)
                    .map(|(n, d)| format!("{n}{}", if *d { "/" } else { "" }))
                    .collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn a_selected_value_is_replaced_by_what_is_typed_first() {
        let mut f = TextField::selected("unlimited");
        assert!(f.is_selected());
        for c in "1M".chars() {
            f.handle(&key(KeyCode::Char(c)));
        }
        assert_eq!(f.text(), "1M", "never unlimited1M");
        assert!(!f.is_selected());

        let mut f = TextField::selected("4.00 MiB/s");
        assert!(f.handle(&key(KeyCode::Backspace)));
        assert_eq!(f.text(), "", "Backspace clears a selection");

        let mut f = TextField::selected("4.00 MiB/s");
        f.handle(&key(KeyCode::End));
        f.handle(&key(KeyCode::Backspace));
        assert_eq!(f.text(), "4.00 MiB/", "a cursor key keeps the text to edit");

        let mut f = TextField::selected("4.00 MiB/s");
        assert!(!f.handle(&key(KeyCode::Tab)));
        assert!(f.is_selected(), "a key that is no edit keeps the selection");
        f.paste("2M\n");
        assert_eq!(f.text(), "2M", "a paste replaces it too");

        assert!(!TextField::selected("").is_selected());
        assert!(!TextField::new("x").is_selected());
    }

    #[test]
    fn editing() {
        let mut f = TextField::default();
        for c in "héllo wörld".chars() {
            f.handle(&key(KeyCode::Char(c)));
        }
        assert_eq!(f.text(), "héllo wörld");
        f.handle(&ctrl('w'));
        assert_eq!(f.text(), "héllo ");
        f.handle(&key(KeyCode::Home));
        f.handle(&key(KeyCode::Delete));
        assert_eq!(f.text(), "éllo ");
        f.handle(&key(KeyCode::End));
        f.handle(&key(KeyCode::Backspace));
        f.handle(&key(KeyCode::Left));
        f.handle(&key(KeyCode::Char('X')));
        assert_eq!(f.text(), "éllXo");
        f.handle(&ctrl('k'));
        assert_eq!(f.text(), "éllX");
        f.handle(&ctrl('u'));
        assert_eq!(f.text(), "");
        // control characters never get in
        f.handle(&key(KeyCode::Char('\u{1b}')));
        f.paste("a\nb\x1b[2J");
        assert_eq!(f.text(), "ab[2J");
        assert!(!f.handle(&key(KeyCode::F(3))));
        // cursor never leaves the text
        for _ in 0..10 {
            f.handle(&key(KeyCode::Right));
        }
        assert_eq!(f.cursor(), 5);
    }

    #[test]
    fn completes_paths() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_str().unwrap().to_owned();
        std::fs::write(dir.path().join("alpha.torrent"), b"x").unwrap();
        std::fs::write(dir.path().join("alps.torrent"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("movies")).unwrap();
        let torrents = |p: &Path| p.extension().is_some_and(|e| e == "torrent");
        let c = complete_path(&format!("{base}/al"), torrents);
        assert_eq!(c.text, format!("{base}/alp"));
        assert_eq!(c.candidates, vec!["alpha.torrent", "alps.torrent"]);
        let c = complete_path(&format!("{base}/alph"), torrents);
        assert_eq!(c.text, format!("{base}/alpha.torrent"));
        assert!(c.candidates.is_empty());
        let c = complete_path(&format!("{base}/mo"), torrents);
        assert_eq!(c.text, format!("{base}/movies/"));
        let c = complete_path(&format!("{base}/no"), torrents);
        assert_eq!(c.text, format!("{base}/no"), "filtered out");
        let c = complete_path("/nonexistent-dir/x", torrents);
        assert_eq!(c.text, "/nonexistent-dir/x");
    }
}
