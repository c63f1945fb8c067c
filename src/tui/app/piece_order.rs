//! The piece order keys: sequential download (`z`) and first and last pieces first (`Z`)
//! for the targeted torrents, each a switch: on for all of them unless all have it on
//! already, then off; the message line says which.

use super::*;

impl App {
    /// Sequential download (`sequential`) or first and last pieces first on or off for the
    /// targets.
    pub(super) fn toggle_piece_order(&mut self, sequential: bool) {
        let ids = self.targets();
        if ids.is_empty() {
            return;
        }
        let has = |r: &crate::api::TorrentRow| {
            if sequential {
                r.sequential
            } else {
                r.first_last
            }
        };
        let on = !ids.iter().all(|id| self.snapshot.row(*id).is_some_and(has));
        let what = self.describe(&ids);
        let text = match (sequential, on) {
            (true, true) => format!("{what}: sequential download on (pieces in order)"),
            (true, false) => format!("{what}: sequential download off (rarest pieces first)"),
            (false, true) => format!("{what}: first and last pieces of each file first"),
            (false, false) => format!("{what}: first and last pieces first off"),
        };
        self.set_info(text);
        self.outbox.push(if sequential {
            Command::SetSequential { ids, on }
        } else {
            Command::SetFirstLastPiecePrio { ids, on }
        });
    }
}
