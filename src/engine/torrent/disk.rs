//! The torrent and its files: opening them for the disk threads, checking the data on
//! disk, the state its connections share (made with the storage when the first peer
//! comes), and the disk threads' results (a piece verified or failed, a write error).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::live::Live;
use super::state::Input;
use super::{Env, Torrent};
use crate::api::{
    EventKind, EventLevel, FilePriority, TorrentError, TorrentErrorKind, TorrentId, TorrentState,
};
use crate::engine::ctx::{SessionCtx, SessionEvent};
use crate::engine::link::message::PeerCtrl;
use crate::engine::link::shared::TorrentShared;
use crate::engine::picker::Picker;
use crate::metainfo::Metainfo;
use crate::piece::Bitfield;
use crate::storage::disk::{DiskEvent, TorrentDisk};
use crate::storage::{Storage, StorageError};

/// Lay `meta`'s files out under `save_dir` for the disk threads; their results go to the
/// session as [`SessionEvent::Disk`] tagged with the returned disk's `key` (fresh per
/// call, so results of an older opening are told apart).
///
/// # Errors
/// A path that cannot be placed safely under `save_dir`.
pub fn open_disk(
    id: TorrentId,
    meta: &Metainfo,
    save_dir: &std::path::Path,
    ctx: &SessionCtx,
) -> Result<Arc<TorrentDisk>, StorageError> {
    // storage mode, preallocation and the open-file cap from the config; one handle cache
    // for the process until the session owns one (lead: `ctx.handles.clone()`)
    let handles = crate::storage::HandleCache::process_with_capacity(ctx.config.open_file_cap());
    let storage = Storage::for_torrent(meta, save_dir, ctx.config.storage_options(handles))?;
    let key = ctx.key();
    let events = ctx.events.clone();
    Ok(Arc::new(TorrentDisk {
        key,
        storage,
        geometry: meta.geometry(),
        hashes: meta.hashes(),
        unchecked: crate::piece::HaveBits::new(meta.geometry().piece_count()),
        sink: Arc::new(move |event| {
            let _ = events.send(SessionEvent::Disk {
                torrent: id,
                disk_key: key,
                event,
            });
        }),
    }))
}

impl Torrent {
    /// Open the storage for a check or for the connections, files to skip set.
    ///
    /// # Errors
    /// The metainfo cannot be loaded, or its paths cannot be placed under the save folder.
    pub(super) fn open_storage(&mut self, env: &Env<'_>) -> Result<Arc<TorrentDisk>, TorrentError> {
        let meta = self.load_meta(env)?;
        let disk =
            open_disk(self.id, &meta, &self.save_dir, env.ctx).map_err(|e| storage_error(&e))?;
        for (i, p) in self.wanted.files().iter().enumerate() {
            if *p == FilePriority::Skip {
                disk.storage
                    .set_skipped(i, true)
                    .map_err(|e| storage_error(&e))?;
            }
        }
        Ok(disk)
    }

    /// Drop the files' handles so the next use opens the files afresh: the user may have
    /// fixed, moved back or replaced them.
    pub(super) fn close_storage(&mut self) {
        if let Some(d) = self.life.disk() {
            d.storage.close_all();
        }
    }

    /// Start the hashing thread of the check its `Checking` state holds (with the storage
    /// opened for it).
    pub(super) fn start_check(&mut self, env: &mut Env<'_>) {
        let Some(job) = self.life.check_job() else {
            return;
        };
        let (key, handles, disk) = (job.key(), job.handles(), job.disk().clone());
        let ctx = env.ctx.clone();
        let id = self.id;
        let geo = self.sum.geometry;
        let threads = ctx.config.disk_thread_count();
        tokio::task::spawn_blocking(move || {
            // check only: files are created by their first write (Storage::prepare_root,
            // create_empty_files)
            let result = {
                let report = if disk.storage.any_data_present() {
                    crate::storage::check::check_report(
                        &disk.storage,
                        geo,
                        &disk.hashes,
                        threads,
                        &handles.progress,
                        &handles.cancel,
                    )
                } else {
                    crate::storage::check::CheckReport {
                        have: Bitfield::new(geo.piece_count()),
                        oversized: Vec::new(),
                        unreadable: Vec::new(),
                        finished: true,
                    }
                };
                // what the files look like now, for the resume data
                Ok((report, disk.storage.file_stats()))
            };
            ctx.send(SessionEvent::Checked {
                torrent: id,
                check_key: key,
                result,
            });
        });
    }

