//! Moving a torrent's files to another folder (on a blocking thread, out of the swarm
//! meanwhile), pointing it at files the user moved ("set location", then a recheck), and
//! the paths a delete-data removes.

use std::path::PathBuf;

use super::jobs::MoveProgress;
use super::state::Input;
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, TorrentState};
use crate::engine::ctx::SessionEvent;

impl Torrent {
    /// Move the files to `to` (`move_data`), or only point the torrent there and recheck
    /// ("set location", the user moved the files). A move runs on a blocking thread; the
    /// torrent is out of the swarm meanwhile and comes back as it was.
    pub fn move_storage(&mut self, to: PathBuf, move_data: bool, env: &mut Env<'_>) {
        if to == self.save_dir {
            return;
        }
        if self.awaiting_metadata() {
            // no files yet: the download simply goes there, once the folder is known to be
            // usable (as a move of data would find out), so the failure shows now and not
            // when the metadata arrives
            if let Err(e) = std::fs::create_dir_all(&to) {
                self.log(
                    env,
                    EventLevel::Warn,
                    EventKind::StateChanged,
                    format!(
                        "cannot use {} as its save folder: {e}; it stays in {}",
                        to.display(),
                        self.save_dir.display()
                    ),
                );
                return;
            }
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                format!("save folder set to {}", to.display()),
            );
            self.set_save_dir(to);
            return;
        }
        if !move_data {
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                format!("location set to {}; rechecking", to.display()),
            );
            self.set_save_dir(to);
            self.input(Input::Recheck, env);
            return;
        }
        let before = self.life.ui_state();
        let progress = MoveProgress::default();
        self.input(Input::MoveStart(progress.clone()), env);
        if self.life.ui_state() != TorrentState::Moving {
            self.log(
                env,
                EventLevel::Warn,
                EventKind::StateChanged,
                format!("cannot move while {}", before.label().to_lowercase()),
            );
            return;
        }
        let Ok(meta) = self.load_meta(env) else {
            self.input(Input::MoveDone, env);
            return;
        };
        // no storage is open in the Moving state: no handle stays open on the old files
        let rel = crate::storage::PayloadFiles::of(&meta, &self.save_dir).files;
        let from = self.save_dir.clone();
        let ctx = env.ctx.clone();
        let id = self.id;
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!(
                "moving its files from {} to {}",
                from.display(),
                to.display()
            ),
        );
        tokio::task::spawn_blocking(move || {
            let result = crate::storage::mover::move_payload(&from, &to, &rel, progress.counter())
                .map(|()| to)
                .map_err(|e| e.to_string());
            ctx.send(SessionEvent::Moved {
                torrent: id,
                result,
            });
        });
    }

    /// A move ended.
    pub fn on_moved(&mut self, result: Result<PathBuf, String>, env: &mut Env<'_>) {
        match result {
            Ok(to) => {
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("files moved to {}", to.display()),
                );
                self.set_save_dir(to);
            }
            Err(e) => self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("moving failed, the files stay where they were: {e}"),
            ),
        }
        self.input(Input::MoveDone, env);
    }

    pub(super) fn set_save_dir(&mut self, to: PathBuf) {
        self.save_dir = to;
        // the storage open now (a check's, the connections') goes with its state (a
        // recheck follows); its handles on the old files close at once
        self.close_storage();
        self.file_stats.clear();
        self.persist_dirty = true;
    }

    /// The payload files, the part file and the top folder, for delete-data; `None` when
    /// the metainfo cannot be loaded.
    pub fn data_paths(&mut self, env: &Env<'_>) -> Option<crate::storage::PayloadFiles> {
        let meta = self.load_meta(env).ok()?;
        Some(crate::storage::PayloadFiles::of(&meta, &self.save_dir))
    }
}
