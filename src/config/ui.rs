//! The terminal UI's part of the configuration: drawing, mouse, quitting, the list's
//! columns, `[keys]` and `[colors]`. The engine never sees it.

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
    /// `up`, `eta`, `ratio`, `seeds`, `peers`, `added`; any order, the screen keeps its own;
    /// `name` is always shown). The TUI reads the names and refuses unknown ones.
    /// Default: all.
    pub columns: Vec<String>,
    /// Key bindings: action name → key or list of keys, replacing that action's defaults
    /// (see the help window, `?`, for the names).
    pub keys: BTreeMap<String, KeyList>,
    /// Colours: role → one of the 16 ANSI colour names.
    pub colors: BTreeMap<String, String>,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            ascii: false,
            mouse: false,
            confirm_quit: true,
            columns: [
                "name", "size", "progress", "state", "down", "up", "eta", "ratio", "seeds",
                "peers", "added",
            ]
            .map(String::from)
            .to_vec(),
            keys: BTreeMap::new(),
            colors: BTreeMap::new(),
        }
    }
}

/// The keys of one action in the `[keys]` section: one key (`"x"`) or a list (`["x", "F2"]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KeyList {
    /// One key.
    One(String),
    /// Several keys (empty: the action is unbound).
    Many(Vec<String>),
}

impl KeyList {
    /// The keys as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            KeyList::One(k) => vec![k.clone()],
            KeyList::Many(v) => v.clone(),
        }
    }
}

impl UiConfig {
    /// The `[keys]` section as action name → key texts.
    pub fn key_overrides(&self) -> BTreeMap<String, Vec<String>> {
        self.keys
            .iter()
            .map(|(name, keys)| (name.clone(), keys.to_vec()))
            .collect()
    }

    /// The `[colors]` section as role → colour.
    ///
    /// # Errors
    /// An unknown role or colour name, in a sentence naming it.
    pub fn color_overrides(
        &self,
    ) -> Result<BTreeMap<crate::tui::theme::Role, ratatui::style::Color>, String> {
        use crate::tui::theme::{Role, parse_color};
        let mut out = BTreeMap::new();
        for (name, value) in &self.colors {
            let Some((role, _, _)) = Role::ALL.iter().find(|(_, n, _)| n == name) else {
                let names: Vec<&str> = Role::ALL.iter().map(|(_, n, _)| *n).collect();
                return Err(format!(
                    "unknown colour role {name:?} (roles: {})",
                    names.join(", ")
                ));
            };
            out.insert(
                *role,
                parse_color(value).map_err(|e| format!("{name}: {e}"))?,
            );
        }
        Ok(out)
    }
}
