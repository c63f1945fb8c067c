//! Keeping the session across restarts (see [`crate::state`]).
//!
//! At start the torrents of the last run are listed at once ([`Session::restore`]); their
//! resume data is compared with their files in the background by size and modification
//! time (no data is read), and those whose files changed are rechecked. While the session
//! runs, the records that changed are written on a checkpoint cadence: a state change
//! within [`CHECKPOINT_SOON`], counters within [`CHECKPOINT_INTERVAL`], and everything at
//! shutdown. A torrent's files are synced before its verified pieces are recorded, so no
//! piece is recorded before its bytes are on disk.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Session;
use crate::api::{EventKind, EventLevel, TorrentId};
use crate::engine::ctx::{SessionCtx, SessionEvent};
use crate::engine::torrent::state::Input;
use crate::engine::torrent::{TimerKey, Torrent};
use crate::metainfo::InfoHash;
use crate::state::{FileStat, Loaded, SessionLimits, StateStore, Stored, TorrentRecord, Update};
use crate::storage::disk::TorrentDisk;

/// Counters and progress reach the state store at least this often.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);
/// A state change (added, paused, completed, removed) reaches it within this.
pub const CHECKPOINT_SOON: Duration = Duration::from_secs(1);

/// The session's side of the state store: the store itself (none for headless sessions),
/// what is still to be written besides the torrents' own records, and what is in flight.
#[derive(Debug, Default)]
pub(super) struct Persist {
    store: Option<Arc<StateStore>>,
    /// Removed torrents whose records are still to be deleted from the store.
    deleted: Vec<InfoHash>,
    /// A checkpoint is being written.
    checkpointing: bool,
    /// The session rate limits were set live and are not yet in the store.
    limits_dirty: bool,
    /// Restored torrents whose resume data is still being compared with their files.
    validating: usize,
}

impl Persist {
    /// Persistence into `store`; `None`: nothing is kept across runs.
    pub fn new(store: Option<Arc<StateStore>>) -> Persist {
        Persist {
            store,
            ..Persist::default()
        }
    }

    /// The state store, if the session keeps one.
    pub fn store(&self) -> Option<&Arc<StateStore>> {
        self.store.as_ref()
    }

    /// Whether the session keeps its state across runs.
    pub fn is_on(&self) -> bool {
        self.store.is_some()
    }

    /// Torrent `info_hash` is listed (added or restored): a delete of its record still
    /// pending (it was removed a moment ago) must not reach the store after this.
    pub fn listed(&mut self, info_hash: &InfoHash) {
        self.deleted.retain(|h| h != info_hash);
    }

    /// Torrent `info_hash` was removed: its record and .torrent copy go at the next
    /// checkpoint. Returns whether a checkpoint is wanted soon.
    pub fn removed(&mut self, info_hash: InfoHash) -> bool {
        if self.is_on() {
            self.deleted.push(info_hash);
        }
        self.is_on()
    }

    /// The session rate limits were set live: they are kept at the next checkpoint.
    /// Returns whether a checkpoint is wanted soon.
    pub fn limits_set(&mut self) -> bool {
        if self.is_on() {
            self.limits_dirty = true;
        }
        self.is_on()
    }

    /// Whether a checkpoint is being written (the next one waits for it).
    pub fn busy(&self) -> bool {
        self.checkpointing
    }

    /// Start a checkpoint of `records` (the torrents whose records changed), the pending
    /// deletes, and `limits` when they were set live since the last one. `None` when there
    /// is no store or nothing to write; else the checkpoint is in flight until
    /// [`Persist::written`].
    pub fn batch(&mut self, records: Vec<RecordJob>, limits: SessionLimits) -> Option<Batch> {
        let store = self.store.clone()?;
        let deleted = std::mem::take(&mut self.deleted);
        let limits = std::mem::take(&mut self.limits_dirty).then_some(limits);
        if records.is_empty() && deleted.is_empty() && limits.is_none() {
            return None;
        }
        self.checkpointing = true;
        Some(Batch {
            store,
            records,
            deleted,
            limits,
        })
    }

    /// A checkpoint ended; `limits`: it carried the session limits; `ok`: it was written
    /// (else the limits are written again next time; the caller marks the records).
    pub fn written(&mut self, limits: bool, ok: bool) {
        self.checkpointing = false;
        if limits && !ok {
            self.limits_dirty = true;
        }
    }

