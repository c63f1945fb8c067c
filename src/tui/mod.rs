//! Terminal UI (ratatui + crossterm).
//!
//! The UI reads [`Snapshot`](crate::api::Snapshot)s from the engine's watch channel and
//! [`EngineEvent`](crate::api::EngineEvent)s from its broadcast channel, and sends
//! [`Command`](crate::api::Command)s back; it never touches engine internals.
//!
//! Layers inside the TUI, each importing only those below it:
//! - the event loop ([`run`], [`draw`]): terminal set-up, input, snapshots and engine events
//!   into the model, drawing on change, the shutdown handshake.
//! - [`widgets`]: drawing only, functions of `&App` (plus the speed points).
//! - [`App`]: the model: screens, tabs, the list's view and selection, marks, the open
//!   dialog, help, notices, the event log and the speed history; it turns keys into
//!   commands and never draws.
//! - [`popups`]: one room per dialog (add, limits, move storage, remove, quit) with its
//!   text, its validation and the commands it asks for, over the shared [`popups::form`]
//!   and [`popups::confirm`] state.
//! - the model's parts, plain data with tests of their own: [`screen`] (screens, tabs and
//!   their scroll state), [`scroll`], [`selection`], [`list`] (sort, filter, search, cached
//!   per snapshot), [`file_tree`], [`notice`], [`events`], [`history`] (speed samples for
//!   the graphs), [`help`] and [`general`] (the text of the help window and the General
//!   tab), [`input`] (text fields, path completion), [`cycle`] (orders that wrap around).
//! - keys: [`keymap`] (the bindings in effect: registry defaults plus the config's
//!   overrides) over [`action`] (the one action registry read by the keymap, the help and
//!   the config's `[keys]` section) over [`key`] (key chords and their text form).
//! - [`theme`]: the 16 ANSI colours, `NO_COLOR`, ASCII mode; [`format`](mod@format): human
//!   sizes, rates, ETAs, dates, text made safe to draw; [`terminal`]: the guard that restores
//!   the terminal on every exit path, and the filters that keep idle frames silent and
//!   colours in classic SGR.

pub mod action;
mod app;
pub mod cycle;
mod event_loop;
pub mod events;
pub mod file_tree;
pub mod format;
pub mod general;
pub mod help;
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
pub mod view_file;
pub mod widgets;

pub use app::{App, UiOptions};
pub use event_loop::{RunOptions, SHUTDOWN_TIMEOUT, draw, run};
pub use file_tree::priority_label;
pub use notice::NoticeLevel;
pub use screen::{Screen, Tab};
