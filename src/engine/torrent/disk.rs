//! Opening a torrent's files for the disk threads.

use std::sync::Arc;

use crate::api::TorrentId;
use crate::engine::ctx::{SessionCtx, SessionEvent};
use crate::metainfo::Metainfo;
use crate::storage::disk::TorrentDisk;
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
        hashes: meta.piece_hashes.clone(),
        sink: Arc::new(move |event| {
            let _ = events.send(SessionEvent::Disk {
                torrent: id,
                disk_key: key,
                event,
            });
        }),
    }))
}
