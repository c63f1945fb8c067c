//! Piece picking: rarest first with random order among equals, piece affinity per peer,
//! and endgame mode (BEP 3 §"end game"); or, per torrent, in index order (sequential
//! download, qBittorrent's `sequentialDownload`).
//!
//! A plain data structure with no I/O: peer tasks call it under a short `std::sync::Mutex`
//! (never held across an await point). Piece states go
//! `Missing → Partial → Pending (all blocks received, being hashed) → Have`, and a piece that
//! fails its hash check goes back to `Missing`.
//!
//! Rarest first is kept cheap for large torrents: every piece we still need sits in `order`,
//! sorted into buckets by availability (how many connected peers have it). A change of
//! availability moves a piece to the neighbouring bucket by one swap, so a `have` costs O(1)
//! and picking a new piece scans from the rarest bucket up. Verified pieces leave `order`.

mod web;

use std::collections::BTreeMap;

use crate::piece::Bitfield;
use crate::piece::{BLOCK_SIZE, BlockRef, Geometry};

/// Identifies a peer connection to the picker (piece affinity, endgame bookkeeping).
pub type PeerKey = u64;

/// Piece priority of a piece nobody wants (it lies only in skipped files).
pub const PRIO_SKIP: u8 = 0;
/// Default piece priority.
pub const PRIO_NORMAL: u8 = 2;
/// Highest priority a file can have.
pub const PRIO_HIGH: u8 = 3;
/// The level above every file priority: the first and last pieces of each wanted file
/// while "first and last pieces first" is on (qBittorrent's `firstLastPiecePrio`, for
/// previews); picked before all others.
pub const PRIO_FIRST_LAST: u8 = 4;
/// Number of priority levels (0 ..= [`PRIO_FIRST_LAST`]).
const LEVELS: usize = PRIO_FIRST_LAST as usize + 1;

/// Most concurrent requests for one block in endgame mode.
const ENDGAME_MAX_DUPLICATES: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PieceState {
    Missing,
    Partial,
    Pending,
    Have,
}

#[derive(Debug, Clone, Copy, Default)]
struct Block {
    requests: u8,
    received: bool,
}

#[derive(Debug)]
struct Partial {
    blocks: Box<[Block]>,
    /// Blocks neither received nor requested.
    unrequested: u32,
    /// Blocks received.
    received: u32,
    /// The peer that started the piece, preferred for its remaining blocks.
    owner: Option<PeerKey>,
    /// Peers that delivered blocks of this piece (counted against them if it fails).
    contributors: Vec<PeerKey>,
}

/// What became of a received block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockOutcome {
    /// First copy of a block we wanted: write it. `piece_complete`: every block of the piece
    /// has now arrived (hash it). `requested_elsewhere`: another peer also has it in flight
    /// (endgame): send them a cancel.
    New {
        /// All blocks of the piece are in.
        piece_complete: bool,
        /// Another peer was also asked for this block.
        requested_elsewhere: bool,
    },
    /// We already had it (endgame duplicate, or a piece already verified): discard.
    Duplicate,
    /// Not a block of a piece in progress, or wrong geometry: discard (and count against the peer).
    Unexpected,
}

