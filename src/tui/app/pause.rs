//! The pause key: pause or resume the targeted torrents, and say so when a resume goes
//! against the disk guard (the engine had paused it for lack of free space).

use super::*;
use crate::api::PauseCause;

impl App {
    /// Toggles pause on the targets; a torrent the disk guard paused resumes too, and the
    /// message line says it resumed although space is short.
    pub(super) fn toggle_pause(&mut self) {
        let ids = self.targets();
        let guarded: Vec<(TorrentId, String)> = ids
            .iter()
            .filter_map(|id| {
                let row = self.snapshot.row(*id)?;
                match &row.paused_by {
                    Some(PauseCause::DiskGuard(why)) => Some((*id, why.clone())),
                    None => None,
                }
            })
            .collect();
        if let Some((_, why)) = guarded.first() {
            let what = self.describe(&guarded.iter().map(|g| g.0).collect::<Vec<_>>());
            self.set_info(format!(
                "resumed {what} although {why} (below min_free_space)"
            ));
        }
        for id in ids {
            self.outbox.push(Command::TogglePause(id));
        }
    }
}
