//! One run of blocks fetched from a web seed: a Range GET per file the run spans (zeros for
//! padding files), the bodies cut into the picker's blocks, each block handed to the
//! picker and the disk threads as a peer's would be.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Buf, Bytes, BytesMut};

use tokio::sync::watch;

use super::{Seed, or_stop};
use crate::engine::link::message::PeerEvent;
use crate::engine::link::shared::TorrentShared;
use crate::engine::picker::BlockOutcome;
use crate::piece::BlockRef;
use crate::webseed::WebSeedError;
use crate::webseed::fetch;

/// Zeros for padding files (BEP 47), handed out as slices: no allocation.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// Why a run failed.
#[derive(Debug)]
pub enum JobError {
    /// The request for file `file` (index in the torrent) failed.
    Fetch {
        /// The file.
        file: usize,
        /// Why.
        error: WebSeedError,
    },
    /// The run did not fit the payload, or its task ended abnormally.
    Internal(String),
    /// Told to stop (the server failed on another request, or the torrent stops it).
    Stopped,
}

impl JobError {
    /// For the log and the snapshot: the file (by `names`) and the error.
    pub fn describe(&self, names: &[String]) -> String {
        match self {
            JobError::Fetch { file, error } => match names.get(*file) {
                Some(n) => format!("{n}: {error}"),
                None => error.to_string(),
            },
            JobError::Internal(why) => why.clone(),
            JobError::Stopped => "stopped".to_owned(),
        }
    }
}

/// The blocks of one run, counted as requested in the picker until they arrive: whatever
/// has not arrived when the claim is dropped (the run ended, failed or was aborted) goes
/// back to the picker.
pub struct Claim {
    t: Arc<TorrentShared>,
    blocks: Vec<BlockRef>,
    /// Blocks delivered (the first `delivered` of `blocks`).
    delivered: usize,
}

