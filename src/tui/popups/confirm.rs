//! A yes/no question (remove, remove and delete, quit): what it confirms, its title and
//! its lines. [`super::remove`] and [`super::quit`] write the questions.

use crate::api::TorrentId;

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
    /// Quit and stop the daemon this TUI is attached to.
    QuitDaemon,
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
    /// Enter answers no, whatever the keymap says (a question whose yes cannot be undone:
    /// remove and delete); only the yes key says yes.
    pub enter_denies: bool,
}
