//! The terminal UI's part of the configuration: drawing, mouse, quitting, the list's
//! columns, `[keys]` and `[colors]`. The engine never sees it.
//!
//! `[keys]` and `[colors]` are kept as plain text with the line each entry is on: the TUI
//! owns their meaning (`tui::keymap`, `tui::theme`) and checks them when it starts,
//! naming the file and line of an entry it cannot use ([`EntryProblem`]). Headless
//! commands never read them.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Settings of the TUI, keys of the same names in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiConfig {
    /// Draw with ASCII only (no box drawing, block or braille characters). Also chosen by
    /// `--ascii`, and automatically when the locale is not UTF-8.
    pub ascii: bool,
    /// Take mouse events (wheel scrolls, click selects). Off by default, so the terminal's
    /// (and tmux's) own selection and copy mode keep working.
    pub mouse: bool,
    /// `q` asks "Quit ratorrent?" while torrents are active (downloading, seeding, checking
    /// or moving), as qBittorrent's "confirm on exit" does. `false` quits at once (the
    /// session is saved either way; scripts driving the TUI want this).
    pub confirm_quit: bool,
    /// The torrent list's columns, by name (`name`, `size`, `progress`, `state`, `down`,
    /// `up`, `eta`, `ratio`, `seeds`, `peers`, `added`, `queue`; any order, the screen keeps
    /// its own; `name` is always shown; `queue` only while queueing is on). The TUI reads the names and refuses unknown ones.
    /// Default: all.
    pub columns: Vec<String>,
    /// Key bindings (`[keys]`): action name → its keys in the text form of the help
    /// window (`"x"`, `"Ctrl-d"`, `"F5"`), replacing that action's defaults; an empty list
    /// unbinds it. Unchecked: the TUI checks names, keys and conflicts.
    pub keys: BTreeMap<String, Lined<Vec<String>>>,
    /// Colours (`[colors]`): role → colour name, unchecked (the TUI knows the roles and
    /// the 16 ANSI colour names).
    pub colors: BTreeMap<String, Lined<String>>,
}

/// A value of the file with the line it is written on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lined<T> {
    /// The value as written.
    pub value: T,
    /// 1-based line of the file the value is on.
    pub line: usize,
}

/// An entry of `[keys]` or `[colors]` the TUI cannot use: where it is and what is wrong.
/// Shown as `line 12: [keys] pause: unknown key name "Hyper-x" (key names: ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryProblem {
    /// 1-based line of the entry in the file.
    pub line: usize,
    /// The table: `"keys"` or `"colors"`.
    pub table: &'static str,
    /// The entry's key: an action name or a colour role, as written.
    pub key: String,
    /// What is wrong and what is allowed.
    pub problem: String,
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: [{}] {}: {}",
            self.line, self.table, self.key, self.problem
        )
    }
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            ascii: false,
            mouse: false,
            confirm_quit: true,
            columns: [
                "name", "size", "progress", "state", "down", "up", "eta", "ratio", "seeds",
                "peers", "added", "queue", "category", "tags",
            ]
            .map(String::from)
            .to_vec(),
            keys: BTreeMap::new(),
            colors: BTreeMap::new(),
        }
    }
}

/// The keys of one action as the file writes them: one key (`"x"`) or a list
/// (`["x", "F2"]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(super) enum KeyList {
    /// One key.
    One(String),
    /// Several keys (empty: the action is unbound).
    Many(Vec<String>),
}

impl KeyList {
    /// The keys as a list.
    pub(super) fn into_vec(self) -> Vec<String> {
        match self {
            KeyList::One(k) => vec![k],
            KeyList::Many(v) => v,
        }
    }
}
