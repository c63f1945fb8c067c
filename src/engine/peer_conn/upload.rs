//! The writing side of a connection, and the upload pump: it owns the socket's write half,
//! sends our messages, and serves the peer's requests.
//!
//! Requests wait in a queue of block addresses (12 bytes each, at most our `reqq`). The pump
//! reads them from disk in batches of up to [`BATCH_BYTES`] into reused buffers, on the
//! disk threads (smaller batches while the peer has taken little: [`batch_limit`]), and
//! writes each block with its 13-byte header in one vectored write, so
//! payload bytes are copied once (page cache → buffer) and never per block. While one batch
//! is being written the next is read, so disk and socket overlap. Memory is bounded twice:
//! a connection holds at most two batches (one read ahead, one being written), and every
//! batch takes permits from the session-wide upload budget first
//! ([`crate::engine::link::ctx::UPLOAD_BUDGET_BYTES`]). A peer that stops reading therefore holds
//! at most two batches for [`WRITE_STALL_MS`]; after that the pump gives them back (the
//! stall release below) and holds only the rest of the block it was sending, until the
//! torrent's sweep drops the peer for making no write progress.
//!
//! **Stall release.** A write that moves no byte for [`WRITE_STALL_MS`] means the peer has
//! stopped reading (its receive window and our send buffer are full). The pump then keeps
//! only what the byte stream needs: the unsent part of the block on the wire (or the next
//! block, so the next write attempt tells when the socket drains again), at most one block
//! and its header, in its message buffer. Every later block of the batch goes back to the
//! request queue as an address, the read-ahead batch does too when it lands, spare buffers
//! are freed, and no new batch is read until the socket takes bytes again; batches then
//! start small again (like TCP's slow start after an idle period). A crowd of peers that
//! request and never read therefore costs about one block each, not two batches each
//! (issue 16: 100 such peers and 300 silent ones beside a real leecher).
//!
//! Every count the rest of the engine reads (requests queued, bytes pending) is *stored*
//! from the pump's own state after each change, never incremented and decremented in
//! separate places, so it cannot drift.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};

use crate::engine::link::message::{PeerError, PeerEvent};
use crate::engine::link::peer::PeerInfo;
use crate::engine::link::shared::TorrentShared;
use crate::peer::wire::{self, Message};
use crate::piece::{BLOCK_SIZE, BlockRef};
use crate::storage::disk::UploadRead;

/// Most payload bytes read from disk in one batch.
pub const BATCH_BYTES: u32 = 256 * 1024;
/// Most payload bytes in a batch for a peer that has taken nothing yet. A batch may be
/// twice what the peer has taken so far, from this up to [`BATCH_BYTES`] (like TCP's slow
/// start): a peer that never reads its socket holds two small batches, not two large ones,
/// while a peer that reads reaches full batches after a few hundred KiB.
pub const FIRST_BATCH_BYTES: u32 = 2 * BLOCK_SIZE;

/// Milliseconds without a single byte taken by the socket after which a write counts as
/// stalled and the pump gives back the batches it holds (see the module doc).
pub const WRITE_STALL_MS: u64 = 2_000;

/// The largest batch for a peer that has taken `uploaded` payload bytes from us so far.
pub fn batch_limit(uploaded: u64) -> u32 {
    let grown = uploaded.saturating_mul(2).min(u64::from(BATCH_BYTES)) as u32;
    grown.max(FIRST_BATCH_BYTES)
}

/// What the reader asks the pump to do.
#[derive(Debug)]
pub enum Outgoing {
    /// Send a protocol message.
    Msg(Message),
    /// Serve a request of the peer (already validated: in range, piece verified, unchoked).
    Request(BlockRef),
    /// The peer withdrew a request.
    Cancel(BlockRef),
    /// We choke the peer: drop its queued requests (BEP 3; with the fast extension each is
    /// answered with `reject`, BEP 6) and send `choke`.
    Choke,
}

struct Reading {
    rx: oneshot::Receiver<UploadRead>,
    permit: OwnedSemaphorePermit,
    generation: u64,
    bytes: u32,
}