    /// A check finished.
    pub fn on_checked(
        &mut self,
        check_key: u64,
        result: Result<
            (
                crate::storage::check::CheckReport,
                Vec<crate::state::FileStat>,
            ),
            StorageError,
        >,
        env: &mut Env<'_>,
    ) {
        if self.life.check_job().is_none_or(|c| c.key() != check_key) {
            return; // cancelled or superseded
        }
        match result {
            Ok((report, stats)) => {
                self.file_stats = stats;
                for f in &report.oversized {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::DiskError,
                        format!(
                            "{} is longer than the torrent says: its last piece is fetched again and the file cut to size",
                            f.display()
                        ),
                    );
                }
                if let Some(e) = report.unreadable.first() {
                    let more = report.unreadable.len() - 1;
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::DiskError,
                        if more > 0 {
                            format!("{e} (and {more} more files unreadable)")
                        } else {
                            e.to_string()
                        },
                    );
                }
                let have = report.have;
                let n = have.count();
                let lost = self.have.count().saturating_sub(n);
                if lost > 0 {
                    let files = self.sum.files.spans();
                    let real = files.iter().filter(|f| !f.pad && f.length > 0).count();
                    let missing = files
                        .iter()
                        .zip(&self.file_stats)
                        .filter(|(f, st)| !f.pad && f.length > 0 && st.is_none())
                        .count();
                    let why = if missing > 0 {
                        format!(" ({missing} of {real} files missing)")
                    } else {
                        String::new()
                    };
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::Checked,
                        format!(
                            "{lost} pieces verified before are gone{why}; they are downloaded again (if the data was moved, set its new location instead)"
                        ),
                    );
                }
                self.have = have;
                // complete as found on disk: completed now, for the Web API's
                // `completion_on` (qBittorrent and libtorrent say so too)
                if self.have.is_full() {
                    self.completed_at.get_or_insert_with(super::now_unix);
                }
                self.forget_unchecked();
                self.persist_dirty = true;
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::Checked,
                    format!("checked: {n}/{} pieces verified", self.sum.piece_count()),
                );
                self.input(Input::CheckDone, env);
            }
            Err(e) => self.input(Input::CheckFailed(storage_error(&e)), env),
        }
    }

    /// The state peer connections share, made (with the storage) if needed; kept in the
    /// running state (`None` in a state that runs no connections of the full protocol).
    /// On a storage or metainfo failure the torrent stops with the error.
    pub(super) fn ensure_shared(&mut self, env: &mut Env<'_>) -> Option<Arc<TorrentShared>> {
        match self.life.live_slot() {
            None => return None,
            Some(Some(live)) => return Some(live.shared().clone()),
            Some(None) => {}
        }
        let disk = match self.open_storage(env) {
            Ok(d) => d,
            Err(err) => {
                self.input(Input::Failed(err), env);
                return None;
            }
        };
        // downloading: the download folder must exist for files to be created by their
        // first write (checking created nothing)
        if !self.have.is_full()
            && let Err(e) = disk.storage.prepare_root()
        {
            self.input(Input::Failed(storage_error(&e)), env);
            return None;
        }
        self.load_unchecked(&disk);
        let geo = self.sum.geometry;
        let mut picker = Picker::new(geo, self.have.clone());
        self.order_picker(&mut picker);
        let s = Arc::new(TorrentShared::new(
            self.id,
            self.sum.info_hash,
            geo,
            picker,
            disk,
            env.ctx.link.clone(),
            self.limits.clone(),
        ));
        s.set_accepting(self.life.is_running());
        s.set_dht(self.dht_allowed(env));
        if let Some(m) = self.info.resident() {
            s.set_metadata(Arc::from(m.info_bytes.as_slice()));
        }
        s.set_private(self.sum.private);
        *self.life.live_slot()? = Some(Live::new(s.clone()));
        Some(s)
    }

    /// Verified piece `piece` could not be read back. When its file is gone (deleted, or
    /// replaced under an open handle) the torrent stops in Error with
    /// [`TorrentErrorKind::FilesMissing`] (the user put the files back, points the torrent
    /// at them, or resumes to download them again: resuming rechecks); seeding on as if
    /// one piece were missing would hide that a whole file is. Otherwise (a short file, a
    /// read error) only that piece is un-verified and fetched again.
    pub(super) fn piece_lost(&mut self, piece: u32, error: &StorageError, env: &mut Env<'_>) {
        let Some(shared) = self.shared().cloned() else {
            return;
        };
        if file_gone(error) {
            if self.life.ui_state() != TorrentState::Error {
                self.fail_on_disk(error, env);
            }
            return;
        }
        if !shared.have.clear(piece) {
            return;
        }
        shared.picker().piece_lost(piece);
        if !self.lost_pieces_logged {
            self.lost_pieces_logged = true;
            self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("verified data is missing on disk ({error}); fetching those pieces again"),
            );
        }
        self.peers.broadcast(&PeerCtrl::CheckInterest);
        self.input(Input::PiecesLost, env);
    }

    /// A disk worker's result.
    pub fn on_disk(&mut self, disk_key: u64, ev: DiskEvent, env: &mut Env<'_>) {
        let Some(shared) = self.shared().cloned() else {
            return;
        };
        if shared.disk.key != disk_key {
            return; // a result for storage opened before a pause or an error
        }
        match ev {
            DiskEvent::PieceVerified(p) => {
                let complete = {
                    let mut pk = shared.picker();
                    if !pk.piece_verified(p) {
                        return;
                    }
                    shared.have.set(p);
                    pk.is_finished()
                };
                self.persist_dirty = true;
                self.peers.broadcast(&PeerCtrl::Have(p));
                if complete {
                    // the files must still be the ones we wrote (a deleted download folder
                    // leaves open handles writing into unlinked files); only the verified
                    // bytes count, and a skipped file (maybe partly written) never fails it
                    let have = shared.have.to_bitfield();
                    let skip = self.wanted.files();
                    let skipped = |i: usize| skip.get(i) == Some(&FilePriority::Skip);
                    if let Err(e) = shared.disk.storage.create_empty_files().and_then(|()| {
                        shared.disk.storage.verify_verified_present(
                            &shared.geometry,
                            &have,
                            &skipped,
                        )
                    }) {
                        self.fail_on_disk(&e, env);
                        return;
                    }
                    self.log(
                        env,
                        EventLevel::Info,
                        EventKind::Completed,
                        "download complete".into(),
                    );
                    self.run_hook(crate::engine::hooks::HookWhen::Completed, env);
                    self.peers.broadcast(&PeerCtrl::CheckInterest);
                    self.input(Input::Complete, env);
                }
            }
            DiskEvent::PieceFailed(p) => {
                let peers = shared.picker().piece_failed(p);
                let size = u64::from(shared.geometry.piece_size(p));
                shared.stats.wasted.fetch_add(size, Ordering::Relaxed);
                self.log(
                    env,
                    EventLevel::Warn,
                    EventKind::HashFailed,
                    format!("piece {p} failed its hash check; fetching it again"),
                );
                // peers we lost interest in while the piece was being hashed have it again
                self.peers.broadcast(&PeerCtrl::CheckInterest);
                let peers = self.strike_web_seeds(peers, size, env);
                self.strike(peers, env);
            }
            DiskEvent::UncheckedVerified(_) => self.on_unchecked_verified(env),
            DiskEvent::UncheckedFailed(p) => self.on_unchecked_failed(p, env),
            DiskEvent::Error(e) => {
                // the piece is not on disk: it is fetched again once the cause is fixed
                // (the torrent stops now; partial pieces go with its shared state)
                if e.piece_done {
                    shared.picker().piece_failed(e.piece);
                }
                self.fail_on_disk(&e.error, env);
            }
        }
    }
}

