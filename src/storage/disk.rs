//! Disk and hashing work on dedicated threads, off the async runtime.
//!
//! Blocks go to a worker chosen by piece index, so one worker owns all blocks of a piece and
//! keeps a running SHA-1 over the piece's in-order prefix: each block is written at once with
//! `pwrite` and hashed while it is hot in cache. A block that arrives ahead of the prefix is
//! written and remembered; when the prefix reaches it, it is read back (from the page cache)
//! and hashed. In the common case (one peer per piece, in-order delivery) a piece is verified
//! with no read-back and no piece buffer: memory is one hasher state per piece in flight.
//!
//! The v2 side (BEP 52) needs no order: each 16 KiB leaf of a block is hashed with SHA-256
//! as the block is written, whatever order blocks come in, and the piece's subtree is
//! hashed from the leaves once the last block is in; the data is never read again. A v2-only
//! torrent has no SHA-1 to keep; a hybrid's piece counts only when both sides match.
//!
//! Writes are bounded: a session-wide semaphore caps the bytes queued for disk
//! ([`DiskPool::write`] waits when it is exhausted), so a slow disk slows peers down instead
//! of growing memory.
//!
//! Failures are per piece: a write or read-back error breaks only the piece it hit, and a
//! piece whose files were deleted or replaced while open is never reported verified
//! ([`DiskEvent::Error`] with [`StorageErrorKind::FileDeleted`]). Upload reads
//! ([`DiskPool::read_for_upload`]) report the pieces they could not read and serve the rest.
//!
//! A piece taken as had without a hash check (an add with "skip hash check",
//! [`TorrentDisk::unchecked`]) is hashed whole by the upload read that first meets it,
//! before any of its blocks is read for the peer: a match clears its mark
//! ([`DiskEvent::UncheckedVerified`]); a mismatch serves none of its blocks, now or later
//! ([`UploadRead::corrupt`], [`DiskEvent::UncheckedFailed`]), until the piece is downloaded
//! again and verified.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use bytes::Bytes;
use sha1::{Digest, Sha1};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[cfg(doc)]
use super::StorageErrorKind;
use super::{Storage, StorageError};
use crate::lock::MutexExt;
use crate::piece::{BLOCK_SIZE, BlockRef, Geometry, HaveBits};

/// Most disk threads a pool starts, whatever it is asked for.
pub const MAX_DISK_THREADS: usize = 64;

/// What a worker reports back to the torrent.
///
/// Every attempt at a piece (all its blocks written once) ends with exactly one of
/// `PieceVerified`, `PieceFailed`, or `Error` with [`DiskError::piece_done`] set. A block
/// write failure is also reported as soon as it happens (`piece_done == false`).
#[derive(Debug)]
pub enum DiskEvent {
    /// Every block of the piece is on disk, its SHA-1 matches the metainfo, and the files it
    /// touches are still the files at their paths.
    PieceVerified(u32),
    /// Every block is on disk but the SHA-1 does not match: fetch the piece again.
    PieceFailed(u32),
    /// A storage failure on one piece: a block could not be written or read back, or the
    /// piece's files were deleted or replaced while open. See [`DiskError`].
    Error(DiskError),
    /// A piece taken without a hash check ([`TorrentDisk::unchecked`]) was hashed before
    /// its first upload and matches: it is verified now.
    UncheckedVerified(u32),
    /// A piece taken without a hash check was hashed before its first upload and does not
    /// match the metainfo: none of its blocks was sent, and none will be until it is
    /// downloaded again and verified (its mark stays until then).
    UncheckedFailed(u32),
}

/// A storage failure on one piece, as reported by a disk worker.
///
/// `Display`: `piece {piece}: {error}`.
#[derive(Debug, Clone)]
pub struct DiskError {
    /// The piece index.
    pub piece: u32,
    /// What failed, naming the file; [`StorageError::kind`] says what the user can do.
    pub error: StorageError,
    /// True when the piece's attempt is over (every block arrived) and this replaces its
    /// `PieceVerified`/`PieceFailed`: the piece is not on disk and must be fetched again
    /// (once the cause is fixed, if the kind says the user must act). False for the early
    /// report of a block write failure: the rest of the piece's blocks are dropped, and a
    /// report with `piece_done` follows once they are all in.
    pub piece_done: bool,
}

