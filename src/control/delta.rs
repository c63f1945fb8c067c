//! Snapshots on the wire as differences: the daemon sends, per connection, only what
//! changed since the last snapshot it sent there ([`Encoder`]); the TUI's side rebuilds the
//! whole snapshot from its copy ([`Decoder`]), sharing the rows that did not change (as the
//! engine does), so the TUI sees what an in-process one would.
//!
//! What is left out when unchanged: a row whose revision is the same
//! ([`TorrentRow::rev`]); the list of ids while the torrents and their order are the same;
//! the session-wide figures, and apart from them the category and tag lists; the focused
//! torrent's peers, files, trackers, piece map and given peers. A session of 100 torrents
//! where one downloads sends that one row, the figures and the detail, a few hundred bytes.
//!
//! Frames are never dropped once encoded (the writer sends each whole or the connection
//! ends), so both copies move in step; a snapshot the daemon skipped (a slow TUI reads the
//! latest) costs nothing, since the next difference is taken from what was sent. A
//! difference the decoder cannot apply asks for a whole snapshot ([`DeltaError`]).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::api::{CategoryInfo, GlobalStats, Snapshot, TorrentDetail, TorrentId, TorrentRow};

/// One snapshot on the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotFrame {
    /// [`Snapshot::seq`].
    pub seq: u64,
    /// A whole snapshot: everything is in the frame, nothing comes from the last one (the
    /// first frame of a connection, and the one after a resync).
    pub whole: bool,
    /// The session-wide figures when they changed.
    pub global: Option<GlobalFrame>,
    /// Every torrent's id in the snapshot's order, when the torrents or their order
    /// changed; `None`: as in the last snapshot.
    pub ids: Option<Vec<TorrentId>>,
    /// The rows that changed or are new.
    pub rows: Vec<TorrentRow>,
    /// The focused torrent's detail.
    pub detail: DetailFrame,
}

/// The session-wide figures; the category and tag lists only when they changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GlobalFrame {
    /// The figures, with `categories` and `tags` empty when the fields below are `None`.
    pub stats: GlobalStats,
    /// The categories, when they changed.
    pub categories: Option<Arc<[CategoryInfo]>>,
    /// The tags, when they changed.
    pub tags: Option<Arc<[String]>>,
}

/// The focused torrent's detail on the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub enum DetailFrame {
    /// As in the last snapshot.
    #[default]
    Same,
    /// No torrent is focused (any more).
    None,
    /// The detail, with the parts named in `kept` left empty: they are those of the last
    /// snapshot's detail (of the same torrent).
    Changed {
        /// The detail.
        detail: Box<TorrentDetail>,
        /// [`KEEP_PEERS`], [`KEEP_FILES`], ... or-ed.
        kept: u8,
    },
}

/// [`DetailFrame::Changed`]: the peers are the last ones.
pub const KEEP_PEERS: u8 = 1;
/// The files are the last ones.
pub const KEEP_FILES: u8 = 2;
/// The trackers are the last ones.
pub const KEEP_TRACKERS: u8 = 4;
/// The piece map is the last one.
pub const KEEP_PIECES: u8 = 8;
/// The peer sources and the given peers are the last ones.
pub const KEEP_SOURCES: u8 = 16;

/// The daemon's side: the last snapshot sent on one connection.
#[derive(Debug, Default)]
pub struct Encoder {
    last: Option<Arc<Snapshot>>,
}

/// Whether two rows are the same (shared, or of the same torrent and revision).
fn same_row(a: &Arc<TorrentRow>, b: &Arc<TorrentRow>) -> bool {
    Arc::ptr_eq(a, b) || (a.id == b.id && a.rev == b.rev)
}

impl Encoder {
    /// An encoder whose first frame is a whole snapshot.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Forget what was sent: the next frame is a whole snapshot (the client asked, or a
    /// frame could not be sent).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The frame that takes the client from the last snapshot sent to `snap`, which
    /// becomes the last one sent.
    pub fn frame(&mut self, snap: &Arc<Snapshot>) -> SnapshotFrame {
        let last = self.last.replace(snap.clone());
        let Some(last) = last else {
            return whole(snap);
        };
        SnapshotFrame {
            seq: snap.seq,
            whole: false,
            global: global_frame(Some(&last.global), &snap.global),
            ids: (!same_ids(&last.rows, &snap.rows))
                .then(|| snap.rows.iter().map(|r| r.id).collect()),
            rows: changed_rows(&last.rows, &snap.rows),
            detail: detail_frame(last.detail.as_ref(), snap.detail.as_ref()),
        }
    }
}