impl Claim {
    /// Hold `blocks` (picked for this web seed, contiguous in the payload).
    pub fn new(t: Arc<TorrentShared>, blocks: Vec<BlockRef>) -> Claim {
        Claim {
            t,
            blocks,
            delivered: 0,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.delivered < self.blocks.len() {
            let mut pk = self.t.picker();
            for b in &self.blocks[self.delivered..] {
                pk.release(b);
            }
        }
    }
}

/// Cuts a run's bytes (bodies and padding, in payload order) into its blocks: a block inside
/// one chunk is a slice of it, one that straddles chunks is joined in `pending`.
#[derive(Default)]
struct Assembler {
    pending: BytesMut,
    /// Blocks cut so far.
    next: usize,
}

impl Assembler {
    /// Cut what `chunk` completes of `blocks` into `out` (bytes past the last block are
    /// dropped: the fetch never hands out more than asked for).
    fn push(&mut self, mut chunk: Bytes, blocks: &[BlockRef], out: &mut Vec<(BlockRef, Bytes)>) {
        while !chunk.is_empty() {
            let Some(&b) = blocks.get(self.next) else {
                return;
            };
            let need = b.length as usize - self.pending.len();
            if self.pending.is_empty() && chunk.len() >= need {
                out.push((b, chunk.split_to(need)));
                self.next += 1;
                continue;
            }
            let take = need.min(chunk.len());
            if self.pending.capacity() == 0 {
                self.pending.reserve(b.length as usize);
            }
            self.pending.extend_from_slice(&chunk[..take]);
            chunk.advance(take);
            if self.pending.len() == b.length as usize {
                out.push((b, self.pending.split().freeze()));
                self.next += 1;
            }
        }
    }
}

/// Fetch the run `claim` holds from web seed `s`: every block that arrives goes to the
/// picker and the disk; the claim gives back the rest.
///
/// # Errors
/// The first request that fails, with its file.
pub async fn run(
    s: &Seed,
    mut claim: Claim,
    mut stop: watch::Receiver<bool>,
) -> Result<(), JobError> {
    let geo = s.t.geometry;
    let Some(first) = claim.blocks.first().copied() else {
        return Ok(());
    };
    let start = geo.piece_offset(first.piece) + u64::from(first.begin);
    let len: u64 = claim.blocks.iter().map(|b| u64::from(b.length)).sum();
    let segments: Vec<_> = s
        .layout
        .segments(start, len as usize)
        .ok_or_else(|| JobError::Internal(format!("bytes {start}+{len} are not in the payload")))?
        .collect();
    let mut asm = Assembler::default();
    let mut ready: Vec<(BlockRef, Bytes)> = Vec::new();
    for seg in segments {
        let Some(span) = s.layout.spans().get(seg.file).copied() else {
            continue;
        };
        let seg_len = seg.range.len() as u64;
        if span.pad {
            let mut left = seg_len as usize;
            while left > 0 {
                let n = left.min(ZEROS.len());
                asm.push(Bytes::from_static(&ZEROS[..n]), &claim.blocks, &mut ready);
                deliver(s, &mut claim, &mut ready).await;
                left -= n;
            }
            continue;
        }
        let Some(url) = s.urls.url(seg.file) else {
            continue;
        };
        let fail = |error| JobError::Fetch {
            file: seg.file,
            error,
        };
        let get = fetch::get_range(&s.client, url, seg.at, seg_len, span.length, s.rate);
        let mut body = or_stop(&mut stop, get)
            .await
            .ok_or(JobError::Stopped)?
            .map_err(fail)?;
        while let Some(chunk) = or_stop(&mut stop, body.chunk())
            .await
            .ok_or(JobError::Stopped)?
            .map_err(fail)?
        {
            let n = chunk.len() as u64;
            s.info.downloaded.fetch_add(n, Ordering::Relaxed);
            s.t.stats.downloaded.fetch_add(n, Ordering::Relaxed);
            asm.push(chunk, &claim.blocks, &mut ready);
            deliver(s, &mut claim, &mut ready).await;
            let wait = s.t.debit_download(n);
            if !wait.is_zero() && or_stop(&mut stop, body.pause(wait)).await.is_none() {
                return Err(JobError::Stopped);
            }
        }
    }
    Ok(())
}

/// Hand the blocks in `ready` to the picker (one lock for all) and the new ones to the
/// disk threads; the claim no longer holds them.
async fn deliver(s: &Seed, claim: &mut Claim, ready: &mut Vec<(BlockRef, Bytes)>) {
    if ready.is_empty() {
        return;
    }
    let mut outcomes = [BlockOutcome::Duplicate; 64];
    for batch in ready.chunks(outcomes.len()) {
        {
            let mut pk = s.t.picker();
            for ((b, _), o) in batch.iter().zip(outcomes.iter_mut()) {
                *o = pk.on_block(s.key, b.piece, b.begin, b.length);
            }
        }
        claim.delivered += batch.len();
        for ((b, data), o) in batch.iter().zip(outcomes) {
            match o {
                BlockOutcome::New {
                    requested_elsewhere,
                    ..
                } => {
                    if requested_elsewhere {
                        s.t.peer_event(s.key, PeerEvent::CancelElsewhere(*b));
                    }
                    s.t.write_block(b.piece, b.begin, data.clone()).await;
                }
                BlockOutcome::Duplicate | BlockOutcome::Unexpected => {
                    s.t.stats
                        .wasted
                        .fetch_add(u64::from(b.length), Ordering::Relaxed);
                }
            }
        }
    }
    ready.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(lens: &[u32]) -> Vec<BlockRef> {
        let mut begin = 0;
        lens.iter()
            .map(|&length| {
                let b = BlockRef {
                    piece: 0,
                    begin,
                    length,
                };
                begin += length;
                b
            })
            .collect()
    }

    #[test]
    fn chunks_are_cut_into_blocks_slicing_where_they_can() {
        let bl = blocks(&[4, 4, 3]);
        let data: Vec<u8> = (0..11).collect();
        let mut asm = Assembler::default();
        let mut out = Vec::new();
        // a chunk holding a whole block and part of the next
        let first = Bytes::copy_from_slice(&data[..6]);
        let base = first.as_ptr();
        asm.push(first, &bl, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].1.as_ptr(),
            base,
            "a block inside a chunk is a slice of it"
        );
        asm.push(Bytes::copy_from_slice(&data[6..7]), &bl, &mut out);
        assert_eq!(out.len(), 1, "the second block waits for its last byte");
        asm.push(Bytes::copy_from_slice(&data[7..]), &bl, &mut out);
        let got: Vec<(BlockRef, Vec<u8>)> = out.iter().map(|(b, d)| (*b, d.to_vec())).collect();
        assert_eq!(
            got,
            [
                (bl[0], data[0..4].to_vec()),
                (bl[1], data[4..8].to_vec()),
                (bl[2], data[8..11].to_vec())
            ]
        );
        // more than the run: dropped
        asm.push(Bytes::from_static(b"xyz"), &bl, &mut out);
        assert_eq!(out.len(), 3);
    }
}
