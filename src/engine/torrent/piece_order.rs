//! A torrent's piece order: sequential download (new pieces in index order) and "first and
//! last pieces first" (previews), qBittorrent's `sequentialDownload` and
//! `firstLastPiecePrio`. Both are kept in the record ([`crate::state::ManageRecord`]); the
//! picker gets them when the connections' shared state is made and whenever they change.

use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel};
use crate::engine::picker::Picker;

impl Torrent {
    /// Sequential download is on.
    pub fn sequential(&self) -> bool {
        self.manage.sequential
    }

    /// First and last pieces first is on.
    pub fn first_last(&self) -> bool {
        self.manage.first_last
    }

    /// The piece order an add asked for (before the torrent starts: nothing to log).
    pub fn set_order_on_add(&mut self, sequential: bool, first_last: bool) {
        self.manage.sequential = sequential;
        self.manage.first_last = first_last;
    }

    /// Sequential download on or off: new pieces in index order among the wanted ones
    /// (higher file priorities first), or rarest first. A running torrent's picker changes
    /// at once; pieces in progress are finished either way. Said in the event log.
    pub fn set_sequential(&mut self, on: bool, env: &mut Env<'_>) {
        if self.manage.sequential == on {
            return;
        }
        self.manage.sequential = on;
        self.persist_dirty = true;
        if let Some(s) = self.shared() {
            s.picker().set_sequential(on);
        }
        let what = if on {
            "sequential download on: pieces in order"
        } else {
            "sequential download off: rarest pieces first"
        };
        self.log(env, EventLevel::Info, EventKind::PieceOrder, what.into());
    }

    /// First and last pieces first on or off: the first and last pieces of each wanted file
    /// (see [`super::wanted::Wanted::first_last_pieces`]) are picked before any other.
    pub fn set_first_last(&mut self, on: bool, env: &mut Env<'_>) {
        if self.manage.first_last == on {
            return;
        }
        self.manage.first_last = on;
        self.persist_dirty = true;
        if let Some(s) = self.shared() {
            s.picker().set_priorities(&self.piece_levels());
        }
        let what = if on {
            "first and last pieces of each file first"
        } else {
            "first and last pieces first off"
        };
        self.log(env, EventLevel::Info, EventKind::PieceOrder, what.into());
    }

    /// The picker's priority level of every piece: the files' priorities, with the first
    /// and last pieces raised while that is on.
    pub(super) fn piece_levels(&self) -> Vec<u8> {
        if self.manage.first_last && !self.awaiting_metadata() {
            self.wanted.for_picker_first_last(&self.sum)
        } else {
            self.wanted.for_picker_all(self.sum.piece_count())
        }
    }

    /// Give a new picker the torrent's piece order and priorities (every piece normal and
    /// rarest first cost nothing to set).
    pub(super) fn order_picker(&self, picker: &mut Picker) {
        if self.manage.first_last {
            picker.set_priorities(&self.piece_levels());
        } else if let Some(p) = self.wanted.for_picker() {
            picker.set_priorities(p);
        }
        if self.manage.sequential {
            picker.set_sequential(true);
        }
    }
}
