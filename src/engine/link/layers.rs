//! Fetching the piece layers a v2 torrent's info dictionary does not carry (BEP 52): a
//! magnet link gives the info dictionary (BEP 9), but `piece layers` sit beside it in a
//! .torrent, so they are asked of peers with `hash request` messages before the download
//! starts. Each answer is checked against the file's `pieces root` (the info dictionary,
//! already verified) before it is kept: a peer cannot make us accept a wrong layer.
//!
//! A file's layer is asked for in chunks of at most [`CHUNK`] hashes (as libtorrent asks),
//! each with the uncle hashes up to the root, so every chunk is verified on its own. A chunk
//! goes to one peer at a time, at most [`PER_PEER`] chunks in flight per peer; one not
//! answered in [`REQUEST_TIMEOUT`] or rejected is asked of another peer (a peer that
//! rejected it is not asked again). Answers that were not asked for are counted: past
//! [`MAX_UNSOLICITED`] the connection is closed (a flood of `hashes` or `hash reject`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::peer::wire::HashRequest;
use crate::piece::V2Hashes;
use crate::piece::merkle::{self, Hash32};

/// Hashes asked for in one request.
pub const CHUNK: u32 = 512;
/// Hash requests in flight to one peer.
pub const PER_PEER: usize = 4;
/// A hash request not answered in this long is asked of another peer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// `hashes` / `hash reject` messages a peer may send that answer nothing we asked, before
/// its connection is closed.
pub const MAX_UNSOLICITED: u32 = 64;

/// One file whose layer is fetched.
#[derive(Debug)]
struct File {
    root: Hash32,
    /// Pieces of the file (hashes in its layer).
    pieces: u32,
    /// Levels of its tree above the leaves.
    levels: u32,
    /// Per chunk of [`CHUNK`] pieces, the verified hashes once in.
    chunks: Vec<Option<Vec<Hash32>>>,
}

/// Why a `hashes` answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerError {
    /// The hashes do not lead to the file's root.
    #[error("hashes for {what} do not verify against the file's pieces root (BEP 52)")]
    Wrong {
        /// The chunk, for the log.
        what: String,
    },
    /// Too many answers nobody asked for.
    #[error("{0} hashes / hash reject messages answering nothing we asked (BEP 52): a flood")]
    Flood(u32),
}

/// The piece layers of one torrent being fetched.
#[derive(Debug)]
pub struct LayerFetch {
    piece_level: u32,
    files: Vec<File>,
    /// (file, chunk) → (peer, when asked)
    requested: HashMap<(usize, u32), (u64, Instant)>,
    /// (peer, file, chunk) a peer refused.
    rejected: HashSet<(u64, usize, u32)>,
    /// Unsolicited answers per peer.
    unsolicited: HashMap<u64, u32>,
}

impl LayerFetch {
    /// A fetch of the layers `v2` lacks; `None` when it has them all.
    pub fn new(v2: &V2Hashes) -> Option<LayerFetch> {
        let files: Vec<File> = v2
            .files
            .iter()
            .filter(|f| f.needs_layer(v2.piece_length) && f.layer.is_none())
            .map(|f| {
                let pieces = f.piece_count(v2.piece_length);
                File {
                    root: f.root,
                    pieces,
                    levels: f.levels(),
                    chunks: vec![None; pieces.div_ceil(CHUNK) as usize],
                }
            })
            .collect();
        (!files.is_empty()).then(|| LayerFetch {
            piece_level: v2.piece_level(),
            files,
            requested: HashMap::new(),
            rejected: HashSet::new(),
            unsolicited: HashMap::new(),
        })
    }

    /// Every layer is in.
    pub fn complete(&self) -> bool {
        self.files
            .iter()
            .all(|f| f.chunks.iter().all(Option::is_some))
    }

    /// Hashes received so far out of all that are wanted (for progress).
    pub fn progress(&self) -> (u64, u64) {
        let mut have = 0u64;
        let mut all = 0u64;
        for f in &self.files {
            all += u64::from(f.pieces);
            have += f
                .chunks
                .iter()
                .flatten()
                .map(|c| c.len() as u64)
                .sum::<u64>();
        }
        (have, all)
    }