    /// `n` restored torrents are being compared with their files.
    pub fn validating(&mut self, n: usize) {
        self.validating = n;
    }

    /// One restored torrent was compared; returns `true` for the last one.
    pub fn validated(&mut self) -> bool {
        if self.validating == 0 {
            return false;
        }
        self.validating -= 1;
        self.validating == 0
    }
}

/// One torrent's part of a checkpoint: its record, and its storage when its files are to
/// be synced and their sizes and times taken.
pub(super) struct RecordJob {
    /// The torrent.
    pub id: TorrentId,
    /// Its info hash (the record's key).
    pub info_hash: InfoHash,
    /// What is kept of it.
    pub record: TorrentRecord,
    /// Its open storage, if any.
    pub disk: Option<Arc<TorrentDisk>>,
}

/// A checkpoint to write on a blocking thread.
pub(super) struct Batch {
    store: Arc<StateStore>,
    records: Vec<RecordJob>,
    deleted: Vec<InfoHash>,
    limits: Option<SessionLimits>,
}

impl Batch {
    /// Sync each torrent's files and take their times, then write every record, delete,
    /// and the limits in one transaction. Returns the event that tells the session.
    pub fn write(self) -> SessionEvent {
        let mut updates = Vec::new();
        let mut stats = Vec::new();
        let mut ids = Vec::new();
        for RecordJob {
            id,
            info_hash,
            mut record,
            disk,
        } in self.records
        {
            if let Some(d) = disk {
                if let Err(e) = d.storage.sync_all() {
                    tracing::warn!("syncing {} before a checkpoint: {e}", record.name);
                }
                record.file_stats = d.storage.file_stats();
                stats.push((id, record.file_stats.clone()));
            }
            ids.push(id);
            updates.push(Update::Put(info_hash, Box::new(record)));
        }
        updates.extend(self.deleted.into_iter().map(Update::Delete));
        let limits = self.limits.is_some();
        updates.extend(self.limits.map(Update::SessionLimits));
        let result = self.store.write(updates).map_err(|e| e.to_string());
        SessionEvent::Checkpointed {
            result,
            stats,
            ids,
            limits,
        }
    }
}

/// Whether resume data recorded with the file times `recorded` still holds for the files
/// found now (`found`, same order; `None`: missing, or a padding file). A torrent that had
/// no verified piece and none of whose files exist yet holds too.
///
/// # Errors
/// [`Mismatch`]: which file differs, or that no file times were recorded.
pub(super) fn resume_holds(
    recorded: &[FileStat],
    found: &[FileStat],
    had_pieces: bool,
) -> Result<(), Mismatch> {
    if recorded.len() == found.len() {
        match recorded.iter().zip(found).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(i) => Err(Mismatch::Differs(i)),
        }
    } else if !had_pieces && found.iter().all(Option::is_none) {
        Ok(())
    } else {
        Err(Mismatch::NotRecorded)
    }
}

/// Why resume data does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mismatch {
    /// File `n` (index in payload order) has another size or modification time.
    Differs(usize),
    /// The record has no file times to compare with.
    NotRecorded,
}

/// One restored torrent whose resume data is to be checked against its files.
struct ValidateJob {
    id: TorrentId,
    info_hash: InfoHash,
    save_dir: PathBuf,
    stats: Vec<FileStat>,
    had_pieces: bool,
    paused: bool,
    /// What its files must hold, when it starts now (not paused, not failed): the
    /// verified pieces are looked for before it announces them.
    verified: Option<VerifiedData>,
}

/// What a restored torrent's record says its files hold: the place of each file, the
/// geometry, the verified pieces and which files are skipped (payload order).
struct VerifiedData {
    spans: Vec<crate::piece::FileSpan>,
    geometry: crate::piece::Geometry,
    have: crate::piece::Bitfield,
    skipped: Vec<bool>,
}

impl VerifiedData {
    /// What record `r` says its files hold; `None` when nothing is verified or its
    /// geometry or layout is damaged.
    fn of(r: &TorrentRecord) -> Option<VerifiedData> {
        let geometry = r.geometry()?;
        let have = crate::piece::Bitfield::from_payload(&r.have, r.piece_count).ok()?;
        if have.count() == 0 {
            return None;
        }
        Some(VerifiedData {
            spans: r.layout()?.spans().to_vec(),
            geometry,
            have,
            skipped: r.file_prio.iter().map(|&l| l == 0).collect(),
        })
    }
}

