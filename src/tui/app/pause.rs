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
                let Some(PauseCause::DiskGuard(why)) = row.paused_by.as_ref() else {
                    return None;
                };
                Some((*id, why.clone()))
            })
            .collect();
        // a seeding goal holds it: the engine keeps it stopped and says why
        let goal = ids.iter().find_map(|id| {
            let row = self.snapshot.row(*id)?;
            let Some(PauseCause::Goal(why)) = row.paused_by.as_ref() else {
                return None;
            };
            Some(why.clone())
        });
        if let Some(why) = goal {
            let what = match why.split(' ').next() {
                Some("ratio") => "ratio",
                Some("inactive") => "inactive time",
                _ => "seeding time",
            };
            let key = self.opts.keymap.hint(Action::Goals);
            self.set_info(format!(
                "{what} goal reached ({why}): raise the goal to seed on ({key})"
            ));
        }
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
