//! Pieces taken without a hash check ("skip hash check" on add, for cross-seeding;
//! qBittorrent's `skip_checking`): the torrent starts with every piece had and seeds at
//! once; each such piece is hashed by the disk thread before the first upload of any of
//! its blocks ([`crate::storage::disk`]), or by a recheck. One that matches is verified;
//! one that does not is never sent: it leaves the pieces had (the torrent is incomplete and
//! downloads it again), is counted and said in the event log. The unchecked set is kept in
//! the record ([`crate::state::ManageRecord::unverified`]) across restarts.

use super::state::{Input, Lifecycle};
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel};
use crate::engine::link::message::PeerCtrl;
use crate::engine::link::shared::TorrentShared;
use crate::piece::{Bitfield, HaveBits};
use crate::storage::disk::TorrentDisk;

impl Torrent {
    /// An add with "skip hash check": every piece had and unchecked, the files' sizes and
    /// times taken now (so a restart trusts them), and no check needed to start: resuming
    /// looks only whether the files are there and long enough. No effect on a magnet link
    /// (nothing is known of its pieces yet).
    pub fn skip_check_on_add(&mut self) {
        if self.awaiting_metadata() {
            return;
        }
        let Some(meta) = self.info.resident().cloned() else {
            return;
        };
        let n = self.sum.piece_count();
        self.have = Bitfield::full(n);
        self.manage.unverified = self.have.as_bytes().to_vec();
        self.completed_at.get_or_insert_with(super::now_unix);
        self.file_stats = meta
            .files
            .iter()
            .map(|f| {
                if f.pad {
                    None
                } else {
                    crate::storage::file_stat(&self.save_dir.join(&f.path))
                }
            })
            .collect();
        self.life = Lifecycle::paused(false);
        self.persist_dirty = true;
    }

    /// Pieces taken without a check and not verified (nor found bad) yet.
    pub(super) fn unchecked_count(&self) -> u32 {
        match self.shared() {
            Some(s) if s.disk.unchecked.count() == 0 => 0,
            Some(s) => both(&s.disk.unchecked, &s.have).count(),
            None if self.manage.unverified.is_empty() => 0,
            None => Bitfield::from_payload(&self.manage.unverified, self.sum.piece_count())
                .map_or(0, |b| b.count()),
        }
    }

    /// The unchecked pieces as a record keeps them: bitfield bytes of the pieces both had
    /// and unchecked, or nothing when there are none.
    pub(super) fn unchecked_record(&self) -> Vec<u8> {
        match self.shared() {
            Some(s) => shared_unchecked(s),
            None => self.manage.unverified.clone(),
        }
    }

    /// Mark the unchecked pieces on storage just opened for the connections.
    pub(super) fn load_unchecked(&self, disk: &TorrentDisk) {
        if self.manage.unverified.is_empty() {
            return;
        }
        if let Ok(b) = Bitfield::from_payload(&self.manage.unverified, self.sum.piece_count()) {
            for p in b.ones() {
                disk.unchecked.set(p);
            }
        }
    }

    /// The connections' shared state `s` goes: keep what is still unchecked.
    pub(super) fn keep_unchecked(&mut self, s: &TorrentShared) {
        self.manage.unverified = shared_unchecked(s);
    }

    /// Every piece was hashed (a check ran, or the verified pieces were dropped): none is
    /// unchecked any more.
    pub(super) fn forget_unchecked(&mut self) {
        if !self.manage.unverified.is_empty() {
            self.manage.unverified = Vec::new();
            self.persist_dirty = true;
        }
    }

    /// A piece taken without a check matched when it was first read for upload; the last
    /// one is said in the event log (when none failed before it).
    pub(super) fn on_unchecked_verified(&mut self, env: &mut Env<'_>) {
        self.persist_dirty = true;
        // O(1): the marks left (a piece that did not match keeps its mark until it is
        // downloaded again, so then this says nothing)
        if self.shared().is_some_and(|s| s.disk.unchecked.count() == 0) {
            self.log(
                env,
                EventLevel::Info,
                EventKind::Checked,
                "every piece added without a check has now been verified".into(),
            );
        }
    }

    /// Piece `p`, taken without a check, did not match when it was first read for upload:
    /// none of it was sent. It leaves the pieces had, the torrent downloads it again.
    pub(super) fn on_unchecked_failed(&mut self, p: u32, env: &mut Env<'_>) {
        let Some(shared) = self.shared().cloned() else {
            return;
        };
        if !shared.have.clear(p) {
            return; // said already (two reads met it at once)
        }
        shared.picker().piece_lost(p);
        self.unchecked_failed += 1;
        self.persist_dirty = true;
        self.log(
            env,
            EventLevel::Warn,
            EventKind::HashFailed,
            format!(
                "piece {p} does not match its hash (added without a check): not sent to anyone; downloading it again"
            ),
        );
        self.peers.broadcast(&PeerCtrl::CheckInterest);
        self.input(Input::PiecesLost, env);
        if self.life.is_running() {
            // a seed dialled nobody who could give it the piece
            self.connect_more(env);
        }
    }
}

/// The unchecked pieces of shared state `s` as a record keeps them.
fn shared_unchecked(s: &TorrentShared) -> Vec<u8> {
    if s.disk.unchecked.count() == 0 {
        Vec::new()
    } else {
        bytes_or_none(&both(&s.disk.unchecked, &s.have))
    }
}

/// The pieces set in both `a` and `b` (same length).
fn both(a: &HaveBits, b: &HaveBits) -> Bitfield {
    let mut out = a.to_bitfield();
    let gone: Vec<u32> = out.ones().filter(|&p| !b.get(p)).collect();
    for p in gone {
        out.unset(p);
    }
    out
}

/// The pieces of record bytes `unverified` that are also in `have`, as record bytes
/// (nothing when none, or when the bytes are not a bitfield of `have`'s length).
pub(super) fn within(unverified: &[u8], have: &Bitfield) -> Vec<u8> {
    if unverified.is_empty() {
        return Vec::new();
    }
    match Bitfield::from_payload(unverified, have.len()) {
        Ok(mut b) => {
            let gone: Vec<u32> = b.ones().filter(|&p| !have.get(p)).collect();
            for p in gone {
                b.unset(p);
            }
            bytes_or_none(&b)
        }
        Err(_) => Vec::new(),
    }
}

/// `b`'s bytes, or nothing when no bit is set.
fn bytes_or_none(b: &Bitfield) -> Vec<u8> {
    if b.count() == 0 {
        Vec::new()
    } else {
        b.as_bytes().to_vec()
    }
}