impl fmt::Display for DiskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "piece {}: {}", self.piece, self.error)
    }
}

impl std::error::Error for DiskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Where a torrent's disk results go (called on a disk thread; must not block).
pub type DiskSink = Arc<dyn Fn(DiskEvent) + Send + Sync>;

/// A torrent's payload as the disk workers see it.
pub struct TorrentDisk {
    /// Unique per torrent in the session (keys the workers' hasher states).
    pub key: u64,
    /// Files on disk.
    pub storage: Storage,
    /// The payload's pieces (`piece_count` = `hashes.len()`).
    pub geometry: Geometry,
    /// What each piece must hash to (v1 SHA-1, v2 Merkle, or both).
    pub hashes: crate::piece::PieceHashes,
    /// Pieces the torrent has without a hash check ("skip hash check"): an upload read
    /// hashes such a piece whole before it serves any block of it, and clears the mark
    /// when it matches; a piece downloaded and verified clears it too. Empty for most
    /// torrents (then it costs one atomic load per upload batch).
    pub unchecked: HaveBits,
    /// Where verification results go.
    pub sink: DiskSink,
}

impl fmt::Debug for TorrentDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TorrentDisk")
            .field("key", &self.key)
            .field("pieces", &self.geometry.piece_count())
            .finish_non_exhaustive()
    }
}

impl TorrentDisk {
    /// Size of piece `p` in bytes; 0 past the last piece.
    #[inline]
    pub fn piece_size(&self, p: u32) -> u32 {
        self.geometry.piece_size(p)
    }

    #[inline]
    fn piece_offset(&self, p: u32) -> u64 {
        self.geometry.piece_offset(p)
    }
}

/// The outcome of one batch of upload reads ([`DiskPool::read_for_upload`]).
///
/// `buf` holds the blocks that were read back to back; `ranges[i]` says where block
/// `blocks[i]` is in it, or `None` when it was not read: its piece is in `failed`, or it is
/// in `refused`.
#[derive(Debug, Default)]
pub struct UploadRead {
    /// The data (a reused buffer: it may be longer than the blocks need).
    pub buf: Vec<u8>,
    /// The blocks asked for, in request order.
    pub blocks: Vec<BlockRef>,
    /// Where each block's data is in `buf`, parallel to `blocks`.
    pub ranges: Vec<Option<std::ops::Range<usize>>>,
    /// The pieces that could not be read, in the order first met, each once with its first
    /// error (a file truncated under a seeding torrent gives
    /// [`StorageErrorKind::Truncated`]): the engine should stop claiming these pieces (and
    /// fail the torrent only if the kind says so).
    pub failed: Vec<(u32, StorageError)>,
    /// Blocks not read because they are not inside their piece (a piece index past the end,
    /// or `begin + length` past the piece's size): the request was wrong, the data is fine.
    pub refused: Vec<BlockRef>,
    /// Pieces taken without a hash check ([`TorrentDisk::unchecked`]) that did not match
    /// when hashed for this read: none of their blocks was read (they must never be sent).
    pub corrupt: Vec<u32>,
}

impl UploadRead {
    /// The blocks read, with their data, in request order.
    pub fn read(&self) -> impl Iterator<Item = (BlockRef, &[u8])> + '_ {
        self.blocks
            .iter()
            .zip(&self.ranges)
            .filter_map(|(b, r)| r.clone().map(|r| (*b, &self.buf[r])))
    }
}

/// Called on a disk thread with the outcome of [`DiskPool::read_for_upload`].
pub type UploadReply = Box<dyn FnOnce(UploadRead) + Send>;

enum Job {
    Write {
        torrent: Arc<TorrentDisk>,
        piece: u32,
        begin: u32,
        data: Bytes,
        _permit: OwnedSemaphorePermit,
    },
    Read {
        torrent: Arc<TorrentDisk>,
        blocks: Vec<BlockRef>,
        buf: Vec<u8>,
        reply: UploadReply,
    },
    Forget {
        key: u64,
    },
}

/// Where a shard's jobs run.
enum Shard {
    /// A disk thread.
    Thread(mpsc::Sender<Job>),
    /// No thread could be started: jobs run on the caller's thread (slow, but no panic).
    Inline(Mutex<Worker>),
}

