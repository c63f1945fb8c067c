//! Disk and hashing work on dedicated threads, off the async runtime.
//!
//! Blocks go to a worker chosen by piece index, so one worker owns all blocks of a piece and
//! keeps a running SHA-1 over the piece's in-order prefix: each block is written at once with
//! `pwrite` and hashed while it is hot in cache. A block that arrives ahead of the prefix is
//! written and remembered; when the prefix reaches it, it is read back (from the page cache)
//! and hashed. In the common case (one peer per piece, in-order delivery) a piece is verified
//! with no read-back and no piece buffer: memory is one hasher state per piece in flight.
//!
//! Writes are bounded: a session-wide semaphore caps the bytes queued for disk
//! ([`DiskPool::write`] waits when it is exhausted), so a slow disk slows peers down instead
//! of growing memory.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use bytes::Bytes;
use sha1::{Digest, Sha1};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Storage, StorageError};
use crate::piece::{BLOCK_SIZE, BlockRef};

/// What a worker reports back to the torrent.
#[derive(Debug)]
pub enum DiskEvent {
    /// Every block of the piece is on disk and its SHA-1 matches the metainfo.
    PieceVerified(u32),
    /// Every block is on disk but the SHA-1 does not match: fetch the piece again.
    PieceFailed(u32),
    /// Writing (or reading back) failed: the torrent cannot continue (disk full, permissions).
    Error(StorageError),
}

/// Where a torrent's disk results go (called on the disk thread; must not block).
pub type DiskSink = Arc<dyn Fn(DiskEvent) + Send + Sync>;

/// A torrent's payload as the disk workers see it.
pub struct TorrentDisk {
    /// Unique per torrent in the session (keys the workers' hasher states).
    pub key: u64,
    /// Files on disk.
    pub storage: Storage,
    /// Bytes per piece (BEP 3 `piece length`).
    pub piece_length: u32,
    /// Bytes in the last piece.
    pub last_piece_length: u32,
    /// Expected SHA-1 per piece.
    pub hashes: Vec<[u8; 20]>,
    /// Where verification results go.
    pub sink: DiskSink,
}

impl std::fmt::Debug for TorrentDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorrentDisk")
            .field("key", &self.key)
            .field("pieces", &self.hashes.len())
            .finish_non_exhaustive()
    }
}

impl TorrentDisk {
    /// Size of piece `p` in bytes.
    pub fn piece_size(&self, p: u32) -> u32 {
        if p as usize + 1 == self.hashes.len() {
            self.last_piece_length
        } else {
            self.piece_length
        }
    }

    fn piece_offset(&self, p: u32) -> u64 {
        u64::from(p) * u64::from(self.piece_length)
    }
}

/// Blocks read for an upload: `buf` holds `blocks` back to back in order (a block of a
/// piece listed in `failed` holds no valid data and must not be sent).
#[derive(Debug)]
pub struct UploadRead {
    /// The data, `sum(blocks.length)` bytes.
    pub buf: Vec<u8>,
    /// The blocks asked for, in order.
    pub blocks: Vec<BlockRef>,
    /// Pieces that could not be read, with the error (each piece listed once).
    pub failed: Vec<(u32, StorageError)>,
}

/// Called on the disk thread with the result of [`DiskPool::read_for_upload`].
pub type ReadReply = Box<dyn FnOnce(UploadRead) + Send>;

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
        reply: ReadReply,
    },
    Forget {
        key: u64,
    },
}

/// The session's pool of disk/hash threads.
pub struct DiskPool {
    shards: Vec<mpsc::Sender<Job>>,
    queue_limit: Arc<Semaphore>,
}

impl std::fmt::Debug for DiskPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DiskPool({} threads)", self.shards.len())
    }
}

impl DiskPool {
    /// Start `threads` workers (at least 1); at most `max_queued_bytes` of received blocks
    /// wait for disk at any time.
    pub fn new(threads: usize, max_queued_bytes: usize) -> DiskPool {
        let mut shards = Vec::new();
        for i in 0..threads.max(1) {
            let (tx, rx) = mpsc::channel();
            thread::Builder::new()
                .name(format!("ratorrent-disk-{i}"))
                .spawn(move || Worker::default().run(rx))
                .expect("spawning a disk thread");
            shards.push(tx);
        }
        let permits = (max_queued_bytes / BLOCK_SIZE as usize).max(16);
        DiskPool {
            shards,
            queue_limit: Arc::new(Semaphore::new(permits)),
        }
    }

    fn shard(&self, piece: u32) -> &mpsc::Sender<Job> {
        &self.shards[piece as usize % self.shards.len()]
    }

    /// Queue a received block for writing and hashing; waits while the disk queue is full.
    /// The result arrives as a [`DiskEvent`] once the piece is complete.
    pub async fn write(&self, torrent: &Arc<TorrentDisk>, piece: u32, begin: u32, data: Bytes) {
        let Ok(permit) = self.queue_limit.clone().acquire_owned().await else {
            return;
        };
        let _ = self.shard(piece).send(Job::Write {
            torrent: torrent.clone(),
            piece,
            begin,
            data,
            _permit: permit,
        });
    }

