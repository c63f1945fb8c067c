//! Picking for a web seed (BEP 19): one contiguous run of blocks at a time, which becomes
//! one HTTP range (or one per file it spans).
//!
//! Like libtorrent, a web seed is always used but gets whole pieces that no peer took: the
//! rarest first, those no connected peer has before all (the server has every piece), or
//! in index order under sequential download, with the pieces that follow appended while
//! they are missing too, up to the bytes asked for (one long range instead of many short
//! ones). Only when no piece is left to start does it take the blocks nobody asked for in
//! pieces peers started, and in end game a run of blocks still missing that at most one
//! other source was asked for (as peers do: [`super::ENDGAME_MAX_DUPLICATES`]).

use super::{ENDGAME_MAX_DUPLICATES, PRIO_SKIP, PeerKey, Picker, PieceState};
use crate::piece::{Bitfield, BlockRef};

impl Picker {
    /// Pick for web seed `seed` one run of blocks that follow each other in the payload,
    /// of at most `max_bytes` (at least one block), from the pieces `has` offers (the
    /// server's: all, less those of files missing on it); `busy`: the pieces it has blocks
    /// of in flight (end game never asks it twice for one). Picked blocks are counted as
    /// requested, as [`Picker::pick`] does; give back those not delivered with
    /// [`Picker::release`]. Appends to `out` (nothing when there is nothing to pick).
    pub fn pick_run(
        &mut self,
        seed: PeerKey,
        has: &Bitfield,
        busy: &[u32],
        max_bytes: u64,
        out: &mut Vec<BlockRef>,
    ) {
        let start = out.len();
        // 1. a piece it started (blocks given back after a failed request)
        let owned = self
            .partial
            .iter()
            .find(|(p, part)| part.owner == Some(seed) && part.unrequested > 0 && has.get(**p))
            .map(|(&p, _)| p);
        if let Some(p) = owned {
            self.take_run(p, max_bytes, |b| !b.received && b.requests == 0, out);
            return;
        }
        // 2. whole pieces nobody started, and those after them
        let next = if self.sequential {
            self.first_missing(has)
        } else {
            self.rarest_missing(has, 0)
        };
        if let Some(first) = next {
            let mut bytes = 0u64;
            let mut p = first;
            loop {
                self.start_piece(p, Some(seed));
                let n = self.geo.block_count(p) as usize;
                self.take_unrequested(p, n, out);
                bytes += u64::from(self.geo.piece_size(p));
                p += 1;
                if bytes >= max_bytes
                    || p >= self.geo.piece_count()
                    || self.state[p as usize] != PieceState::Missing
                    || self.prio[p as usize] == PRIO_SKIP
                    || !has.get(p)
                    || bytes + u64::from(self.geo.piece_size(p)) > max_bytes.max(1)
                {
                    break;
                }
            }
            return;
        }
        // 3. blocks nobody asked for in pieces peers started
        let shared = self
            .partial
            .iter()
            .find(|(p, part)| part.unrequested > 0 && has.get(**p))
            .map(|(&p, _)| p);
        if let Some(p) = shared {
            self.take_run(p, max_bytes, |b| !b.received && b.requests == 0, out);
            return;
        }
        // 4. end game: blocks still missing, asked of one other source at most
        if self.in_endgame() {
            let candidate = self
                .partial
                .iter()
                .find(|(p, part)| {
                    has.get(**p)
                        && !busy.contains(p)
                        && self.state[**p as usize] == PieceState::Partial
                        && part
                            .blocks
                            .iter()
                            .any(|b| !b.received && b.requests < ENDGAME_MAX_DUPLICATES)
                })
                .map(|(&p, _)| p);
            if let Some(p) = candidate {
                self.take_run(
                    p,
                    max_bytes,
                    |b| !b.received && b.requests < ENDGAME_MAX_DUPLICATES,
                    out,
                );
            }
        }
        debug_assert!(out[start..].windows(2).all(|w| {
            let end = self.geo.piece_offset(w[0].piece) + u64::from(w[0].begin + w[0].length);
            end == self.geo.piece_offset(w[1].piece) + u64::from(w[1].begin)
        }));
    }