/// The session's pool of disk/hash threads.
pub struct DiskPool {
    shards: Vec<Shard>,
    queue_limit: Arc<Semaphore>,
}

impl fmt::Debug for DiskPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DiskPool({} threads)", self.threads())
    }
}

impl DiskPool {
    /// Start `threads` workers (at least 1, at most [`MAX_DISK_THREADS`]); at most
    /// `max_queued_bytes` of received blocks wait for disk at any time. Never panics: if
    /// the OS refuses a thread, the pool keeps the threads it has, and with none at all it
    /// runs disk jobs on the calling thread (logged as an error).
    pub fn new(threads: usize, max_queued_bytes: usize) -> DiskPool {
        match DiskPool::try_new(threads, max_queued_bytes) {
            Ok(pool) => pool,
            Err(e) => {
                tracing::error!("{e}; disk work runs on the network threads");
                DiskPool::with_shards(
                    vec![Shard::Inline(Mutex::new(Worker::default()))],
                    max_queued_bytes,
                )
            }
        }
    }

    /// [`DiskPool::new`], but fail when not even one thread can be started. If only some of
    /// the `threads` start, the pool runs with those (logged as a warning).
    ///
    /// # Errors
    /// [`StorageError::NoDiskThread`] with the OS error of the first failed spawn.
    pub fn try_new(threads: usize, max_queued_bytes: usize) -> Result<DiskPool, StorageError> {
        let wanted = threads.clamp(1, MAX_DISK_THREADS);
        let mut shards = Vec::with_capacity(wanted);
        for i in 0..wanted {
            let (tx, rx) = mpsc::channel();
            match thread::Builder::new()
                .name(format!("ratorrent-disk-{i}"))
                .spawn(move || Worker::default().run(rx))
            {
                Ok(_) => shards.push(Shard::Thread(tx)),
                Err(e) if shards.is_empty() => return Err(StorageError::NoDiskThread(e)),
                Err(e) => {
                    tracing::warn!("started {i} of {wanted} disk threads: {e}");
                    break;
                }
            }
        }
        Ok(DiskPool::with_shards(shards, max_queued_bytes))
    }

    fn with_shards(shards: Vec<Shard>, max_queued_bytes: usize) -> DiskPool {
        let permits = (max_queued_bytes / BLOCK_SIZE as usize).clamp(16, Semaphore::MAX_PERMITS);
        DiskPool {
            shards,
            queue_limit: Arc::new(Semaphore::new(permits)),
        }
    }

    /// Disk threads running (0 when jobs run on the caller's thread).
    pub fn threads(&self) -> usize {
        self.shards
            .iter()
            .filter(|s| matches!(s, Shard::Thread(_)))
            .count()
    }

    fn submit(&self, piece: u32, job: Job) {
        // `shards` is never empty (`try_new` has at least one, `new` falls back to inline)
        match &self.shards[piece as usize % self.shards.len()] {
            Shard::Thread(tx) => {
                let _ = tx.send(job);
            }
            Shard::Inline(w) => w.locked().run_job(job),
        }
    }

    /// Queue a received block for writing and hashing; waits while the disk queue is full.
    /// The result arrives as a [`DiskEvent`] once the piece is complete.
    pub async fn write(&self, torrent: &Arc<TorrentDisk>, piece: u32, begin: u32, data: Bytes) {
        let Ok(permit) = self.queue_limit.clone().acquire_owned().await else {
            return;
        };
        self.submit(
            piece,
            Job::Write {
                torrent: torrent.clone(),
                piece,
                begin,
                data,
                _permit: permit,
            },
        );
    }

    /// Read `blocks` for uploading into `buf` (reused: pass back the buffer of an earlier
    /// read so no memory is allocated or faulted in per batch); `reply` runs on a disk
    /// thread with the data and the pieces that could not be read (a failed block fails
    /// only its piece). Blocks outside their piece are refused, not read. An empty batch is
    /// answered at once.
    pub fn read_for_upload(
        &self,
        torrent: &Arc<TorrentDisk>,
        blocks: Vec<BlockRef>,
        buf: Vec<u8>,
        reply: UploadReply,
    ) {
        let Some(first) = blocks.first() else {
            reply(UploadRead {
                buf,
                ..UploadRead::default()
            });
            return;
        };
        let piece = first.piece;
        self.submit(
            piece,
            Job::Read {
                torrent: torrent.clone(),
                blocks,
                buf,
                reply,
            },
        );
    }