struct Batch {
    read: UploadRead,
    /// Blocks not to send (cancelled, or their piece could not be read), by index.
    skip: Vec<bool>,
    _permit: OwnedSemaphorePermit,
    generation: u64,
}

impl Batch {
    fn skip_where(&mut self, f: impl Fn(&BlockRef) -> bool) {
        for (i, b) in self.read.blocks.iter().enumerate() {
            if f(b) {
                self.skip[i] = true;
            }
        }
    }

    fn pending_bytes(&self) -> u32 {
        self.sendable().map(|(b, _)| b.length).sum()
    }

    /// The blocks to send, with their data.
    fn sendable(&self) -> impl Iterator<Item = (BlockRef, &[u8])> + '_ {
        self.read
            .blocks
            .iter()
            .zip(&self.read.ranges)
            .zip(&self.skip)
            .filter(|(_, skip)| !**skip)
            .filter_map(|((b, r), _)| r.clone().map(|r| (*b, &self.read.buf[r])))
    }
}

struct Pump {
    t: Arc<TorrentShared>,
    key: u64,
    info: Arc<PeerInfo>,
    queue: VecDeque<BlockRef>,
    reading: Option<Reading>,
    ready: Option<Batch>,
    /// Buffers of written batches, reused for the next reads while uploading.
    spare: Vec<Vec<u8>>,
    /// Bumped by every choke: batches of an older generation are dropped unsent.
    generation: u64,
    /// Cancels that may concern the batch being read.
    cancelled: Vec<BlockRef>,
    small: BytesMut,
    /// Permits a queued batch waits for (session budget exhausted).
    want_permits: u32,
    /// The fast extension is on (BEP 6): dropped requests are rejected explicitly.
    fast: bool,
    /// The last write stalled ([`WRITE_STALL_MS`]) and the socket has taken nothing since:
    /// no batch is read until it does.
    stalled: bool,
    /// Payload bytes the peer had taken at its last stall: batch sizes grow again from there.
    uploaded_at_stall: u64,
}

/// Run the pump until the reader drops its sender or the socket fails. `fast`: both sides
/// speak the fast extension (BEP 6).
///
/// # Errors
/// [`PeerError::Io`] when a write fails.
pub async fn run<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    t: Arc<TorrentShared>,
    key: u64,
    info: Arc<PeerInfo>,
    fast: bool,
) -> Result<(), PeerError> {
    let mut p = Pump {
        t,
        key,
        info,
        queue: VecDeque::new(),
        reading: None,
        ready: None,
        spare: Vec::new(),
        generation: 0,
        cancelled: Vec::new(),
        small: BytesMut::with_capacity(4096),
        want_permits: 0,
        fast,
        stalled: false,
        uploaded_at_stall: 0,
    };
    loop {
        // everything the reader queued, without waiting
        loop {
            match rx.try_recv() {
                Ok(m) => p.handle(m),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    let _ = p.write_out(&mut wr).await;
                    let _ = wr.shutdown().await;
                    return Ok(());
                }
            }
        }
        p.poll_read_done();
        p.maybe_start_read(None);
        if !p.small.is_empty() || p.ready.is_some() {
            p.write_out(&mut wr).await?;
            continue;
        }
        let budget = p.t.ctx.upload_budget.clone();
        let want = p.want_permits;
        tokio::select! {
            m = rx.recv() => match m {
                Some(m) => p.handle(m),
                None => {
                    let _ = wr.shutdown().await;
                    return Ok(());
                }
            },
            r = async { (&mut p.reading.as_mut().expect("guarded").rx).await }, if p.reading.is_some() => {
                p.land(r.ok());
            }
            permit = budget.acquire_many_owned(want), if want > 0 && p.reading.is_none() => {
                if let Ok(permit) = permit {
                    p.maybe_start_read(Some(permit));
                }
            }
        }
    }
}