    /// Read `blocks` for uploading into `buf` (reused: pass back the buffer of an earlier
    /// read so no memory is allocated or faulted in per batch); `reply` runs on the disk
    /// thread with the data. A block that cannot be read fails only its own piece.
    pub fn read_for_upload(
        &self,
        torrent: &Arc<TorrentDisk>,
        blocks: Vec<BlockRef>,
        buf: Vec<u8>,
        reply: ReadReply,
    ) {
        let Some(first) = blocks.first() else {
            reply(UploadRead {
                buf,
                blocks,
                failed: Vec::new(),
            });
            return;
        };
        let _ = self.shard(first.piece).send(Job::Read {
            torrent: torrent.clone(),
            blocks,
            buf,
            reply,
        });
    }

    /// Drop every partial hasher state of torrent `key` (it was removed or re-checked).
    pub fn forget(&self, key: u64) {
        for s in &self.shards {
            let _ = s.send(Job::Forget { key });
        }
    }
}

#[derive(Default)]
struct PieceHash {
    hasher: Sha1,
    /// Bytes hashed so far (the in-order prefix).
    next: u32,
    /// Bytes written so far.
    written: u32,
    /// Offsets of blocks written ahead of the prefix.
    ahead: BTreeSet<u32>,
    /// Set once a write failed: the piece is re-fetched, do not verify it.
    broken: bool,
}

#[derive(Default)]
struct Worker {
    pieces: HashMap<(u64, u32), PieceHash>,
    scratch: Vec<u8>,
}

impl Worker {
    fn run(mut self, rx: mpsc::Receiver<Job>) {
        while let Ok(job) = rx.recv() {
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
                } => reply(read_blocks(&torrent, blocks, buf)),
                Job::Forget { key } => self.pieces.retain(|(k, _), _| *k != key),
            }
        }
    }

    fn write(&mut self, t: &TorrentDisk, piece: u32, begin: u32, data: &[u8]) {
        let size = t.piece_size(piece);
        if begin
            .checked_add(data.len() as u32)
            .is_none_or(|end| end > size)
        {
            return; // geometry was checked by the picker; never write outside the piece
        }
        let key = (t.key, piece);
        let offset = t.piece_offset(piece);
        if let Err(e) = t.storage.write_at(offset + u64::from(begin), data) {
            self.pieces.remove(&key);
            (t.sink)(DiskEvent::Error(e));
            return;
        }
        let st = self.pieces.entry(key).or_default();
        st.written += data.len() as u32;
        if begin == st.next {
            st.hasher.update(data);
            st.next += data.len() as u32;
            // blocks that were waiting for the prefix: read back and hash
            while st.ahead.first() == Some(&st.next) {
                st.ahead.pop_first();
                let len = (size - st.next).min(BLOCK_SIZE) as usize;
                self.scratch.resize(len, 0);
                match t
                    .storage
                    .read_at(offset + u64::from(st.next), &mut self.scratch[..len])
                {
                    Ok(()) => {
                        st.hasher.update(&self.scratch[..len]);
                        st.next += len as u32;
                    }
                    Err(e) => {
                        st.broken = true;
                        (t.sink)(DiskEvent::Error(e));
                        break;
                    }
                }
            }
        } else if begin > st.next {
            st.ahead.insert(begin);
        }
        if st.written >= size {
            let Some(st) = self.pieces.remove(&key) else {
                return;
            };
            if st.broken {
                return;
            }
            let ok = st.next == size
                && t.hashes
                    .get(piece as usize)
                    .is_some_and(|h| st.hasher.finalize().as_slice() == h);
            let ev = if ok {
                DiskEvent::PieceVerified(piece)
            } else {
                DiskEvent::PieceFailed(piece)
            };
            (t.sink)(ev);
        }
    }
}