    /// Drop every partial hasher state of torrent `key` (it was removed or re-checked).
    pub fn forget(&self, key: u64) {
        for s in &self.shards {
            match s {
                Shard::Thread(tx) => {
                    let _ = tx.send(Job::Forget { key });
                }
                Shard::Inline(w) => w.locked().run_job(Job::Forget { key }),
            }
        }
    }
}

#[derive(Default)]
struct PieceHash {
    /// The v1 side's running SHA-1 (unused for a v2-only torrent).
    hasher: Sha1,
    /// The v2 side's leaf hashes, one per 16 KiB of file data in the piece (empty for a v1
    /// torrent or a piece of padding only).
    leaves: Vec<crate::piece::merkle::Hash32>,
    /// A block did not fall on whole leaves: the leaves are hashed from disk at the end.
    leaves_from_disk: bool,
    /// Bytes hashed so far (the in-order prefix).
    next: u32,
    /// Bytes written so far.
    written: u32,
    /// Offsets of blocks written ahead of the prefix.
    ahead: BTreeSet<u32>,
    /// Set once a write or read-back failed: the rest of the piece's blocks are dropped and
    /// the piece is reported as this error when its last block is in.
    broken: Option<StorageError>,
}

#[derive(Default)]
struct Worker {
    pieces: HashMap<(u64, u32), PieceHash>,
    scratch: Vec<u8>,
}

impl Worker {
    fn run(mut self, rx: mpsc::Receiver<Job>) {
        while let Ok(job) = rx.recv() {
            self.run_job(job);
        }
    }

    fn run_job(&mut self, job: Job) {
        match job {
            Job::Write {
                torrent,
                piece,
                begin,
                data,
                _permit,
            } => self.write(&torrent, piece, begin, &data),
            Job::Read {
                torrent,
                blocks,
                buf,
                reply,
            } => reply(read_blocks(&torrent, blocks, buf, &mut self.scratch)),
            Job::Forget { key } => self.pieces.retain(|(k, _), _| *k != key),
        }
    }

    fn write(&mut self, t: &TorrentDisk, piece: u32, begin: u32, data: &[u8]) {
        let size = t.piece_size(piece);
        let Ok(len) = u32::try_from(data.len()) else {
            return;
        };
        if !t.geometry.in_piece(piece, begin, len) {
            return; // geometry was checked by the picker; never write outside the piece
        }
        let key = (t.key, piece);
        let offset = t.piece_offset(piece);
        let v1 = t.hashes.has_v1();
        let v2 = t.hashes.v2_piece(piece);
        let st = self.pieces.entry(key).or_default();
        st.written = st.written.saturating_add(len);
        if st.broken.is_none() {
            if let Err(e) = t.storage.write_at(offset + u64::from(begin), data) {
                (t.sink)(DiskEvent::Error(DiskError {
                    piece,
                    error: e.clone(),
                    piece_done: false,
                }));
                st.broken = Some(e);
            } else {
                if let Some(vp) = v2 {
                    hash_leaves(st, vp.data_len, begin, data);
                }
                if v1 {
                    sha1_in_order(st, t, &mut self.scratch, piece, begin, data);
                }
            }
        }
        if st.written < size {
            return;
        }
        let Some(mut st) = self.pieces.remove(&key) else {
            return;
        };
        let ev = match st.broken.take() {
            Some(error) => DiskEvent::Error(DiskError {
                piece,
                error,
                piece_done: true,
            }),
            None => match self.matches(t, piece, &mut st) {
                Err(error) => DiskEvent::Error(DiskError {
                    piece,
                    error,
                    piece_done: true,
                }),
                Ok(false) => DiskEvent::PieceFailed(piece),
                // the data hashed is what we wrote; make sure it is still in the files at
                // their paths (a deleted folder leaves handles writing into unlinked files)
                Ok(true) => match t.storage.verify_range_present(offset, size as usize) {
                    Ok(()) => {
                        // downloaded again after it failed its first check: its data is
                        // good now
                        t.unchecked.clear(piece);
                        DiskEvent::PieceVerified(piece)
                    }
                    Err(error) => DiskEvent::Error(DiskError {
                        piece,
                        error,
                        piece_done: true,
                    }),
                },
            },
        };
        (t.sink)(ev);
    }