impl Pump {
    fn handle(&mut self, m: Outgoing) {
        match m {
            Outgoing::Msg(m) => m.encode(&mut self.small),
            Outgoing::Request(b) => {
                if !self.queue.contains(&b) {
                    self.queue.push_back(b);
                }
            }
            Outgoing::Cancel(b) => {
                self.queue.retain(|x| *x != b);
                if self.reading.is_some() {
                    self.cancelled.push(b);
                }
                if let Some(batch) = &mut self.ready {
                    batch.skip_where(|x| *x == b);
                }
            }
            Outgoing::Choke => {
                self.generation += 1;
                Message::Choke.encode(&mut self.small);
                if self.fast {
                    for b in self.queue.drain(..) {
                        Message::Reject(b).encode(&mut self.small);
                    }
                    if let Some(batch) = &self.ready {
                        for (b, _) in batch.sendable() {
                            Message::Reject(b).encode(&mut self.small);
                        }
                    }
                }
                self.queue.clear();
                self.ready = None;
                self.cancelled.clear();
            }
        }
        self.publish_counts();
    }

    fn publish_counts(&self) {
        self.info
            .upload_queued
            .store(self.queue.len() as u32, Ordering::Relaxed);
        // after a stall the rest of a block waits in `small`: still pending, so the
        // torrent's "no write progress" clock keeps running for this peer
        let stuck = if self.stalled {
            self.small.len() as u32
        } else {
            0
        };
        let pending = self.reading.as_ref().map_or(0, |r| r.bytes)
            + self.ready.as_ref().map_or(0, Batch::pending_bytes)
            + stuck;
        self.info.upload_pending.store(pending, Ordering::Relaxed);
        if pending == 0 && self.queue.is_empty() {
            // nothing pending: the clock for "no write progress" starts with the next batch
            self.info
                .last_write_progress
                .store(self.t.ctx.clock.now_ms(), Ordering::Relaxed);
        }
    }

    /// A read finished without waiting (it landed while we were writing).
    fn poll_read_done(&mut self) {
        if let Some(r) = &mut self.reading {
            match r.rx.try_recv() {
                Ok(read) => self.land(Some(read)),
                Err(oneshot::error::TryRecvError::Empty) => {}
                Err(oneshot::error::TryRecvError::Closed) => self.land(None),
            }
        }
    }

    fn land(&mut self, read: Option<UploadRead>) {
        let Some(r) = self.reading.take() else {
            return;
        };
        let Some(mut read) = read else {
            self.publish_counts();
            return; // the disk pool went away (shutdown)
        };
        let failed = std::mem::take(&mut read.failed);
        let mut batch = Batch {
            skip: vec![false; read.blocks.len()],
            read,
            _permit: r.permit,
            generation: r.generation,
        };
        for (piece, error) in failed {
            batch.skip_where(|b| b.piece == piece);
            self.t
                .peer_event(self.key, PeerEvent::PieceUnreadable { piece, error });
        }
        let corrupt = std::mem::take(&mut batch.read.corrupt);
        if self.fast && !corrupt.is_empty() && batch.generation == self.generation {
            // a piece taken without a check failed it: its blocks are never sent; with the
            // fast extension the peer hears so at once and asks elsewhere (BEP 6)
            for b in batch
                .read
                .blocks
                .iter()
                .filter(|b| corrupt.contains(&b.piece))
            {
                Message::Reject(*b).encode(&mut self.small);
            }
        }
        for c in std::mem::take(&mut self.cancelled) {
            batch.skip_where(|b| *b == c);
        }
        if batch.generation == self.generation && self.stalled {
            // read ahead for a peer that stopped reading: give the data back, keep the
            // addresses (in order, before what was asked since)
            let back: Vec<BlockRef> = batch.sendable().map(|(b, _)| b).collect();
            for b in back.into_iter().rev() {
                self.queue.push_front(b);
            }
        } else if batch.generation == self.generation {
            self.ready = Some(batch);
        } else {
            // read before a choke: not sent (BEP 6: say so)
            if self.fast {
                for (b, _) in batch.sendable() {
                    Message::Reject(b).encode(&mut self.small);
                }
            }
            if self.spare.len() < 2 {
                self.spare.push(batch.read.buf);
            }
        }
        self.publish_counts();
    }