/// A whole snapshot as a frame.
fn whole(snap: &Snapshot) -> SnapshotFrame {
    SnapshotFrame {
        seq: snap.seq,
        whole: true,
        global: global_frame(None, &snap.global),
        ids: Some(snap.rows.iter().map(|r| r.id).collect()),
        rows: snap.rows.iter().map(|r| (**r).clone()).collect(),
        detail: detail_frame(None, snap.detail.as_ref()),
    }
}

fn global_frame(last: Option<&GlobalStats>, now: &GlobalStats) -> Option<GlobalFrame> {
    if last == Some(now) {
        return None;
    }
    let categories = match last {
        Some(l)
            if Arc::ptr_eq(&l.categories, &now.categories) || l.categories == now.categories =>
        {
            None
        }
        _ => Some(now.categories.clone()),
    };
    let tags = match last {
        Some(l) if Arc::ptr_eq(&l.tags, &now.tags) || l.tags == now.tags => None,
        _ => Some(now.tags.clone()),
    };
    Some(GlobalFrame {
        stats: GlobalStats {
            categories: Arc::from(Vec::new()),
            tags: Arc::from(Vec::new()),
            ..now.clone()
        },
        categories,
        tags,
    })
}

fn same_ids(a: &[Arc<TorrentRow>], b: &[Arc<TorrentRow>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.id == y.id)
}

fn changed_rows(last: &Arc<[Arc<TorrentRow>]>, now: &Arc<[Arc<TorrentRow>]>) -> Vec<TorrentRow> {
    if Arc::ptr_eq(last, now) {
        return Vec::new();
    }
    if same_ids(last, now) {
        return last
            .iter()
            .zip(now.iter())
            .filter(|(a, b)| !same_row(a, b))
            .map(|(_, b)| (**b).clone())
            .collect();
    }
    let old: HashMap<TorrentId, &Arc<TorrentRow>> = last.iter().map(|r| (r.id, r)).collect();
    now.iter()
        .filter(|r| old.get(&r.id).is_none_or(|o| !same_row(o, r)))
        .map(|r| (**r).clone())
        .collect()
}

fn detail_frame(
    last: Option<&Arc<TorrentDetail>>,
    now: Option<&Arc<TorrentDetail>>,
) -> DetailFrame {
    let Some(now) = now else {
        return if last.is_some() {
            DetailFrame::None
        } else {
            DetailFrame::Same
        };
    };
    let Some(last) = last.filter(|l| l.id == now.id) else {
        return DetailFrame::Changed {
            detail: Box::new((**now).clone()),
            kept: 0,
        };
    };
    if Arc::ptr_eq(last, now) || last == now {
        return DetailFrame::Same;
    }
    let mut kept = 0;
    let mut detail = TorrentDetail {
        peers: Vec::new(),
        files: Vec::new(),
        trackers: Vec::new(),
        pieces: Arc::from(Vec::new()),
        peer_sources: Vec::new(),
        given_peers: Vec::new(),
        ..(**now).clone()
    };
    if last.peers == now.peers {
        kept |= KEEP_PEERS;
    } else {
        detail.peers = now.peers.clone();
    }
    if last.files == now.files {
        kept |= KEEP_FILES;
    } else {
        detail.files = now.files.clone();
    }
    if last.trackers == now.trackers {
        kept |= KEEP_TRACKERS;
    } else {
        detail.trackers = now.trackers.clone();
    }
    if Arc::ptr_eq(&last.pieces, &now.pieces) || last.pieces == now.pieces {
        kept |= KEEP_PIECES;
    } else {
        detail.pieces = now.pieces.clone();
    }
    if last.peer_sources == now.peer_sources && last.given_peers == now.given_peers {
        kept |= KEEP_SOURCES;
    } else {
        detail.peer_sources = now.peer_sources.clone();
        detail.given_peers = now.given_peers.clone();
    }
    DetailFrame::Changed {
        detail: Box::new(detail),
        kept,
    }
}

/// A frame that does not fit the decoder's copy (the client then asks for a whole one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a snapshot difference that does not fit: {0}")]
pub struct DeltaError(pub String);

/// The TUI's side: its copy of the daemon's snapshot.
#[derive(Debug)]
pub struct Decoder {
    current: Arc<Snapshot>,
    /// Set until a whole snapshot came (the first, or after a [`DeltaError`]).
    need_whole: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder with an empty snapshot, waiting for a whole one.
    pub fn new() -> Decoder {
        Decoder {
            current: Arc::new(Snapshot::default()),
            need_whole: true,
        }
    }