    /// Whether a piece whose blocks are all written matches on every side of the torrent.
    ///
    /// # Errors
    /// Reading back leaves that could not be hashed as they came failed.
    fn matches(
        &mut self,
        t: &TorrentDisk,
        piece: u32,
        st: &mut PieceHash,
    ) -> Result<bool, StorageError> {
        let size = t.piece_size(piece);
        let v1 = match t.hashes.sha1(piece) {
            Some(h) => st.next == size && std::mem::take(&mut st.hasher).finalize().as_slice() == h,
            None => !t.hashes.has_v1(),
        };
        if !v1 {
            return Ok(false);
        }
        let Some(vp) = t.hashes.v2_piece(piece) else {
            // no v2 side for this piece: the v1 side must have decided
            return Ok(t.hashes.has_v1());
        };
        let Some(want) = vp.expected else {
            // the file's piece layer is not known (a hybrid added by a magnet link): the
            // v1 side vouches alone; a v2-only torrent cannot verify the piece
            return Ok(t.hashes.has_v1());
        };
        if st.leaves_from_disk {
            let mut h = crate::piece::merkle::LeafHasher::new();
            let mut at = 0u32;
            while at < vp.data_len {
                let n = (vp.data_len - at).min(BLOCK_SIZE) as usize;
                self.scratch.resize(n, 0);
                t.storage.read_at(
                    t.piece_offset(piece) + u64::from(at),
                    &mut self.scratch[..n],
                )?;
                h.update(&self.scratch[..n]);
                at += n as u32;
            }
            return Ok(h.finish(vp.width) == want);
        }
        Ok(crate::piece::merkle::reduce(&mut st.leaves, 0, vp.width) == want)
    }
}

/// Hash the 16 KiB leaves of the v2 file data (`data_len` bytes from the piece's start) in
/// a block written at `begin`; a block that does not fall on whole leaves leaves them to be
/// hashed from disk at the end.
fn hash_leaves(st: &mut PieceHash, data_len: u32, begin: u32, data: &[u8]) {
    if st.leaves.is_empty() {
        let n = data_len.div_ceil(BLOCK_SIZE) as usize;
        st.leaves = vec![[0u8; 32]; n];
    }
    if begin >= data_len {
        return; // padding after the file: not part of its tree
    }
    let end = (begin as usize + data.len()).min(data_len as usize);
    if !begin.is_multiple_of(BLOCK_SIZE)
        || (!end.is_multiple_of(BLOCK_SIZE as usize) && end != data_len as usize)
    {
        st.leaves_from_disk = true;
        return;
    }
    let mut at = begin as usize;
    while at < end {
        let n = (end - at).min(BLOCK_SIZE as usize);
        let from = at - begin as usize;
        st.leaves[at / BLOCK_SIZE as usize] = crate::piece::merkle::leaf(&data[from..from + n]);
        at += n;
    }
}

/// Feed a written block to the piece's running SHA-1 when it continues the in-order prefix
/// (then the blocks written ahead that now follow, read back); remember it otherwise.
fn sha1_in_order(
    st: &mut PieceHash,
    t: &TorrentDisk,
    scratch: &mut Vec<u8>,
    piece: u32,
    begin: u32,
    data: &[u8],
) {
    let size = t.piece_size(piece);
    let offset = t.piece_offset(piece);
    if begin == st.next {
        st.hasher.update(data);
        st.next += data.len() as u32;
        // blocks that were waiting for the prefix: read back and hash
        while st.ahead.first() == Some(&st.next) {
            st.ahead.pop_first();
            let len = (size - st.next).min(BLOCK_SIZE) as usize;
            scratch.resize(len, 0);
            match t
                .storage
                .read_at(offset + u64::from(st.next), &mut scratch[..len])
            {
                Ok(()) => {
                    st.hasher.update(&scratch[..len]);
                    st.next += len as u32;
                }
                Err(e) => {
                    st.broken = Some(e);
                    break;
                }
            }
        }
    } else if begin > st.next {
        st.ahead.insert(begin);
    }
}

/// Most bytes read at a time to hash a piece taken without a check.
const CHECK_CHUNK: usize = 256 * 1024;