/// Compare each restored torrent's files with its resume data (sizes and modification
/// times; no data is read) and tell the session which can be trusted.
fn validate_resume(store: &StateStore, jobs: Vec<ValidateJob>, ctx: &SessionCtx) {
    for j in jobs {
        let (trusted, why) = match store.load_files(&j.info_hash) {
            Err(e) => (false, e),
            Ok(files) => {
                let found: Vec<FileStat> = files
                    .iter()
                    .map(|f| {
                        if f.pad {
                            None
                        } else {
                            crate::storage::file_stat(&j.save_dir.join(&f.path))
                        }
                    })
                    .collect();
                // a file that holds verified pieces and is gone or short: the torrent
                // fails "files missing" before it announces them (stat only)
                let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
                let missing = j.verified.as_ref().and_then(|v| {
                    crate::storage::check_verified_files(
                        &j.save_dir,
                        &paths,
                        &v.spans,
                        &v.geometry,
                        &v.have,
                        &|i| v.skipped.get(i).copied().unwrap_or(false),
                    )
                    .err()
                });
                if let Some(e) = missing {
                    ctx.send(SessionEvent::Validated {
                        torrent: j.id,
                        trusted: false,
                        paused: j.paused,
                        why: e.to_string(),
                        missing: Some(crate::engine::torrent::disk::storage_error(&e)),
                    });
                    continue;
                }
                match resume_holds(&j.stats, &found, j.had_pieces) {
                    Ok(()) => (true, String::new()),
                    Err(Mismatch::Differs(i)) => {
                        (false, format!("{} differs", files[i].path.display()))
                    }
                    Err(Mismatch::NotRecorded) => (false, "no file times recorded".into()),
                }
            }
        };
        ctx.send(SessionEvent::Validated {
            torrent: j.id,
            trusted,
            paused: j.paused,
            why,
            missing: None,
        });
    }
}

