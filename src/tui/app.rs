//! The UI state machine: what is selected, whether help is open, whether to quit. Pure data,
//! testable without a terminal: feed it snapshots and key events, read back commands and
//! draw it on any ratatui backend (tests use `TestBackend`).

use std::cell::Cell;
use std::sync::Arc;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};

use crate::api::{Command, Snapshot, TorrentId, TorrentRow};

use super::action::{Action, Context};
use super::keymap;
use super::widgets::{detail, help, status, torrent_table};

/// State of the terminal UI between frames.
///
/// The selection is kept by [`TorrentId`], so it stays on the same torrent when rows are
/// reordered; when the selected torrent disappears, the row that took its place (or the
/// new last row) is selected instead.
#[derive(Debug)]
pub struct App {
    /// The latest snapshot from the engine.
    snapshot: Arc<Snapshot>,
    /// Selected torrent; `None` only when the list is empty.
    selected: Option<TorrentId>,
    /// Index of the selected row in the last snapshot that contained it, to pick a
    /// neighbour when it is removed.
    selected_index: usize,
    /// First visible row of the list; set while drawing, when the list height is known.
    offset: Cell<usize>,
    /// Help overlay open.
    help_open: bool,
    /// The user asked to quit.
    quit: bool,
    /// Transient message for the status bar (e.g. "shutting down…").
    notice: Option<String>,
}

impl App {
    /// A UI showing `snapshot`, with the first torrent selected (if any).
    pub fn new(snapshot: Arc<Snapshot>) -> Self {
        let mut app = App {
            snapshot,
            selected: None,
            selected_index: 0,
            offset: Cell::new(0),
            help_open: false,
            quit: false,
            notice: None,
        };
        app.reconcile_selection();
        app
    }

    /// Replaces the snapshot shown and keeps the selection on the same torrent. Returns
    /// whether anything visible may have changed (`false` for the same `Arc` or an equal
    /// snapshot), so the caller can skip a redraw.
    pub fn set_snapshot(&mut self, snapshot: Arc<Snapshot>) -> bool {
        // Derived PartialEq compares `seq` first, so differing snapshots are cheap to tell.
        let changed = !Arc::ptr_eq(&self.snapshot, &snapshot) && *self.snapshot != *snapshot;
        self.snapshot = snapshot;
        self.reconcile_selection();
        changed
    }

    /// The snapshot shown.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The selected torrent, `None` when the list is empty.
    pub fn selected(&self) -> Option<TorrentId> {
        self.selected
    }

    /// The selected torrent's row.
    pub fn selected_row(&self) -> Option<&TorrentRow> {
        self.selected.and_then(|id| self.snapshot.row(id))
    }

    /// Whether the help overlay is open.
    pub fn help_open(&self) -> bool {
        self.help_open
    }

    /// Whether the user asked to quit (the event loop then shuts the engine down).
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Sets or clears the status bar notice (e.g. `"shutting down…"`).
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.notice = notice;
    }

    /// The status bar notice, if any.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// The key context in effect: [`Context::Help`] while the overlay is open, else
    /// [`Context::List`].
    pub fn context(&self) -> Context {
        if self.help_open {
            Context::Help
        } else {
            Context::List
        }
    }

    /// Handles one key event: looks it up in the action registry for the current context and
    /// applies the action. Returns the commands to send to the engine (empty for keys that
    /// only change the UI, unbound keys and key releases). Clears any notice.
    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Command> {
        match keymap::lookup(self.context(), &key) {
            Some(action) => {
                self.notice = None;
                self.apply(action)
            }
            None => Vec::new(),
        }
    }

    /// Applies `action`; returns the commands it needs sent to the engine.
    pub fn apply(&mut self, action: Action) -> Vec<Command> {
        let len = self.snapshot.rows.len();
        let current = self.selected_position();
        match action {
            Action::MoveDown => {
                self.select_index(current.map_or(0, |i| i.saturating_add(1).min(len - 1)))
            }
            Action::MoveUp => self.select_index(current.map_or(0, |i| i.saturating_sub(1))),
            Action::First => self.select_index(0),
            Action::Last => self.select_index(len.saturating_sub(1)),
            Action::TogglePause => {
                return self
                    .selected
                    .map(Command::TogglePause)
                    .into_iter()
                    .collect();
            }
            Action::ToggleHelp => self.help_open = !self.help_open,
            Action::CloseHelp => self.help_open = false,
            Action::Quit => self.quit = true,
        }
        Vec::new()
    }

    /// Draws the whole screen: torrent list, detail line, status bar, and the help overlay
    /// when open. Works at any size (tiny areas simply show less).
    pub fn draw(&self, frame: &mut Frame) {
        let [list, detail_area, status_area] = frame.area().layout(&Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Length(1),
        ]));
        torrent_table::render(
            frame,
            list,
            &self.snapshot.rows,
            self.selected_position(),
            &self.offset,
        );
        detail::render(frame, detail_area, self.selected_row());
        status::render(frame, status_area, &self.snapshot, self.notice.as_deref());
        if self.help_open {
            help::render(frame, frame.area());
        }
    }

    /// Index of the selected torrent in the current snapshot.
    fn selected_position(&self) -> Option<usize> {
        let id = self.selected?;
        self.snapshot.rows.iter().position(|r| r.id == id)
    }

    /// Selects the row at `index` (ignored when out of range).
    fn select_index(&mut self, index: usize) {
        if let Some(row) = self.snapshot.rows.get(index) {
            self.selected = Some(row.id);
            self.selected_index = index;
        }
    }

    /// Keeps the selection on the same torrent, or on its neighbour if it is gone.
    fn reconcile_selection(&mut self) {
        if let Some(index) = self.selected_position() {
            self.selected_index = index;
            return;
        }
        let rows = &self.snapshot.rows;
        match rows.len() {
            0 => {
                self.selected = None;
                self.selected_index = 0;
            }
            len => self.select_index(self.selected_index.min(len - 1)),
        }
    }
}