/// The piece picker for one torrent.
#[derive(Debug)]
pub struct Picker {
    geo: Geometry,
    have: Bitfield,
    state: Vec<PieceState>,
    availability: Vec<u16>,
    /// Pieces not yet verified, grouped by availability ascending.
    order: Vec<u32>,
    /// Position of each piece in `order` (`u32::MAX` once removed).
    pos: Vec<u32>,
    /// `bucket_start[a]`: first index in `order` with availability `a`.
    bucket_start: Vec<u32>,
    partial: BTreeMap<u32, Partial>,
    /// Contributors of pieces being hashed.
    pending_contributors: BTreeMap<u32, Vec<PeerKey>>,
    pending: u32,
    /// Wanted pieces in state `Missing` (neither started nor verified), by priority level.
    missing: [u32; LEVELS],
    /// Download priority per piece: 0 = not wanted (only in skipped files), 1 low, 2 normal,
    /// 3 high (the highest of the files it holds bytes of), 4 a first or last piece of a
    /// file while those go first.
    prio: Vec<u8>,
    /// New pieces are started in index order (sequential download), not rarest first.
    sequential: bool,
    /// Per priority level, where sequential picking starts its scan: no piece below is
    /// `Missing` at that level (lowered when a piece becomes missing again; back to 0 when
    /// the priorities change). Each level's start only moves forward while pieces are
    /// started, so a whole download scans each level once, plus the pieces a peer lacks.
    seq_from: [u32; LEVELS],
    /// Wanted pieces not verified yet.
    wanted_left: u32,
    /// Bytes of the pieces not yet verified (kept as a counter: the snapshot publisher
    /// and every announce ask for it).
    left: u64,
}

impl Picker {
    /// A picker for the pieces and blocks of `geo`,
    /// with the pieces in `have` already verified.
    pub fn new(geo: Geometry, have: Bitfield) -> Picker {
        let piece_count = geo.piece_count();
        let mut order: Vec<u32> = (0..piece_count).filter(|&p| !have.get(p)).collect();
        // random order among equals: shuffle once, bucket moves keep it mixed
        {
            use rand::seq::SliceRandom;
            order.shuffle(&mut rand::rng());
        }
        let mut pos = vec![u32::MAX; piece_count as usize];
        for (i, &p) in order.iter().enumerate() {
            pos[p as usize] = i as u32;
        }
        let state = (0..piece_count)
            .map(|p| {
                if have.get(p) {
                    PieceState::Have
                } else {
                    PieceState::Missing
                }
            })
            .collect();
        let n = order.len() as u32;
        let left = geo.total_length() - geo.bytes_in(&have);
        Picker {
            geo,
            have,
            state,
            availability: vec![0; piece_count as usize],
            order,
            pos,
            bucket_start: vec![0, n],
            partial: BTreeMap::new(),
            pending_contributors: BTreeMap::new(),
            pending: 0,
            missing: [0, 0, n, 0, 0],
            prio: vec![PRIO_NORMAL; piece_count as usize],
            sequential: false,
            seq_from: [0; LEVELS],
            wanted_left: n,
            left,
        }
    }

    /// Verified pieces.
    pub fn have(&self) -> &Bitfield {
        &self.have
    }

    /// Every piece verified.
    pub fn is_complete(&self) -> bool {
        self.have.is_full()
    }

    /// Every wanted piece verified (pieces only in skipped files do not count).
    pub fn is_finished(&self) -> bool {
        self.wanted_left == 0
    }

    /// Set the priority of every piece (0 = not wanted, 1 low, 2 normal, 3 high,
    /// 4 [`PRIO_FIRST_LAST`]; values above 4 count as 4). Pieces already started keep their
    /// blocks; a piece that stops being wanted is no longer picked. `prio.len()` must be
    /// the piece count (else ignored).
    pub fn set_priorities(&mut self, prio: &[u8]) {
        if prio.len() != self.geo.piece_count() as usize {
            return;
        }
        self.prio = prio.iter().map(|&x| x.min(PRIO_FIRST_LAST)).collect();
        self.seq_from = [0; LEVELS];
        self.missing = [0; LEVELS];
        self.wanted_left = 0;
        self.left = 0;
        for p in 0..self.geo.piece_count() {
            let level = self.prio[p as usize];
            if level == PRIO_SKIP {
                continue;
            }
            let st = self.state[p as usize];
            if st == PieceState::Missing {
                self.missing[level as usize] += 1;
            }
            if st != PieceState::Have {
                self.wanted_left += 1;
                self.left += u64::from(self.geo.piece_size(p));
            }
        }
    }

    /// Priority of piece `p` (0 = not wanted).
    pub fn priority(&self, p: u32) -> u8 {
        self.prio.get(p as usize).copied().unwrap_or(PRIO_SKIP)
    }

