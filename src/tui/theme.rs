//! Colours and text styles. Only the 16 ANSI colours and plain modifiers are used, so the
//! screen reads the same on a 16-colour terminal, under tmux and over SSH.

use ratatui::style::{Color, Modifier, Style};

use crate::api::{TorrentRow, TorrentState};

/// Table header row.
pub const HEADER: Style = Style::new().add_modifier(Modifier::BOLD);
/// The selected row (reverse video works everywhere, even without colours).
pub const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
/// Symbol in front of the selected row; plain ASCII so it is one cell in every locale.
pub const SELECTED_SYMBOL: &str = ">";
/// Filled part of a progress bar.
pub const BAR_FILLED: Style = Style::new().fg(Color::Green);
/// Empty part of a progress bar.
pub const BAR_EMPTY: Style = Style::new().fg(Color::DarkGray);
/// Download rate figures.
pub const DOWN: Style = Style::new().fg(Color::Cyan);
/// Upload rate figures.
pub const UP: Style = Style::new().fg(Color::Magenta);
/// Warnings: tracker errors on a running torrent, transient notices.
pub const WARNING: Style = Style::new().fg(Color::Yellow);
/// Errors: a torrent stopped by an error.
pub const ERROR: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
/// Status bar background line.
pub const STATUS_BAR: Style = Style::new().fg(Color::White).bg(Color::Blue);
/// Notice inside the status bar (e.g. "shutting down…").
pub const STATUS_NOTICE: Style = Style::new()
    .fg(Color::Yellow)
    .bg(Color::Blue)
    .add_modifier(Modifier::BOLD);
/// Key names in the status bar hint.
pub const STATUS_KEY: Style = Style::new()
    .fg(Color::Yellow)
    .bg(Color::Blue)
    .add_modifier(Modifier::BOLD);
/// Key names in the help overlay and hints.
pub const KEY: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
/// Section titles in the help overlay.
pub const TITLE: Style = Style::new().add_modifier(Modifier::BOLD);
/// Secondary text (the detail line when there is nothing to warn about).
pub const DIM: Style = Style::new().add_modifier(Modifier::DIM);

/// Style of a torrent's state label: red for errors, yellow when the row carries a message
/// (e.g. a tracker error on a running torrent), otherwise a colour per state.
pub fn state(row: &TorrentRow) -> Style {
    match row.state {
        TorrentState::Error => ERROR,
        _ if row.message.is_some() => WARNING,
        TorrentState::Downloading => Style::new().fg(Color::Cyan),
        TorrentState::Seeding | TorrentState::Completed => Style::new().fg(Color::Green),
        TorrentState::Checking | TorrentState::FetchingMetadata | TorrentState::Moving => {
            Style::new().fg(Color::Magenta)
        }
        TorrentState::Paused | TorrentState::Queued => DIM,
    }
}