/// Read `blocks` back to back into `buf` (grown, never shrunk, so a reused buffer needs no
/// zeroing or page faults). A failed block fails only its piece; later blocks of that piece
/// are skipped.
fn read_blocks(t: &TorrentDisk, blocks: Vec<BlockRef>, mut buf: Vec<u8>) -> UploadRead {
    let total: usize = blocks.iter().map(|b| b.length as usize).sum();
    if buf.len() < total {
        buf.resize(total, 0);
    }
    let mut failed: Vec<(u32, StorageError)> = Vec::new();
    let mut at = 0;
    for b in &blocks {
        let len = b.length as usize;
        if !failed.iter().any(|(p, _)| *p == b.piece)
            && let Err(e) = t.storage.read_at(
                t.piece_offset(b.piece) + u64::from(b.begin),
                &mut buf[at..at + len],
            )
        {
            failed.push((b.piece, e));
        }
        at += len;
    }
    UploadRead {
        buf,
        blocks,
        failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torrent(
        dir: &std::path::Path,
        payload: &[u8],
        plen: u32,
    ) -> (
        Arc<TorrentDisk>,
        tokio::sync::mpsc::UnboundedReceiver<DiskEvent>,
    ) {
        let storage = Storage::new(
            dir,
            vec![
                ("a".into(), 0, 40_000, false),
                ("b".into(), 40_000, payload.len() as u64 - 40_000, false),
            ],
            payload.len() as u64,
        )
        .unwrap();
        let hashes: Vec<[u8; 20]> = payload
            .chunks(plen as usize)
            .map(|c| Sha1::digest(c).into())
            .collect();
        let last = payload.len() as u32 - (hashes.len() as u32 - 1) * plen;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (
            Arc::new(TorrentDisk {
                key: 1,
                storage,
                piece_length: plen,
                last_piece_length: last,
                hashes,
                sink: Arc::new(move |e| {
                    let _ = tx.send(e);
                }),
            }),
            rx,
        )
    }

    fn blocks_of(t: &TorrentDisk, p: u32) -> Vec<BlockRef> {
        let size = t.piece_size(p);
        (0..size.div_ceil(BLOCK_SIZE))
            .map(|b| BlockRef {
                piece: p,
                begin: b * BLOCK_SIZE,
                length: (size - b * BLOCK_SIZE).min(BLOCK_SIZE),
            })
            .collect()
    }

    #[tokio::test]
    async fn in_order_out_of_order_and_corrupt_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let plen = 4 * BLOCK_SIZE;
        let (t, mut rx) = torrent(dir.path(), &payload, plen);
        let pool = DiskPool::new(2, 1 << 20);
        let send = |p: u32, order: Vec<usize>, corrupt: bool| {
            let blocks = blocks_of(&t, p);
            let t = t.clone();
            let payload = payload.clone();
            let pool = &pool;
            async move {
                for i in order {
                    let b = blocks[i];
                    let start = (u64::from(p) * u64::from(plen) + u64::from(b.begin)) as usize;
                    let mut d = payload[start..start + b.length as usize].to_vec();
                    if corrupt && i == 0 {
                        d[5] ^= 1;
                    }
                    pool.write(&t, p, b.begin, Bytes::from(d)).await;
                }
            }
        };
        send(0, vec![0, 1, 2, 3], false).await; // in order
        send(1, vec![3, 1, 0, 2], false).await; // scrambled: read-back path
        send(2, vec![0, 1], true).await; // last piece (150000-131072 = 18928 bytes: 2 blocks), corrupt
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(format!("{:?}", rx.recv().await.unwrap()));
        }
        got.sort();
        assert_eq!(
            got,
            vec!["PieceFailed(2)", "PieceVerified(0)", "PieceVerified(1)"]
        );
        // re-download of the failed piece verifies
        send(2, vec![1, 0], false).await;
        assert!(matches!(
            rx.recv().await.unwrap(),
            DiskEvent::PieceVerified(2)
        ));
        let mut on_disk = std::fs::read(dir.path().join("a")).unwrap();
        on_disk.extend(std::fs::read(dir.path().join("b")).unwrap());
        assert_eq!(on_disk, payload);

        // reads for upload come back in order and match
        let (rtx, rrx) = std::sync::mpsc::channel();
        let want = blocks_of(&t, 1);
        pool.read_for_upload(
            &t,
            want.clone(),
            Vec::new(),
            Box::new(move |r| rtx.send(r).unwrap()),
        );
        let r = rrx.recv().unwrap();
        assert!(r.failed.is_empty());
        let mut at = 0;
        for b in &r.blocks {
            let start = (u64::from(plen) + u64::from(b.begin)) as usize;
            let len = b.length as usize;
            assert_eq!(&r.buf[at..at + len], &payload[start..start + len]);
            at += len;
        }
        // a truncated file fails only the pieces it no longer holds
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("b"))
            .unwrap();
        f.set_len(100_000 - 40_000).unwrap();
        let (rtx, rrx) = std::sync::mpsc::channel();
        let mut both = blocks_of(&t, 0);
        both.extend(blocks_of(&t, 2));
        pool.read_for_upload(&t, both, r.buf, Box::new(move |r| rtx.send(r).unwrap()));
        let r = rrx.recv().unwrap();
        assert_eq!(
            r.failed.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            vec![2]
        );
    }

    #[tokio::test]
    async fn write_error_is_reported_not_panicked() {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![1u8; 50_000];
        let (t, mut rx) = torrent(dir.path(), &payload, BLOCK_SIZE);
        // make "a" a directory so opening it as a file fails
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let pool = DiskPool::new(1, 1 << 20);
        pool.write(&t, 0, 0, Bytes::from(vec![1u8; BLOCK_SIZE as usize]))
            .await;
        assert!(matches!(rx.recv().await.unwrap(), DiskEvent::Error(_)));
    }
}