/// Hand heap memory that was freed back to the system: glibc keeps it in its arenas
/// otherwise, so a burst of short-lived allocations (reading and parsing the .torrent of
/// 10,000 restored torrents) would stay in the RSS for the life of the process.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages of glibc's own
    // arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Session {
    /// List the torrents of the last run at once; check their resume data against their
    /// files in the background (stat only), then start them.
    pub(super) fn restore(&mut self, loaded: Loaded) {
        let (down, up) = SessionLimits::effective(
            loaded.session_limits,
            self.ctx.config.download_rate_limit,
            self.ctx.config.upload_rate_limit,
        );
        self.alt.set_normal((down, up));
        self.alt.set_on(loaded.alt_speed);
        let (down, up) = self.alt.in_effect();
        self.ctx.limits.download.set_rate(down);
        self.ctx.limits.upload.set_rate(up);
        self.publish_now = true;
        for w in loaded.warnings {
            self.log
                .push(None, EventLevel::Error, EventKind::DiskError, w);
        }
        let slots = self.ctx.config.upload_slots as usize;
        let mut jobs = Vec::new();
        let mut magnets = Vec::new();
        for stored in loaded.torrents {
            match stored {
                Stored::Record(ih, r) => {
                    if self.library.find(&ih).is_some() {
                        continue;
                    }
                    let id = self.library.new_id();
                    let t = Torrent::restore(id, ih, &r, slots);
                    if t.awaiting_metadata() {
                        // no files yet: nothing to compare; it fetches its metadata again
                        self.insert(id, ih, t);
                        if r.error.is_none() {
                            magnets.push(id);
                        }
                        continue;
                    }
                    jobs.push(ValidateJob {
                        id,
                        info_hash: ih,
                        save_dir: r.save_dir.clone(),
                        stats: r.file_stats.clone(),
                        had_pieces: r.have.iter().any(|b| *b != 0),
                        paused: r.paused,
                        verified: (!r.paused && r.error.is_none())
                            .then(|| VerifiedData::of(&r))
                            .flatten(),
                    });
                    self.insert(id, ih, t);
                }
                Stored::NeedsRecheck { info_hash, why } => {
                    let Some(store) = self.persist.store() else {
                        continue;
                    };
                    match store.load_metainfo(&info_hash) {
                        Ok(meta) => {
                            let id = self.library.new_id();
                            let name = meta.saved_name().to_owned();
                            let t = Torrent::new(
                                id,
                                Arc::new(meta),
                                self.settings.download_dir.clone(),
                                self.ctx.config.seed_after_download,
                                slots,
                                false,
                            );
                            self.insert(id, info_hash, t);
                            self.log.push(
                                Some(id),
                                EventLevel::Warn,
                                EventKind::Checked,
                                format!("{name}: {why}; its data is rechecked"),
                            );
                            self.with(id, |t, env| t.input(Input::Resume, env));
                        }
                        Err(e) => self.log.push(
                            None,
                            EventLevel::Error,
                            EventKind::DiskError,
                            format!("a torrent of the last session cannot come back: {e}"),
                        ),
                    }
                }
            }
        }
        // a paused one stays paused (the record says so: Restoring remembers it)
        for id in magnets {
            self.with(id, |t, env| t.resume_checked(true, "", env));
        }
        if let (Some(store), false) = (self.persist.store(), jobs.is_empty()) {
            let store = store.clone();
            self.persist.validating(jobs.len());
            let ctx = self.ctx.clone();
            tokio::task::spawn_blocking(move || validate_resume(&store, jobs, &ctx));
        }
        self.publish_now = true;
    }

    /// Write the records that changed (after syncing the files of torrents whose verified
    /// pieces are recorded, so no piece is recorded before its bytes are on disk); the
    /// returned task ends when the write is done.
    pub(super) fn checkpoint(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        if !self.persist.is_on() {
            return None;
        }
        if self.persist.busy() {
            self.timers
                .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
            return None;
        }
        let mut records = Vec::new();
        for (id, t) in self.torrents.iter_mut() {
            if t.take_persist_dirty() {
                records.push(RecordJob {
                    id: *id,
                    info_hash: t.info_hash(),
                    record: t.record(),
                    disk: t.storage_for_checkpoint(),
                });
            }
        }
        let (download, upload) = self.alt.normal();
        let (config_download, config_upload) = self.alt.config_normal();
        let limits = SessionLimits {
            download,
            upload,
            alt_speed: self.alt.is_on(),
            config_download,
            config_upload,
        };
        let batch = self.persist.batch(records, limits)?;
        let ctx = self.ctx.clone();
        Some(tokio::task::spawn_blocking(move || ctx.send(batch.write())))
    }

    /// A checkpoint is wanted within [`CHECKPOINT_SOON`] (a state change).
    pub(super) fn checkpoint_soon(&mut self) {
        self.timers
            .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
    }

    /// A checkpoint was written (or failed: its records are written again in a minute).
    pub(super) fn on_checkpointed(
        &mut self,
        result: Result<(), String>,
        stats: Vec<(TorrentId, Vec<FileStat>)>,
        ids: Vec<TorrentId>,
        limits: bool,
    ) {
        self.persist.written(limits, result.is_ok());
        for (id, st) in stats {
            if let Some(t) = self.torrents.get_mut(&id) {
                t.set_file_stats(st);
            }
        }
        if let Err(e) = result {
            for id in ids {
                if let Some(t) = self.torrents.get_mut(&id) {
                    t.mark_persist_dirty();
                }
            }
            self.log.push(
                None,
                EventLevel::Error,
                EventKind::DiskError,
                format!("saving the session state failed: {e}; retrying in a minute"),
            );
            self.timers
                .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_INTERVAL);
        }
    }

    /// A restored torrent's resume data was compared with its files: it starts (or stays
    /// paused), rechecked first when `trusted` is false; it fails with `missing` (keeping
    /// its verified pieces) when a file that holds them is gone or short.
    pub(super) fn on_validated(
        &mut self,
        torrent: TorrentId,
        trusted: bool,
        why: &str,
        missing: Option<crate::api::TorrentError>,
    ) {
        self.with(torrent, |t, env| match missing {
            Some(e) => t.restored_files_missing(e, env),
            None => t.resume_checked(trusted, why, env),
        });
        if self.persist.validated() {
            // every .torrent of the list was read and let go again
            release_free_heap();
        }
    }
}

#[cfg(test)]
mod tests;