    /// The snapshot as of the last frame applied.
    pub fn current(&self) -> &Arc<Snapshot> {
        &self.current
    }

    /// Apply `frame` and return the new snapshot: unchanged rows, lists and detail parts
    /// are shared with the previous one.
    ///
    /// # Errors
    /// [`DeltaError`] when the frame names a row or detail part the copy does not have (or
    /// a difference comes while a whole snapshot is awaited): nothing changes, and the
    /// client should ask for a whole snapshot.
    pub fn apply(&mut self, frame: SnapshotFrame) -> Result<Arc<Snapshot>, DeltaError> {
        if self.need_whole && !frame.whole {
            return Err(DeltaError("waiting for a whole snapshot".into()));
        }
        let empty;
        let cur = if frame.whole {
            empty = Arc::new(Snapshot::default());
            &empty
        } else {
            &self.current
        };
        let global = match frame.global {
            None => cur.global.clone(),
            Some(g) => GlobalStats {
                categories: g
                    .categories
                    .unwrap_or_else(|| cur.global.categories.clone()),
                tags: g.tags.unwrap_or_else(|| cur.global.tags.clone()),
                ..g.stats
            },
        };
        let rows = rebuild_rows(&cur.rows, frame.ids, frame.rows)?;
        let detail = match frame.detail {
            DetailFrame::Same => cur.detail.clone(),
            DetailFrame::None => None,
            DetailFrame::Changed { detail, kept } => Some(Arc::new(rebuild_detail(
                cur.detail.as_deref(),
                *detail,
                kept,
            )?)),
        };
        self.current = Arc::new(Snapshot {
            seq: frame.seq,
            global,
            rows,
            detail,
        });
        self.need_whole = false;
        Ok(self.current.clone())
    }

    /// Wait for a whole snapshot again (after a [`DeltaError`], once a resync is asked).
    pub fn expect_whole(&mut self) {
        self.need_whole = true;
    }
}

fn rebuild_rows(
    cur: &Arc<[Arc<TorrentRow>]>,
    ids: Option<Vec<TorrentId>>,
    rows: Vec<TorrentRow>,
) -> Result<Arc<[Arc<TorrentRow>]>, DeltaError> {
    if ids.is_none() && rows.is_empty() {
        return Ok(cur.clone());
    }
    let mut fresh: HashMap<TorrentId, Arc<TorrentRow>> =
        rows.into_iter().map(|r| (r.id, Arc::new(r))).collect();
    let old: HashMap<TorrentId, &Arc<TorrentRow>> = cur.iter().map(|r| (r.id, r)).collect();
    let order: Vec<TorrentId> = match ids {
        Some(ids) => ids,
        None => cur.iter().map(|r| r.id).collect(),
    };
    let mut out = Vec::with_capacity(order.len());
    for id in order {
        match fresh
            .remove(&id)
            .or_else(|| old.get(&id).map(|r| (*r).clone()))
        {
            Some(r) => out.push(r),
            None => return Err(DeltaError(format!("no row for torrent {id}"))),
        }
    }
    if let Some(id) = fresh.keys().next() {
        return Err(DeltaError(format!(
            "a row for torrent {id}, not in the list"
        )));
    }
    Ok(out.into())
}

fn rebuild_detail(
    cur: Option<&TorrentDetail>,
    mut detail: TorrentDetail,
    kept: u8,
) -> Result<TorrentDetail, DeltaError> {
    if kept == 0 {
        return Ok(detail);
    }
    let Some(cur) = cur.filter(|c| c.id == detail.id) else {
        return Err(DeltaError(format!(
            "parts of the detail of torrent {} kept, but it is not the one shown",
            detail.id
        )));
    };
    if kept & KEEP_PEERS != 0 {
        detail.peers = cur.peers.clone();
    }
    if kept & KEEP_FILES != 0 {
        detail.files = cur.files.clone();
    }
    if kept & KEEP_TRACKERS != 0 {
        detail.trackers = cur.trackers.clone();
    }
    if kept & KEEP_PIECES != 0 {
        detail.pieces = cur.pieces.clone();
    }
    if kept & KEEP_SOURCES != 0 {
        detail.peer_sources = cur.peer_sources.clone();
        detail.given_peers = cur.given_peers.clone();
    }
    Ok(detail)
}

#[cfg(test)]
mod tests;