impl Torrent {
    /// A storage error stops the torrent: it goes to the session log (`DiskError`) and the
    /// torrent fails with it ([`storage_error`]).
    pub(super) fn fail_on_disk(&mut self, e: &StorageError, env: &mut Env<'_>) {
        let err = storage_error(e);
        self.log(
            env,
            EventLevel::Error,
            EventKind::DiskError,
            err.message.clone(),
        );
        self.input(Input::Failed(err), env);
    }
}

/// Whether a read failed because the file itself is gone (not there, or deleted or
/// replaced under an open handle), not because of what is in it.
fn file_gone(e: &StorageError) -> bool {
    use crate::storage::StorageErrorKind as K;
    matches!(e.kind(), K::NotFound | K::FileDeleted)
}

/// A storage error as the user sees it: a kind with a hint, and the message.
pub fn storage_error(e: &StorageError) -> TorrentError {
    use crate::storage::StorageErrorKind as K;
    let kind = match e.kind() {
        _ if e.is_folder_not_created() => TorrentErrorKind::FolderNotCreated,
        K::NoSpace => TorrentErrorKind::NoSpace,
        K::PermissionDenied => TorrentErrorKind::PermissionDenied,
        K::ReadOnly => TorrentErrorKind::ReadOnly,
        K::NotFound | K::FileDeleted | K::Truncated => TorrentErrorKind::FilesMissing,
        K::Refused | K::Io => TorrentErrorKind::Storage,
    };
    // the kind carries what to do, worded for each front end (the TUI's keys, the
    // command line's options): the message keeps only what happened, unless the kind is
    // the catch-all one, whose hint says less than the storage's own
    let text = e.to_string();
    let message = match kind {
        TorrentErrorKind::Storage => text,
        _ => text
            .strip_suffix(&format!(" ({})", e.hint()))
            .map_or_else(|| text.clone(), str::to_owned),
    };
    TorrentError { kind, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn io(kind: std::io::ErrorKind) -> StorageError {
        StorageError::Io {
            op: "reading",
            path: PathBuf::from("/d/f.bin"),
            source: std::io::Error::from(kind),
        }
    }

    #[test]
    fn a_missing_or_deleted_file_is_gone_a_short_or_unreadable_one_is_not() {
        assert!(file_gone(&io(std::io::ErrorKind::NotFound)));
        assert!(file_gone(&StorageError::FileDeleted {
            path: PathBuf::from("/d/f.bin")
        }));
        assert!(!file_gone(&StorageError::Truncated {
            path: PathBuf::from("/d/f.bin"),
            length: 10,
            needed: 20,
        }));
        assert!(!file_gone(&io(std::io::ErrorKind::PermissionDenied)));
        assert!(!file_gone(&io(std::io::ErrorKind::Other)));
    }

    #[test]
    fn a_gone_file_stops_the_torrent_as_files_missing_with_what_to_do() {
        let e = storage_error(&io(std::io::ErrorKind::NotFound));
        assert_eq!(e.kind, TorrentErrorKind::FilesMissing);
        assert!(e.kind.needs_recheck(), "resuming rechecks");
        assert!(e.message.contains("/d/f.bin"), "{}", e.message);
        assert!(
            !e.message.contains("put it back"),
            "hint said once: {}",
            e.message
        );
    }

    #[test]
    fn a_save_folder_that_cannot_be_created_asks_for_another_folder_not_the_files() {
        let e = storage_error(&StorageError::Io {
            op: crate::storage::CREATING_SAVE_FOLDER,
            path: PathBuf::from("/proc/xx"),
            source: std::io::Error::from_raw_os_error(libc::ENOENT),
        });
        assert_eq!(e.kind, TorrentErrorKind::FolderNotCreated);
        assert!(!e.kind.needs_recheck());
        assert!(e.kind.hint().contains("m (move)"), "{}", e.kind.hint());
        assert!(e.message.contains("/proc/xx"), "{}", e.message);
        assert!(!e.message.contains("put it back"), "{}", e.message);
        // what to do is the kind's, said once by each front end in its own words
        assert!(!e.message.contains("m (move)"), "{}", e.message);
        assert!(!e.message.ends_with(')'), "{}", e.message);
    }
}
