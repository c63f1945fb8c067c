//! The dialogs, one room each: its state, its text and keys, its validation, and the
//! commands it asks for. The model ([`super::app::App`]) opens them and applies what they
//! return; [`super::widgets`] draws them. Nothing here imports the model or a widget.
//!
//! - [`form`]: a dialog with fields (the machinery the add, limits and move dialogs share);
//!   [`confirm`]: a yes/no question.
//! - [`add`]: add a torrent (a .torrent path or a magnet link, where to save it, paused).
//! - [`create`]: make a torrent of a file or folder (v1, v2 or hybrid) and seed it.
//! - [`limits`]: the session's and the selected torrents' rate limits.
//! - [`move_storage`]: move the selected torrents' data to another folder.
//! - [`add_peer`]: give the torrent of the detail view a peer address to dial.
//! - [`remove`]: remove torrents, keeping or deleting their data.
//! - [`quit`]: quit while torrents are active.
//! - [`category`], [`tags`]: the selected torrents' category (and automatic management)
//!   and tags.
//! - [`trackers`]: find/replace in the tracker URLs of torrents.

pub mod add;
pub mod add_peer;
pub mod category;
pub mod confirm;
pub mod create;
pub mod form;
pub mod goals;
pub mod limits;
pub mod move_storage;
pub mod quit;
pub mod remove;
pub mod tags;
pub mod trackers;

use self::confirm::Confirm;
use self::form::Form;
use super::action::Context;

/// The open dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialog {
    /// A form.
    Form(Form),
    /// A yes/no question.
    Confirm(Confirm),
}

impl Dialog {
    /// The key context while it is open: typing goes into a form's fields; a question
    /// answers to yes and no.
    pub fn context(&self) -> Context {
        match self {
            Dialog::Form(_) => Context::Form,
            Dialog::Confirm(_) => Context::Confirm,
        }
    }
}