    /// Start reading the next batch if nothing is being read, the last batch is not waiting
    /// to be written twice over, and the session budget has room (`permit`: already won).
    fn maybe_start_read(&mut self, permit: Option<OwnedSemaphorePermit>) {
        if self.stalled {
            // nothing new until the socket takes bytes again (see the module doc)
            self.want_permits = 0;
            return;
        }
        if self.reading.is_some() || self.queue.is_empty() {
            self.want_permits = 0;
            if self.queue.is_empty() && self.ready.is_none() && self.reading.is_none() {
                self.spare.clear(); // idle: give the buffers back
            }
            return;
        }
        let mut bytes = 0u32;
        let mut count = 0usize;
        let uploaded = self.info.uploaded.load(Ordering::Relaxed);
        let limit = batch_limit(uploaded.saturating_sub(self.uploaded_at_stall));
        for b in &self.queue {
            if count > 0 && bytes + b.length > limit {
                break;
            }
            bytes += b.length;
            count += 1;
        }
        let permits = bytes.div_ceil(BLOCK_SIZE).max(1);
        let permit = match permit {
            Some(p) if p.num_permits() as u32 >= permits => p,
            Some(p) => {
                drop(p);
                self.want_permits = permits;
                return;
            }
            None => match self
                .t
                .ctx
                .upload_budget
                .clone()
                .try_acquire_many_owned(permits)
            {
                Ok(p) => p,
                Err(_) => {
                    self.want_permits = permits;
                    return;
                }
            },
        };
        self.want_permits = 0;
        let blocks: Vec<BlockRef> = self.queue.drain(..count).collect();
        let buf = self.spare.pop().unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        self.t.read_for_upload(
            blocks,
            buf,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        if self.ready.is_none() {
            // data becomes pending: "no write progress" counts from now
            self.info
                .last_write_progress
                .store(self.t.ctx.clock.now_ms(), Ordering::Relaxed);
        }
        self.reading = Some(Reading {
            rx,
            permit,
            generation: self.generation,
            bytes,
        });
        self.publish_counts();
    }

    /// Write our small messages and the ready batch (each block with its header) in as few
    /// vectored writes as the socket takes.
    async fn write_out<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> Result<(), PeerError> {
        let batch = self
            .ready
            .take()
            .filter(|b| b.generation == self.generation);
        let small = self.small.split().freeze();
        let mut headers: Vec<[u8; 13]> = Vec::new();
        let mut payload = 0u64;
        if let Some(b) = &batch {
            for (blk, _) in b.sendable() {
                headers.push(wire::piece_header(blk.piece, blk.begin, blk.length));
                payload += u64::from(blk.length);
            }
        }
        {
            let mut slices: Vec<&[u8]> = Vec::with_capacity(1 + 2 * headers.len());
            if !small.is_empty() {
                slices.push(&small);
            }
            if let Some(b) = &batch {
                for ((_, data), hdr) in b.sendable().zip(&headers) {
                    slices.push(hdr);
                    slices.push(data);
                }
            }
            if let Some(at) = write_all_vectored(wr, &slices, &self.info, &self.t).await? {
                let first_block = usize::from(!small.is_empty());
                let rest = unsent_after_stall(at, first_block, &slices);
                // blocks the byte stream does not need yet go back to the queue
                if let Some(b) = &batch {
                    let back: Vec<BlockRef> = b
                        .sendable()
                        .skip(rest.blocks_kept)
                        .map(|(b, _)| b)
                        .collect();
                    payload = b
                        .sendable()
                        .take(rest.blocks_kept)
                        .map(|(b, _)| u64::from(b.length))
                        .sum();
                    for blk in back.into_iter().rev() {
                        self.queue.push_front(blk);
                    }
                }
                for part in &rest.parts {
                    self.small.extend_from_slice(part);
                }
                self.stall();
            } else if self.stalled {
                // the socket drains again: batches grow from small ones anew
                self.stalled = false;
                self.uploaded_at_stall = self.info.uploaded.load(Ordering::Relaxed) + payload;
            }
        }
        let now = self.t.ctx.clock.now_ms();
        self.info.last_send.store(now, Ordering::Relaxed);
        if let Some(b) = batch
            && self.spare.len() < 2
            && !self.stalled
        {
            self.spare.push(b.read.buf);
        }
        self.publish_counts();
        if payload > 0 {
            self.info.uploaded.fetch_add(payload, Ordering::Relaxed);
            self.t.stats.uploaded.fetch_add(payload, Ordering::Relaxed);
            self.t.consume_upload(payload).await;
        }
        Ok(())
    }
}

impl Pump {
    /// The socket took nothing for [`WRITE_STALL_MS`]: give back the read-ahead (when it
    /// lands) and the spare buffers, read nothing until it drains.
    fn stall(&mut self) {
        self.stalled = true;
        self.spare = Vec::new();
        self.small = BytesMut::from(&self.small[..]); // no capacity beyond what it holds
    }
}

/// Where a stalled write stopped: slice `at.0`, byte `at.1` of `slices`, which are our small
/// messages (when `first_block` is 1) then a header and a payload slice per block.
/// Returns what the byte stream still needs (the rest of the block on the wire, or the next
/// whole block when the stall came between blocks, so that one block is always pending)
/// and how many blocks of the batch that covers, counted from the first.
fn unsent_after_stall<'a>(
    at: (usize, usize),
    first_block: usize,
    slices: &[&'a [u8]],
) -> StallRest<'a> {
    let (idx, off) = at;
    let mut parts = Vec::with_capacity(3);
    let blocks_kept;
    if idx < first_block {
        // inside our small messages: their rest, and the first block as the probe
        parts.push(&slices[idx][off..]);
        blocks_kept = usize::from(slices.len() > first_block);
        if blocks_kept == 1 {
            parts.push(slices[first_block]);
            parts.push(slices[first_block + 1]);
        }
    } else {
        let k = (idx - first_block) / 2;
        let hdr = first_block + 2 * k;
        if idx == hdr {
            parts.push(&slices[hdr][off..]);
            parts.push(slices[hdr + 1]);
        } else {
            parts.push(&slices[hdr + 1][off..]);
        }
        blocks_kept = k + 1;
    }
    StallRest { parts, blocks_kept }
}