    /// Request the first run of blocks of piece `p` that `eligible` accepts, at most
    /// `max_bytes` of them (one block at least).
    fn take_run(
        &mut self,
        p: u32,
        max_bytes: u64,
        eligible: impl Fn(&super::Block) -> bool,
        out: &mut Vec<BlockRef>,
    ) {
        let Some(part) = self.partial.get_mut(&p) else {
            return;
        };
        let Some(first) = part.blocks.iter().position(&eligible) else {
            return;
        };
        let mut bytes = 0u64;
        for b in first..part.blocks.len() {
            let blk = &mut part.blocks[b];
            if !eligible(blk) {
                break;
            }
            let Some(r) = self.geo.block(p, b as u32) else {
                break;
            };
            if bytes > 0 && bytes + u64::from(r.length) > max_bytes {
                break;
            }
            if blk.requests == 0 {
                part.unrequested -= 1;
            }
            blk.requests += 1;
            bytes += u64::from(r.length);
            out.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::picker::BlockOutcome;
    use crate::piece::{BLOCK_SIZE, Geometry};

    const SEED: PeerKey = 900;

    /// 8 pieces of 2 blocks (32 KiB), the last one 10 bytes short.
    fn picker() -> Picker {
        let geo = Geometry::new(8 * 32 * 1024 - 10, 32 * 1024, 8).unwrap();
        Picker::new(geo, Bitfield::new(8))
    }

    fn contiguous(picker: &Picker, run: &[BlockRef]) -> bool {
        let geo = picker.geometry();
        run.windows(2).all(|w| {
            geo.piece_offset(w[0].piece) + u64::from(w[0].begin + w[0].length)
                == geo.piece_offset(w[1].piece) + u64::from(w[1].begin)
        })
    }

    #[test]
    fn a_web_seed_takes_whole_pieces_nobody_has_and_those_after_them() {
        let mut pk = picker();
        pk.set_sequential(true);
        let all = Bitfield::full(8);
        let mut run = Vec::new();
        pk.pick_run(SEED, &all, &[], 3 * 32 * 1024, &mut run);
        assert_eq!(run.len(), 6, "three whole pieces: {run:?}");
        assert_eq!((run[0].piece, run[5].piece), (0, 2));
        assert!(contiguous(&pk, &run));
        // a peer takes piece 3; the next run starts after it
        let mut peer = Vec::new();
        pk.pick(1, &all, &[], 2, &mut peer);
        assert!(peer.iter().all(|b| b.piece == 3), "{peer:?}");
        let mut run2 = Vec::new();
        pk.pick_run(SEED, &all, &[], 2 * 32 * 1024, &mut run2);
        assert_eq!(
            run2.iter().map(|b| b.piece).collect::<Vec<_>>(),
            [4, 4, 5, 5]
        );
        pk.check_invariants();
    }

    #[test]
    fn rarest_first_a_web_seed_starts_with_pieces_no_peer_has() {
        let mut pk = picker();
        let mut peers = Bitfield::new(8);
        for p in [0, 1, 2, 3, 5, 6, 7] {
            peers.set(p);
        }
        pk.peer_bitfield(&peers);
        let mut run = Vec::new();
        pk.pick_run(SEED, &Bitfield::full(8), &[], 32 * 1024, &mut run);
        assert_eq!(run.len(), 2);
        assert!(run.iter().all(|b| b.piece == 4), "{run:?}");
        // the server lacks piece 4 (a file missing on it): another piece
        let mut without = Bitfield::full(8);
        without.unset(4);
        let mut pk = picker();
        pk.peer_bitfield(&peers);
        let mut run = Vec::new();
        pk.pick_run(SEED, &without, &[], 32 * 1024, &mut run);
        assert!(run.iter().all(|b| b.piece != 4), "{run:?}");
        pk.check_invariants();
    }

    #[test]
    fn blocks_given_back_are_picked_again_then_peers_leftovers_then_end_game() {
        let mut pk = picker();
        pk.set_sequential(true);
        let all = Bitfield::full(8);
        let mut run = Vec::new();
        pk.pick_run(SEED, &all, &[], 1, &mut run);
        assert_eq!(run.len(), 2, "one piece at least");
        // the request failed after its first block
        assert!(matches!(
            pk.on_block(SEED, 0, 0, BLOCK_SIZE),
            BlockOutcome::New { .. }
        ));
        pk.release(&run[1]);
        let mut again = Vec::new();
        pk.pick_run(SEED, &all, &[], 1 << 20, &mut again);
        assert_eq!(again, [run[1]], "the rest of its own piece first");
        // a peer starts every other piece and asks for one block of each
        let mut peer = Vec::new();
        for key in 1..8 {
            pk.pick(key, &all, &[], 1, &mut peer);
        }
        assert_eq!(peer.len(), 7);
        let mut left = Vec::new();
        pk.pick_run(SEED, &all, &[0], 1 << 20, &mut left);
        assert_eq!(left.len(), 1, "a block the peer left: {left:?}");
        assert!(!peer.contains(&left[0]));
        // every block left comes from the web seed: end game (the peer's are missing)
        left.extend([run[1]]);
        loop {
            for b in left.drain(..) {
                pk.on_block(SEED, b.piece, b.begin, b.length);
            }
            pk.pick_run(SEED, &all, &[], 1 << 20, &mut left);
            if left.is_empty() || pk.in_endgame() {
                break;
            }
        }
        assert!(pk.in_endgame());
        let mut dup = Vec::new();
        pk.pick_run(SEED, &all, &[], 1 << 20, &mut dup);
        assert!(!dup.is_empty(), "end game asks again");
        assert!(dup.iter().all(|b| peer.contains(b)), "{dup:?}");
        assert!(contiguous(&pk, &dup));
        pk.check_invariants();
    }
}
