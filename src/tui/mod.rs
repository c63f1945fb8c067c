//! Terminal UI (ratatui + crossterm).
//!
//! The UI reads [`Snapshot`](crate::api::Snapshot)s from the engine's watch channel and sends
//! [`Command`](crate::api::Command)s back; it never touches engine internals.
//!
//! - [`run`]: the event loop (terminal set-up, drawing on change, shutdown handshake).
//! - [`App`]: the pure state machine (selection, help, quit), testable without a terminal.
//! - [`action`]: the one action registry read by both the key dispatcher ([`keymap`]) and the
//!   help overlay.
//! - [`format`](mod@format): human sizes, rates, ETAs.
//! - [`terminal`]: the guard that restores the terminal on every exit path.

pub mod action;
mod app;
mod event_loop;
pub mod format;
pub mod keymap;
pub mod terminal;
mod theme;
mod widgets;

pub use app::App;
pub use event_loop::{SHUTDOWN_TIMEOUT, run, run_with_notice};