/// See [`unsent_after_stall`].
struct StallRest<'a> {
    /// Bytes to send next, in order (at most one block with its header, after our messages).
    parts: Vec<&'a [u8]>,
    /// Blocks of the batch sent or in `parts`; the later ones go back to the queue.
    blocks_kept: usize,
}

/// Write every slice, in order, with vectored writes; each write that moves bytes counts as
/// write progress (the stall detector reads it). Returns `Some((slice, byte))`, where the
/// writing stopped, when the socket took nothing for [`WRITE_STALL_MS`].
async fn write_all_vectored<W: AsyncWrite + Unpin>(
    wr: &mut W,
    slices: &[&[u8]],
    info: &PeerInfo,
    t: &TorrentShared,
) -> Result<Option<(usize, usize)>, PeerError> {
    let mut idx = 0usize;
    let mut off = 0usize;
    let stall = std::time::Duration::from_millis(WRITE_STALL_MS);
    while idx < slices.len() {
        let n = {
            let mut io: Vec<IoSlice<'_>> = Vec::with_capacity((slices.len() - idx).min(64));
            io.push(IoSlice::new(&slices[idx][off..]));
            for s in slices.iter().skip(idx + 1).take(63) {
                io.push(IoSlice::new(s));
            }
            match tokio::time::timeout(stall, wr.write_vectored(&io)).await {
                Ok(n) => n?,
                Err(_) => return Ok(Some((idx, off))),
            }
        };
        if n == 0 {
            return Err(PeerError::Io(std::io::ErrorKind::WriteZero.into()));
        }
        info.last_write_progress
            .store(t.ctx.clock.now_ms(), Ordering::Relaxed);
        let mut left = n;
        while left > 0 && idx < slices.len() {
            let rest = slices[idx].len() - off;
            if left >= rest {
                left -= rest;
                idx += 1;
                off = 0;
            } else {
                off += left;
                left = 0;
            }
        }
        while idx < slices.len() && slices[idx].len() == off {
            idx += 1;
            off = 0;
        }
    }
    wr.flush().await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16 item 7: after a stall the byte stream keeps exactly the rest of the block on
    /// the wire (or the next whole block between blocks), and the later blocks go back.
    #[test]
    fn a_stalled_write_keeps_one_block_and_gives_back_the_rest() {
        let small: &[u8] = b"01234";
        let (h0, d0) = ([1u8; 13], vec![2u8; 16]);
        let (h1, d1) = ([3u8; 13], vec![4u8; 16]);
        let with_small: Vec<&[u8]> = vec![small, &h0, &d0, &h1, &d1];
        let flat = |r: &StallRest<'_>| r.parts.concat();

        // inside our messages: their rest, then block 0 whole as the probe
        let r = unsent_after_stall((0, 2), 1, &with_small);
        assert_eq!(r.blocks_kept, 1);
        assert_eq!(flat(&r), [&small[2..], &h0[..], &d0[..]].concat());
        // between the messages and block 0: block 0 whole
        let r = unsent_after_stall((1, 0), 1, &with_small);
        assert_eq!((r.blocks_kept, flat(&r)), (1, [&h0[..], &d0[..]].concat()));
        // inside block 0's payload: only its rest
        let r = unsent_after_stall((2, 10), 1, &with_small);
        assert_eq!((r.blocks_kept, flat(&r)), (1, d0[10..].to_vec()));
        // inside block 1's header: its rest and its payload; block 0 was sent
        let r = unsent_after_stall((3, 5), 1, &with_small);
        assert_eq!((r.blocks_kept, flat(&r)), (2, [&h1[5..], &d1[..]].concat()));
        // between block 0 and block 1: block 1 whole
        let r = unsent_after_stall((3, 0), 1, &with_small);
        assert_eq!((r.blocks_kept, flat(&r)), (2, [&h1[..], &d1[..]].concat()));

        // no messages: the first slice is block 0's header
        let blocks: Vec<&[u8]> = vec![&h0, &d0, &h1, &d1];
        let r = unsent_after_stall((0, 0), 0, &blocks);
        assert_eq!((r.blocks_kept, flat(&r)), (1, [&h0[..], &d0[..]].concat()));
        // only messages: their rest, no block
        let r = unsent_after_stall((0, 3), 1, &[small]);
        assert_eq!((r.blocks_kept, flat(&r)), (0, small[3..].to_vec()));
        // never more than one block and its header after the messages
        for idx in 0..with_small.len() {
            let r = unsent_after_stall((idx, 0), 1, &with_small);
            assert!(flat(&r).len() <= small.len() + 13 + 16);
        }
    }

    /// Issue 16: a peer that has taken nothing gets two blocks a batch; each batch may be
    /// twice what it took so far, up to the full batch.
    #[test]
    fn batches_grow_with_what_the_peer_takes() {
        assert_eq!(batch_limit(0), FIRST_BATCH_BYTES);
        assert_eq!(batch_limit(1), FIRST_BATCH_BYTES);
        assert_eq!(
            batch_limit(u64::from(FIRST_BATCH_BYTES)),
            2 * FIRST_BATCH_BYTES
        );
        assert_eq!(batch_limit(100 * 1024), 200 * 1024);
        assert_eq!(batch_limit(u64::from(BATCH_BYTES) / 2), BATCH_BYTES);
        assert_eq!(batch_limit(u64::MAX), BATCH_BYTES);
        // the sizes a reading peer goes through before full batches: 32, 64, 192, 256 KiB
        let mut taken = 0u64;
        let mut sizes = Vec::new();
        while sizes.last() != Some(&BATCH_BYTES) {
            let b = batch_limit(taken);
            sizes.push(b);
            taken += u64::from(b);
        }
        assert_eq!(sizes, vec![32 << 10, 64 << 10, 192 << 10, 256 << 10]);
    }
}