/// What hashing a piece taken without a check found.
enum Unchecked {
    /// It matches (its mark is cleared).
    Good,
    /// It does not match the metainfo.
    Corrupt,
    /// It could not be read whole.
    Unreadable(StorageError),
}

/// Hash piece `p` of `t` from disk in chunks of at most [`CHECK_CHUNK`] bytes (`scratch`
/// reused) and compare it with the metainfo; a match clears its unchecked mark.
fn check_unchecked(t: &TorrentDisk, p: u32, scratch: &mut Vec<u8>) -> Unchecked {
    let size = t.piece_size(p) as usize;
    let offset = t.piece_offset(p);
    let mut hasher = crate::piece::PieceVerifier::new(&t.hashes, p);
    let mut at = 0usize;
    while at < size {
        let n = (size - at).min(CHECK_CHUNK);
        if scratch.len() < n {
            scratch.resize(n, 0);
        }
        if let Err(e) = t.storage.read_at(offset + at as u64, &mut scratch[..n]) {
            return Unchecked::Unreadable(e);
        }
        hasher.update(&scratch[..n]);
        at += n;
    }
    if hasher.matches(&t.hashes, p) {
        t.unchecked.clear(p);
        Unchecked::Good
    } else {
        Unchecked::Corrupt
    }
}

/// Read `blocks` back to back into `buf` (grown, never shrunk, so a reused buffer needs no
/// zeroing or page faults). A block whose read fails fails its piece: the piece's other
/// blocks in the batch are not read (or are dropped, if read before). Blocks outside their
/// piece are refused and take no room. A piece taken without a hash check is hashed first
/// (`scratch` is the buffer for that): a mismatch makes it `corrupt`, none of its blocks
/// read; the outcome goes to the torrent's sink.
fn read_blocks(
    t: &TorrentDisk,
    blocks: Vec<BlockRef>,
    mut buf: Vec<u8>,
    scratch: &mut Vec<u8>,
) -> UploadRead {
    let any_unchecked = t.unchecked.count() > 0;
    let mut corrupt: Vec<u32> = Vec::new();
    let in_piece = |b: &BlockRef| t.geometry.in_piece(b.piece, b.begin, b.length);
    let total: usize = blocks
        .iter()
        .filter(|b| in_piece(b))
        .map(|b| b.length as usize)
        .sum();
    if buf.len() < total {
        buf.resize(total, 0);
    }
    let mut failed: Vec<(u32, StorageError)> = Vec::new();
    let mut refused = Vec::new();
    let mut ranges = Vec::with_capacity(blocks.len());
    let mut at = 0;
    for b in &blocks {
        if !in_piece(b) {
            refused.push(*b);
            ranges.push(None);
            continue;
        }
        let range = at..at + b.length as usize;
        at = range.end;
        if failed.iter().any(|(p, _)| *p == b.piece) || corrupt.contains(&b.piece) {
            ranges.push(None);
            continue;
        }
        if any_unchecked && t.unchecked.get(b.piece) {
            // never send a byte of a piece nobody checked: hash it whole first
            match check_unchecked(t, b.piece, scratch) {
                Unchecked::Good => (t.sink)(DiskEvent::UncheckedVerified(b.piece)),
                Unchecked::Corrupt => {
                    (t.sink)(DiskEvent::UncheckedFailed(b.piece));
                    corrupt.push(b.piece);
                    ranges.push(None);
                    continue;
                }
                Unchecked::Unreadable(e) => {
                    failed.push((b.piece, e));
                    ranges.push(None);
                    continue;
                }
            }
        }
        let offset = t.piece_offset(b.piece) + u64::from(b.begin);
        match t.storage.read_at(offset, &mut buf[range.clone()]) {
            Ok(()) => ranges.push(Some(range)),
            Err(e) => {
                failed.push((b.piece, e));
                ranges.push(None);
            }
        }
    }
    // blocks of a failed piece read before its failure are dropped too
    for (b, r) in blocks.iter().zip(ranges.iter_mut()) {
        if failed.iter().any(|(p, _)| *p == b.piece) {
            *r = None;
        }
    }
    UploadRead {
        buf,
        blocks,
        ranges,
        failed,
        refused,
        corrupt,
    }
}

#[cfg(test)]
mod tests;