    /// The request for chunk `c` of file `f`.
    fn request(&self, f: usize, c: u32) -> HashRequest {
        let file = &self.files[f];
        let index = c * CHUNK;
        let left = file.pieces - index;
        let count = left.min(CHUNK).next_power_of_two().max(2);
        HashRequest {
            pieces_root: file.root,
            base_layer: self.piece_level,
            index,
            length: count,
            // every level up to the root's children: the chunk proves itself
            proof_layers: file.levels - self.piece_level - 1,
        }
    }

    /// What peer `key` (with `in_flight` hash requests out) should be asked now; marks them
    /// asked. Requests that timed out are handed out again.
    pub fn next_requests(&mut self, key: u64, in_flight: usize, now: Instant) -> Vec<HashRequest> {
        self.requested
            .retain(|_, (_, at)| now.duration_since(*at) < REQUEST_TIMEOUT);
        let mut out = Vec::new();
        for f in 0..self.files.len() {
            for c in 0..self.files[f].chunks.len() as u32 {
                if in_flight + out.len() >= PER_PEER {
                    return out;
                }
                if self.files[f].chunks[c as usize].is_some()
                    || self.requested.contains_key(&(f, c))
                    || self.rejected.contains(&(key, f, c))
                {
                    continue;
                }
                self.requested.insert((f, c), (key, now));
                out.push(self.request(f, c));
            }
        }
        out
    }

    /// Which (file, chunk) `req` is, if it is one of ours exactly.
    fn find(&self, req: &HashRequest) -> Option<(usize, u32)> {
        let f = self.files.iter().position(|f| f.root == req.pieces_root)?;
        if !req.index.is_multiple_of(CHUNK) || req.index >= self.files[f].pieces {
            return None;
        }
        let c = req.index / CHUNK;
        (self.request(f, c) == *req).then_some((f, c))
    }

    fn unsolicited(&mut self, key: u64) -> Result<(), LayerError> {
        let n = self.unsolicited.entry(key).or_insert(0);
        *n += 1;
        if *n > MAX_UNSOLICITED {
            return Err(LayerError::Flood(*n));
        }
        Ok(())
    }

    /// Peer `key` answered `req` with `hashes` (32 bytes each: the base hashes, then the
    /// uncles). Returns whether the answer was one we asked of it (then its request slot is
    /// free).
    ///
    /// # Errors
    /// The hashes do not verify (the peer lies: close it), or a flood of answers nobody
    /// asked for.
    pub fn on_hashes(
        &mut self,
        key: u64,
        req: &HashRequest,
        hashes: &[u8],
    ) -> Result<bool, LayerError> {
        let Some((f, c)) = self.find(req) else {
            self.unsolicited(key)?;
            return Ok(false);
        };
        let asked = self.requested.get(&(f, c)).is_some_and(|(k, _)| *k == key);
        if asked {
            self.requested.remove(&(f, c));
        }
        if self.files[f].chunks[c as usize].is_some() {
            return Ok(asked); // a late duplicate
        }
        let all: Vec<Hash32> = hashes
            .chunks_exact(32)
            .map(|h| h.try_into().unwrap_or([0; 32]))
            .collect();
        let count = req.length as usize;
        let file = &self.files[f];
        let wrong = || LayerError::Wrong {
            what: format!("pieces {}..{}", req.index, req.index + req.length),
        };
        if all.len() < count {
            return Err(wrong());
        }
        let (base, uncles) = all.split_at(count);
        let kept = merkle::verify_hashes(
            base,
            uncles,
            u64::from(req.index),
            self.piece_level,
            u64::from(file.pieces),
            file.levels,
            &file.root,
        )
        .ok_or_else(wrong)?;
        self.files[f].chunks[c as usize] = Some(kept);
        Ok(asked)
    }

    /// Peer `key` refused `req`: it is not asked of that peer again. Returns whether it was
    /// one we asked of it.
    ///
    /// # Errors
    /// A flood of refusals of requests never made.
    pub fn on_reject(&mut self, key: u64, req: &HashRequest) -> Result<bool, LayerError> {
        let Some((f, c)) = self.find(req) else {
            self.unsolicited(key)?;
            return Ok(false);
        };
        if self.requested.get(&(f, c)).is_some_and(|(k, _)| *k == key) {
            self.requested.remove(&(f, c));
            self.rejected.insert((key, f, c));
            return Ok(true);
        }
        self.unsolicited(key)?;
        Ok(false)
    }

