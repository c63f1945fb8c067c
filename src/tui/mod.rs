//! Terminal UI (ratatui + crossterm).
//!
//! The UI reads [`Snapshot`](crate::api::Snapshot)s from the engine's watch channel and
//! [`EngineEvent`](crate::api::EngineEvent)s from its broadcast channel, and sends
//! [`Command`](crate::api::Command)s back; it never touches engine internals.
//!
//! - [`run`]: the event loop (terminal set-up, drawing on change, shutdown handshake).
//! - [`App`]: the pure state machine (screens, tabs, list view, dialogs, help), testable
//!   without a terminal.
//! - [`key`]: key chords and their text form; [`action`]: the one action registry read by
//!   the keymap, the help and the config's `[keys]` section; [`keymap`]: the active
//!   bindings (registry defaults plus the config's overrides).
//! - [`list`]: sort, filter and search of the torrent list, cached per snapshot.
//! - [`history`]: speed samples for the graphs.
//! - [`theme`]: the 16 ANSI colours, `NO_COLOR`, ASCII mode.
//! - [`format`](mod@format): human sizes, rates, ETAs, dates; text made safe to draw.
//! - [`terminal`]: the guard that restores the terminal on every exit path, and the filters
//!   that keep idle frames silent and colours in classic SGR.

pub mod action;
mod app;
mod event_loop;
pub mod events;
pub mod file_tree;
pub mod format;
pub mod history;
pub mod input;
pub mod key;
pub mod keymap;
pub mod list;
pub mod notice;
pub mod popups;
pub mod screen;
pub mod scroll;
pub mod selection;
pub mod terminal;
pub mod theme;
pub mod widgets;

pub use app::{App, UiOptions};
pub use event_loop::{RunOptions, SHUTDOWN_TIMEOUT, run};
pub use file_tree::priority_label;
pub use notice::NoticeLevel;
pub use screen::{Screen, Tab};