    /// Start new pieces in index order among the wanted ones (`true`, sequential download:
    /// the highest priority level first, then the lowest index a peer has), or rarest
    /// first (`false`, the default). Pieces in progress, the blocks other peers left and
    /// end game are the same either way.
    pub fn set_sequential(&mut self, on: bool) {
        self.sequential = on;
        self.seq_from = [0; LEVELS];
    }

    /// Whether new pieces are started in index order ([`Picker::set_sequential`]).
    pub fn sequential(&self) -> bool {
        self.sequential
    }

    fn missing_count(&self) -> u32 {
        self.missing.iter().sum()
    }

    /// Pieces fully received and waiting for their hash check.
    pub fn pending_count(&self) -> u32 {
        self.pending
    }

    /// Pieces with some blocks in flight or received.
    pub fn partial_count(&self) -> usize {
        self.partial.len()
    }

    /// Pieces being downloaded: some blocks requested or received, or all received and
    /// waiting for their hash check.
    pub fn partial_pieces(&self) -> impl Iterator<Item = u32> + '_ {
        self.partial
            .keys()
            .copied()
            .chain(self.pending_contributors.keys().copied())
    }

    /// The pieces and blocks it picks from.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    // ---- availability ----------------------------------------------------------------

    fn bucket_end(&self, a: usize) -> u32 {
        self.bucket_start
            .get(a + 1)
            .copied()
            .unwrap_or(self.order.len() as u32)
    }

    fn swap_order(&mut self, i: u32, j: u32) {
        if i == j {
            return;
        }
        self.order.swap(i as usize, j as usize);
        let (pi, pj) = (self.order[i as usize], self.order[j as usize]);
        self.pos[pi as usize] = i;
        self.pos[pj as usize] = j;
    }

    fn inc_availability(&mut self, p: u32) {
        let a = self.availability[p as usize];
        if a == u16::MAX {
            return;
        }
        self.availability[p as usize] = a + 1;
        let i = self.pos[p as usize];
        if i == u32::MAX {
            return; // verified: not in order
        }
        let a = a as usize;
        while self.bucket_start.len() < a + 3 {
            self.bucket_start.push(self.order.len() as u32);
        }
        let last = self.bucket_end(a) - 1;
        self.swap_order(i, last);
        self.bucket_start[a + 1] -= 1;
    }

    fn dec_availability(&mut self, p: u32) {
        let a = self.availability[p as usize];
        if a == 0 {
            return;
        }
        self.availability[p as usize] = a - 1;
        let i = self.pos[p as usize];
        if i == u32::MAX {
            return;
        }
        let first = self.bucket_start[a as usize];
        self.swap_order(i, first);
        self.bucket_start[a as usize] += 1;
    }

    /// Take a verified piece out of `order`: move it to the end of its bucket, then through
    /// every higher bucket, then pop it.
    fn remove_from_order(&mut self, p: u32) {
        let mut i = self.pos[p as usize];
        if i == u32::MAX {
            return;
        }
        let mut a = self.availability[p as usize] as usize;
        loop {
            let end = self.bucket_end(a);
            self.swap_order(i, end - 1);
            i = end - 1;
            if a + 1 >= self.bucket_start.len() {
                break;
            }
            // the piece now sits at the last slot of bucket `a`: hand it to bucket a+1
            self.bucket_start[a + 1] -= 1;
            a += 1;
        }
        debug_assert_eq!(i as usize, self.order.len() - 1);
        self.order.pop();
        self.pos[p as usize] = u32::MAX;
        for s in &mut self.bucket_start {
            if *s as usize > self.order.len() {
                *s = self.order.len() as u32;
            }
        }
    }

    /// A connected peer announced piece `p` (`have`).
    pub fn peer_has(&mut self, p: u32) {
        if p < self.geo.piece_count() {
            self.inc_availability(p);
        }
    }

    /// A connected peer's whole bitfield arrived (or it sent have-all).
    pub fn peer_bitfield(&mut self, has: &Bitfield) {
        for p in has.ones() {
            self.peer_has(p);
        }
    }

    /// A peer with bitfield `has` disconnected: drop its availability and its affinity.
    pub fn peer_gone(&mut self, peer: PeerKey, has: &Bitfield) {
        for p in has.ones() {
            if p < self.geo.piece_count() {
                self.dec_availability(p);
            }
        }
        for part in self.partial.values_mut() {
            if part.owner == Some(peer) {
                part.owner = None;
            }
        }
    }

    /// Pieces `peer` started are nobody's now (their blocks not yet requested go to whoever
    /// picks next, in the order of [`Picker::pick`] step 2); availability is unchanged.
    pub fn disown(&mut self, peer: PeerKey) {
        for part in self.partial.values_mut() {
            if part.owner == Some(peer) {
                part.owner = None;
            }
        }
    }

    /// Number of connected peers that have piece `p`.
    pub fn availability(&self, p: u32) -> u16 {
        self.availability.get(p as usize).copied().unwrap_or(0)
    }

    // ---- picking -------------------------------------------------------------------

    /// Whether `has` contains any piece we still need (missing or partially received).
    pub fn is_interesting(&self, has: &Bitfield) -> bool {
        let wanted = |p: u32| {
            self.prio[p as usize] != PRIO_SKIP && self.state[p as usize] != PieceState::Pending
        };
        if has.is_full() {
            return self.order.iter().any(|&p| wanted(p));
        }
        self.order.iter().any(|&p| has.get(p) && wanted(p))
    }

    /// Pick up to `max` blocks to request from peer `peer` whose pieces are `has`.
    /// `in_flight` lists the blocks already requested from this peer (endgame avoids them).
    /// Picked blocks are counted as requested; give them back with [`Picker::release`] if
    /// they are not delivered. Appends to `out`.
    pub fn pick(
        &mut self,
        peer: PeerKey,
        has: &Bitfield,
        in_flight: &[BlockRef],
        max: usize,
        out: &mut Vec<BlockRef>,
    ) {
        let start = out.len();
        let want = |out: &Vec<BlockRef>| out.len() - start < max;
        // 1. pieces this peer started
        let owned: Vec<u32> = self
            .partial
            .iter()
            .filter(|(_, part)| part.owner == Some(peer) && part.unrequested > 0)
            .map(|(&p, _)| p)
            .collect();
        for p in owned {
            if !want(out) {
                return;
            }
            self.take_unrequested(p, max - (out.len() - start), out);
        }
        // 2. pieces a peer that left had started (their blocks were given back), highest
        //    priority first, then in index order (sequential) or rarest first: finished before anything new, so a connection that closes with
        //    its pipeline full (a duplicate the other side dropped) does not leave holes
        //    behind a sequential download or open pieces nobody finishes
        if want(out) {
            let mut orphans: Vec<u32> = self
                .partial
                .iter()
                .filter(|(p, part)| part.owner.is_none() && part.unrequested > 0 && has.get(**p))
                .map(|(&p, _)| p)
                .collect();
            // higher priority first (e.g. the first and last pieces of files), then index
            // order (sequential) or the rarest-first order (rarest, random among equals)
            let seq = self.sequential;
            orphans.sort_by_key(|&p| {
                let rank = if seq { p } else { self.pos[p as usize] };
                (std::cmp::Reverse(self.prio[p as usize]), rank)
            });
            for p in orphans {
                if !want(out) {
                    return;
                }
                if let Some(part) = self.partial.get_mut(&p) {
                    part.owner = Some(peer);
                }
                self.take_unrequested(p, max - (out.len() - start), out);
            }
        }
        // 3. new pieces, rarest first (or the next in index order)
        while want(out) {
            let next = if self.sequential {
                self.first_missing(has)
            } else {
                self.rarest_missing(has, 1)
            };
            let Some(p) = next else {
                break;
            };
            self.start_piece(p, Some(peer));
            self.take_unrequested(p, max - (out.len() - start), out);
        }
        // 4. other peers' pieces with blocks nobody asked for yet
        if want(out) {
            let shared: Vec<u32> = self
                .partial
                .iter()
                .filter(|(p, part)| part.unrequested > 0 && has.get(**p))
                .map(|(&p, _)| p)
                .collect();
            for p in shared {
                if !want(out) {
                    return;
                }
                self.take_unrequested(p, max - (out.len() - start), out);
            }
        }
        // 5. endgame: every needed block is requested; ask again for ones still missing
        if want(out) && self.in_endgame() {
            let pieces: Vec<u32> = self
                .partial
                .keys()
                .copied()
                .filter(|p| has.get(*p) && self.state[*p as usize] == PieceState::Partial)
                .collect();
            'outer: for p in pieces {
                let nblocks = self.geo.block_count(p);
                for b in 0..nblocks {
                    if !want(out) {
                        break 'outer;
                    }
                    let Some(r) = self.geo.block(p, b) else {
                        continue;
                    };
                    let Some(part) = self.partial.get_mut(&p) else {
                        continue;
                    };
                    let blk = &mut part.blocks[b as usize];
                    if blk.received
                        || blk.requests >= ENDGAME_MAX_DUPLICATES
                        || in_flight.contains(&r)
                        || out[start..].contains(&r)
                    {
                        continue;
                    }
                    blk.requests += 1;
                    out.push(r);
                }
            }
        }
    }

    /// Endgame: no piece is missing outright and no partial piece has an unrequested block.
    pub fn in_endgame(&self) -> bool {
        self.missing_count() == 0
            && self.partial.values().all(|part| part.unrequested == 0)
            && !self.partial.is_empty()
    }

    /// The rarest piece `has` offers that nobody started, chosen at random within its
    /// availability bucket, from bucket `lowest` up (a peer passes 1: pieces no connected
    /// peer has are skipped, it cannot have them; a web seed passes 0: those first).
    /// Among wanted pieces the highest priority level with missing pieces goes first; a
    /// lower level is taken only when the peer has none of the higher one.
    fn rarest_missing(&self, has: &Bitfield, lowest: usize) -> Option<u32> {
        let top = (1..=PRIO_FIRST_LAST)
            .rev()
            .find(|&l| self.missing[l as usize] > 0)?;
        let ok = |p: u32| {
            self.state[p as usize] == PieceState::Missing
                && self.prio[p as usize] != PRIO_SKIP
                && has.get(p)
        };
        let mut fallback: Option<u32> = None;
        for a in lowest..self.bucket_start.len() {
            let (s, e) = (self.bucket_start[a] as usize, self.bucket_end(a) as usize);
            if s >= e {
                continue;
            }
            let r = rand::random_range(s..e);
            let bucket = &self.order[s..e];
            let (head, tail) = bucket.split_at(r - s);
            for p in tail.iter().chain(head).copied().filter(|&p| ok(p)) {
                let level = self.prio[p as usize];
                if level == top {
                    return Some(p);
                }
                if fallback.is_none_or(|f| self.prio[f as usize] < level) {
                    fallback = Some(p);
                }
            }
        }
        fallback
    }

    /// The lowest-index piece `has` offers that nobody started, among those of the highest
    /// priority level with missing pieces; a lower level only when the peer has none of the
    /// higher one (then its lowest index of the best level it has). Moves each level's scan
    /// start past the pieces no longer missing at that level.
    fn first_missing(&mut self, has: &Bitfield) -> Option<u32> {
        let n = self.geo.piece_count();
        for level in (1..=PRIO_FIRST_LAST).rev() {
            let l = level as usize;
            if self.missing[l] == 0 {
                continue;
            }
            let missing_here = |pk: &Picker, p: u32| {
                pk.state[p as usize] == PieceState::Missing && pk.prio[p as usize] == level
            };
            while self.seq_from[l] < n && !missing_here(self, self.seq_from[l]) {
                self.seq_from[l] += 1;
            }
            if let Some(p) = (self.seq_from[l]..n).find(|&p| missing_here(self, p) && has.get(p)) {
                return Some(p);
            }
        }
        None
    }

    fn start_piece(&mut self, p: u32, owner: Option<PeerKey>) {
        let n = self.geo.block_count(p);
        self.state[p as usize] = PieceState::Partial;
        let level = self.prio[p as usize] as usize;
        self.missing[level] = self.missing[level].saturating_sub(1);
        self.partial.insert(
            p,
            Partial {
                blocks: vec![Block::default(); n as usize].into_boxed_slice(),
                unrequested: n,
                received: 0,
                owner,
                contributors: Vec::new(),
            },
        );
    }

    fn take_unrequested(&mut self, p: u32, max: usize, out: &mut Vec<BlockRef>) {
        let nblocks = self.geo.block_count(p);
        let mut refs = Vec::new();
        if let Some(part) = self.partial.get_mut(&p) {
            for (b, blk) in part.blocks.iter_mut().enumerate() {
                if refs.len() >= max || part.unrequested == 0 {
                    break;
                }
                if !blk.received && blk.requests == 0 {
                    blk.requests = 1;
                    part.unrequested -= 1;
                    refs.push(b as u32);
                }
            }
        }
        debug_assert!(refs.iter().all(|&b| b < nblocks));
        out.extend(refs.into_iter().filter_map(|b| self.geo.block(p, b)));
    }

    /// A request for `block` will not be answered (choked, rejected, timed out, peer gone):
    /// make it available to other peers.
    pub fn release(&mut self, block: &BlockRef) {
        let b = block.begin / BLOCK_SIZE;
        if let Some(part) = self.partial.get_mut(&block.piece)
            && let Some(blk) = part.blocks.get_mut(b as usize)
            && !blk.received
            && blk.requests > 0
        {
            blk.requests -= 1;
            if blk.requests == 0 {
                part.unrequested += 1;
            }
        }
    }

    /// A block arrived from `peer`. Geometry is checked here: a block we never described is
    /// `Unexpected`.
    pub fn on_block(&mut self, peer: PeerKey, piece: u32, begin: u32, len: u32) -> BlockOutcome {
        let block = BlockRef {
            piece,
            begin,
            length: len,
        };
        if !self.geo.is_block(&block) {
            return BlockOutcome::Unexpected;
        }
        match self.state[piece as usize] {
            PieceState::Have | PieceState::Pending => return BlockOutcome::Duplicate,
            PieceState::Missing => return BlockOutcome::Unexpected,
            PieceState::Partial => {}
        }
        let Some(part) = self.partial.get_mut(&piece) else {
            return BlockOutcome::Unexpected;
        };
        let blk = &mut part.blocks[(begin / BLOCK_SIZE) as usize];
        if blk.received {
            return BlockOutcome::Duplicate;
        }
        if blk.requests == 0 {
            // unsolicited but useful (e.g. arrived after we released it): take it
            part.unrequested -= 1;
        }
        let requested_elsewhere = blk.requests > 1;
        blk.received = true;
        blk.requests = 0;
        part.received += 1;
        if !part.contributors.contains(&peer) {
            part.contributors.push(peer);
        }
        let piece_complete = part.received as usize == part.blocks.len();
        if piece_complete {
            if let Some(part) = self.partial.remove(&piece) {
                self.pending_contributors.insert(piece, part.contributors);
            }
            self.state[piece as usize] = PieceState::Pending;
            self.pending += 1;
        }
        BlockOutcome::New {
            piece_complete,
            requested_elsewhere,
        }
    }

    /// Piece `p` passed its hash check. Returns false if it was not pending.
    pub fn piece_verified(&mut self, p: u32) -> bool {
        if self.state.get(p as usize) != Some(&PieceState::Pending) {
            return false;
        }
        self.pending -= 1;
        self.pending_contributors.remove(&p);
        self.state[p as usize] = PieceState::Have;
        self.have.set(p);
        self.remove_from_order(p);
        if self.prio[p as usize] != PRIO_SKIP {
            self.wanted_left -= 1;
            self.left -= u64::from(self.geo.piece_size(p));
        }
        true
    }

    /// A verified piece `p` turned out missing on disk (a file shrank under a seed): fetch it
    /// again. Returns false if it was not verified.
    pub fn piece_lost(&mut self, p: u32) -> bool {
        if self.state.get(p as usize) != Some(&PieceState::Have) {
            return false;
        }
        self.state[p as usize] = PieceState::Missing;
        self.have.unset(p);
        let level = self.prio[p as usize];
        self.seq_from[level as usize] = self.seq_from[level as usize].min(p);
        if level != PRIO_SKIP {
            self.missing[level as usize] += 1;
            self.wanted_left += 1;
            self.left += u64::from(self.geo.piece_size(p));
        }
        self.insert_into_order(p);
        true
    }

    /// Put `p` back into `order`, in its availability bucket: append it (top bucket), then
    /// walk it down one bucket at a time by swapping it with each bucket's first piece.
    fn insert_into_order(&mut self, p: u32) {
        let a = self.availability[p as usize] as usize;
        while self.bucket_start.len() < a + 2 {
            self.bucket_start.push(self.order.len() as u32);
        }
        self.order.push(p);
        let mut i = (self.order.len() - 1) as u32;
        self.pos[p as usize] = i;
        let mut b = self.bucket_start.len() - 1;
        while b > a {
            let first = self.bucket_start[b];
            self.swap_order(i, first);
            i = first;
            self.bucket_start[b] += 1;
            b -= 1;
        }
    }

    /// Piece `p` failed its hash check: fetch it again from scratch. Returns the peers that
    /// sent its blocks.
    pub fn piece_failed(&mut self, p: u32) -> Vec<PeerKey> {
        if self.state.get(p as usize) == Some(&PieceState::Pending) {
            self.pending -= 1;
            self.state[p as usize] = PieceState::Missing;
            let level = self.prio[p as usize] as usize;
            self.seq_from[level] = self.seq_from[level].min(p);
            if level != PRIO_SKIP as usize {
                self.missing[level] += 1;
            }
        }
        self.pending_contributors.remove(&p).unwrap_or_default()
    }

    /// Bytes of wanted pieces still needed (not verified), counting pending pieces as
    /// needed. O(1).
    pub fn bytes_left(&self) -> u64 {
        self.left
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        for (i, &p) in self.order.iter().enumerate() {
            assert_eq!(self.pos[p as usize], i as u32);
            let a = self.availability[p as usize] as usize;
            assert!(
                self.bucket_start[a] as usize <= i,
                "piece {p} below its bucket"
            );
            assert!(
                (self.bucket_end(a) as usize) > i,
                "piece {p} above its bucket"
            );
            assert_ne!(self.state[p as usize], PieceState::Have);
        }
        for w in self.bucket_start.windows(2) {
            assert!(w[0] <= w[1]);
        }
        let left: u64 = self
            .order
            .iter()
            .filter(|&&p| self.prio[p as usize] != PRIO_SKIP)
            .map(|&p| u64::from(self.geo.piece_size(p)))
            .sum();
        assert_eq!(self.left, left, "left counter");
        let missing = (0..self.geo.piece_count())
            .filter(|&p| {
                self.state[p as usize] == PieceState::Missing && self.prio[p as usize] != PRIO_SKIP
            })
            .count() as u32;
        assert_eq!(self.missing_count(), missing, "missing counter");
        for (level, &from) in self.seq_from.iter().enumerate() {
            for p in 0..from.min(self.geo.piece_count()) {
                assert!(
                    self.state[p as usize] != PieceState::Missing
                        || usize::from(self.prio[p as usize]) != level,
                    "missing piece {p} of level {level} below its sequential scan's start {from}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