    /// Connection `key` ended: what it was asked goes to others.
    pub fn peer_gone(&mut self, key: u64) {
        self.requested.retain(|_, (k, _)| *k != key);
        self.rejected.retain(|(k, _, _)| *k != key);
        self.unsolicited.remove(&key);
    }

    /// The fetched layers, by pieces root, 32 bytes per piece (as `piece layers` holds
    /// them); only whole layers.
    pub fn layers(&self) -> BTreeMap<Hash32, Vec<u8>> {
        self.files
            .iter()
            .filter(|f| f.chunks.iter().all(Option::is_some))
            .map(|f| {
                let bytes: Vec<u8> = f
                    .chunks
                    .iter()
                    .flatten()
                    .flatten()
                    .flatten()
                    .copied()
                    .collect();
                (f.root, bytes)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::piece::V2File;
    use crate::piece::merkle::LayerTree;

    /// A file of `pieces` pieces of 2 leaves (32 KiB), its layer and tree.
    fn file(pieces: u32) -> (V2Hashes, Vec<Hash32>, LayerTree) {
        let layer: Vec<Hash32> = (0..pieces)
            .map(|i| merkle::leaf(&i.to_be_bytes()))
            .collect();
        let length = u64::from(pieces) * 32_768 - 100;
        let levels = merkle::levels(length);
        let tree = LayerTree::new(&layer, 1, levels);
        let v2 = V2Hashes {
            piece_length: 32_768,
            files: vec![V2File {
                file: 0,
                first_piece: 0,
                length,
                root: tree.root().unwrap(),
                layer: None,
            }],
        };
        (v2, layer, tree)
    }

    /// What an honest peer sends for `r` (as the serving side does).
    fn answer(tree: &LayerTree, r: &HashRequest) -> Vec<u8> {
        let mut out = Vec::new();
        for pos in r.index..r.index + r.length {
            out.extend(tree.node(r.base_layer, u64::from(pos)).unwrap());
        }
        let sub = i64::from(r.length.next_power_of_two().trailing_zeros()) - 1;
        for k in 0..r.proof_layers {
            if i64::from(k) >= sub {
                let pos = (u64::from(r.index) >> (k + 1)) ^ 1;
                out.extend(tree.node(r.base_layer + k + 1, pos).unwrap());
            }
        }
        out
    }

    #[test]
    fn chunks_are_asked_verified_and_assembled() {
        let (v2, layer, tree) = file(1_100);
        let mut f = LayerFetch::new(&v2).unwrap();
        let now = Instant::now();
        let reqs = f.next_requests(1, 0, now);
        assert_eq!(reqs.len(), 3);
        assert_eq!(
            (reqs[2].index, reqs[2].length, reqs[2].base_layer),
            (1024, 128, 1)
        );
        assert!(f.next_requests(2, 0, now).is_empty(), "all asked of peer 1");
        // a lie is an error; the chunk is asked again later
        let mut bad = answer(&tree, &reqs[0]);
        bad[40] ^= 1;
        assert!(matches!(
            f.on_hashes(1, &reqs[0], &bad),
            Err(LayerError::Wrong { .. })
        ));
        for r in &reqs {
            let _ = f.on_hashes(1, r, &answer(&tree, r));
        }
        assert!(f.complete());
        let got = f.layers();
        let want: Vec<u8> = layer.iter().flatten().copied().collect();
        assert_eq!(got.get(&v2.files[0].root), Some(&want));
    }

    #[test]
    fn rejects_move_on_and_floods_are_errors() {
        let (v2, _, tree) = file(3);
        let mut f = LayerFetch::new(&v2).unwrap();
        let now = Instant::now();
        let r = f.next_requests(1, 0, now).remove(0);
        assert_eq!((r.index, r.length, r.proof_layers), (0, 4, 1));
        assert_eq!(f.on_reject(1, &r), Ok(true));
        assert!(
            f.next_requests(1, 0, now).is_empty(),
            "not asked again of peer 1"
        );
        let r2 = f.next_requests(2, 0, now).remove(0);
        assert_eq!(r2, r);
        assert_eq!(f.on_hashes(2, &r2, &answer(&tree, &r2)), Ok(true));
        assert!(f.complete());
        // answers to nothing we asked: counted, then an error
        for _ in 0..MAX_UNSOLICITED {
            assert_eq!(f.on_reject(3, &r), Ok(false));
        }
        assert!(matches!(f.on_reject(3, &r), Err(LayerError::Flood(_))));
    }
}
