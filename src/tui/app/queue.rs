//! The queue keys: move the targeted torrents in the queue (`[` `]` `{` `}`) and force
//! start them (`!`), saying what was done (and, while queueing is off, that the order
//! only matters once it is on).

use super::*;

impl App {
    /// Moves the targets in the queue.
    pub(super) fn queue_move(&mut self, to: QueueMove) {
        let ids = self.targets();
        if ids.is_empty() {
            return;
        }
        let place = |id: &TorrentId| self.snapshot.row(*id).map_or(0, |r| r.queue_pos);
        let n = self.snapshot.rows.len() as u32;
        let (first, last) = (ids.iter().map(place).min(), ids.iter().map(place).max());
        let already = match to {
            QueueMove::Up | QueueMove::Top => first == Some(1) && ids.len() == 1,
            QueueMove::Down | QueueMove::Bottom => last == Some(n) && ids.len() == 1,
        };
        let what = self.describe(&ids);
        let off = if self.snapshot.global.queueing {
            ""
        } else {
            " (queueing is off: [queue] enabled = true in the config)"
        };
        let text = match (already, to) {
            (true, QueueMove::Up | QueueMove::Top) => format!("{what} is first in the queue"),
            (true, _) => format!("{what} is last in the queue"),
            (false, QueueMove::Up) => format!("{what}: one place up{off}"),
            (false, QueueMove::Down) => format!("{what}: one place down{off}"),
            (false, QueueMove::Top) => format!("{what}: to the top of the queue{off}"),
            (false, QueueMove::Bottom) => format!("{what}: to the bottom of the queue{off}"),
        };
        self.set_info(text);
        if !already {
            self.outbox.push(Command::QueueMove { ids, to });
        }
    }

    /// Force starts the targets, or gives them back to the queue when all of them are
    /// force started already.
    pub(super) fn toggle_force_start(&mut self) {
        let ids = self.targets();
        if ids.is_empty() {
            return;
        }
        let forced = !ids
            .iter()
            .all(|id| self.snapshot.row(*id).is_some_and(|r| r.forced));
        let what = self.describe(&ids);
        self.set_info(if forced {
            format!("{what}: force started (runs whatever the queue says)")
        } else {
            format!("{what}: back in the queue (no longer forced)")
        });
        self.outbox.push(Command::SetForceStart { ids, forced });
    }
}
