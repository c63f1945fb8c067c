//! Hashing a new torrent's pieces on worker threads: SHA-1 per piece for the v1 side, the
//! SHA-256 Merkle hash of each piece's file bytes for the v2 side (BEP 52), or both for a
//! hybrid, every byte read once.
//!
//! Workers take pieces in payload order from a shared counter (so the files are read front
//! to back), read each through a fixed buffer with positioned reads, and feed every hasher
//! the torrent needs from the same bytes. Padding (the v2 layout: each file starts a piece)
//! is zeros for the SHA-1 and left out of the Merkle tree. Memory: one read buffer per
//! worker, and 20 + 32 bytes per piece for the results.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use sha1::{Digest, Sha1};

use super::CreateError;
use crate::piece::merkle::{self, Hash32, LeafHasher};

/// One hashed piece: its index, its SHA-1 (v1) and the root of its 16 KiB leaves (v2).
type HashedPiece = (u32, [u8; 20], Hash32);

/// Bytes read at once: a fixed buffer, never a whole piece (pieces go up to 512 MiB).
pub(super) const HASH_READ: usize = 1 << 20;

/// One stretch of the payload: a file's bytes, or padding (zeros).
#[derive(Debug, Clone)]
pub(super) struct Segment {
    /// Index of the source file, `None` for padding.
    pub file: Option<usize>,
    /// Payload offset, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub length: u64,
}

/// A source file to read: where it is and how long it was when listed.
#[derive(Debug, Clone)]
pub(super) struct Source {
    /// Its path on disk.
    pub disk: PathBuf,
    /// Its length in bytes.
    pub length: u64,
}

/// What to hash, and how.
pub(super) struct Job<'a> {
    pub sources: &'a [Source],
    /// The payload in order (padding between files for the v2 and hybrid layouts).
    pub segments: &'a [Segment],
    pub piece_length: u32,
    /// Hash the v1 side (SHA-1 per piece).
    pub v1: bool,
    /// Hash the v2 side (each file laid out from a piece boundary).
    pub v2: bool,
    pub threads: usize,
    /// Payload bytes hashed so far (read by a progress line).
    pub progress: &'a AtomicU64,
    /// Stops the work early (then the result is an error).
    pub cancel: &'a AtomicBool,
}

/// A source file's v2 hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileTree {
    /// `pieces root`.
    pub root: Hash32,
    /// Its piece layer, for a file longer than one piece.
    pub layer: Option<Vec<Hash32>>,
}

/// What hashing found.
#[derive(Debug, Default)]
pub(super) struct Hashed {
    /// SHA-1 per piece (empty unless the v1 side was asked for).
    pub v1: Vec<[u8; 20]>,
    /// Per source file, its v2 hashes (`None` for an empty file or without the v2 side).
    pub v2: Vec<Option<FileTree>>,
}

impl Job<'_> {
    fn total(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.offset + s.length)
    }

    fn piece_count(&self) -> u32 {
        u32::try_from(self.total().div_ceil(u64::from(self.piece_length))).unwrap_or(u32::MAX)
    }

    /// Hash every piece.
    ///
    /// # Errors
    /// A file that cannot be read, that changed size, or a cancelled job.
    pub(super) fn run(&self) -> Result<Hashed, CreateError> {
        let n = self.piece_count();
        let next = AtomicU32::new(0);
        let workers = self.threads.clamp(1, 64).min(n.max(1) as usize);
        let results: Vec<Result<Vec<HashedPiece>, CreateError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let next = &next;
                    s.spawn(move || self.worker(next, n))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CreateError::Io {
                            path: PathBuf::new(),
                            source: std::io::Error::other("a hashing thread failed"),
                        })
                    })
                })
                .collect()
        });
        let mut v1 = vec![[0u8; 20]; if self.v1 { n as usize } else { 0 }];
        let mut v2_pieces = vec![[0u8; 32]; if self.v2 { n as usize } else { 0 }];
        for r in results {
            for (p, sha1, v2) in r? {
                if self.v1 {
                    v1[p as usize] = sha1;
                }
                if self.v2 {
                    v2_pieces[p as usize] = v2;
                }
            }
        }
        for s in self.sources {
            let now = std::fs::metadata(&s.disk).map_err(|source| CreateError::Io {
                path: s.disk.clone(),
                source,
            })?;
            if now.len() != s.length {
                return Err(CreateError::Changed {
                    path: s.disk.clone(),
                    expected: s.length,
                });
            }
        }
        let v2 = if self.v2 {
            self.trees(&v2_pieces)
        } else {
            vec![None; self.sources.len()]
        };
        Ok(Hashed { v1, v2 })
    }

    /// Each file's root (and layer) from its pieces' v2 hashes.
    fn trees(&self, pieces: &[Hash32]) -> Vec<Option<FileTree>> {
        let pl = u64::from(self.piece_length);
        let piece_level = (self.piece_length / crate::piece::BLOCK_SIZE).trailing_zeros();
        let mut out = vec![None; self.sources.len()];
        for seg in self.segments {
            let Some(f) = seg.file.filter(|_| seg.length > 0) else {
                continue;
            };
            let first = (seg.offset / pl) as usize;
            let count = seg.length.div_ceil(pl) as usize;
            let layer = &pieces[first..first + count];
            out[f] = Some(if seg.length <= pl {
                FileTree {
                    root: layer[0],
                    layer: None,
                }
            } else {
                let width = 1u64 << (merkle::levels(seg.length) - piece_level);
                FileTree {
                    root: merkle::root_of(layer, piece_level, width),
                    layer: Some(layer.to_vec()),
                }
            });
        }
        out
    }

    /// One worker: pieces from the shared counter until none is left.
    fn worker(&self, next: &AtomicU32, n: u32) -> Result<Vec<HashedPiece>, CreateError> {
        let mut buf = vec![0u8; HASH_READ.min(self.piece_length as usize)];
        let mut open: Option<(usize, File)> = None;
        let mut leaves = LeafHasher::new();
        let mut out = Vec::new();
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(CreateError::Cancelled);
            }
            let p = next.fetch_add(1, Ordering::Relaxed);
            if p >= n {
                return Ok(out);
            }
            let (sha1, v2) = self.piece(p, &mut buf, &mut open, &mut leaves)?;
            out.push((p, sha1, v2));
        }
    }

    /// Hash piece `p`: SHA-1 over all of it, the v2 subtree over its file's bytes.
    fn piece(
        &self,
        p: u32,
        buf: &mut [u8],
        open: &mut Option<(usize, File)>,
        leaves: &mut LeafHasher,
    ) -> Result<([u8; 20], Hash32), CreateError> {
        let pl = u64::from(self.piece_length);
        let start = u64::from(p) * pl;
        let end = (start + pl).min(self.total());
        let mut sha1 = self.v1.then(Sha1::new);
        // the v2 side: the file this piece belongs to (the first segment with data in it)
        let mut v2_width = 0u64;
        let first = self
            .segments
            .partition_point(|s| s.offset + s.length <= start);
        for seg in &self.segments[first..] {
            if seg.offset >= end {
                break;
            }
            let from = start.max(seg.offset);
            let to = end.min(seg.offset + seg.length);
            if from >= to {
                continue;
            }
            let v2_here = self.v2 && seg.file.is_some() && v2_width == 0 && from == start;
            if v2_here {
                v2_width = if seg.length <= pl {
                    merkle::leaf_count(seg.length)
                } else {
                    pl / u64::from(crate::piece::BLOCK_SIZE)
                };
            }
            let mut at = from;
            while at < to {
                let k = ((to - at) as usize).min(buf.len());
                let chunk = &mut buf[..k];
                match seg.file {
                    Some(f) => self.read(f, at - seg.offset, chunk, open)?,
                    None => chunk.fill(0),
                }
                if let Some(h) = &mut sha1 {
                    h.update(&*chunk);
                }
                if v2_here {
                    leaves.update(chunk);
                }
                self.progress.fetch_add(k as u64, Ordering::Relaxed);
                at += k as u64;
            }
        }
        let v2 = if v2_width > 0 {
            leaves.finish(v2_width)
        } else {
            [0; 32]
        };
        Ok((sha1.map_or([0; 20], |h| h.finalize().into()), v2))
    }

    /// Fill `buf` from source file `f` at `offset`.
    fn read(
        &self,
        f: usize,
        offset: u64,
        buf: &mut [u8],
        open: &mut Option<(usize, File)>,
    ) -> Result<(), CreateError> {
        let src = &self.sources[f];
        if open.as_ref().is_none_or(|(i, _)| *i != f) {
            let file = File::open(&src.disk).map_err(|source| CreateError::Io {
                path: src.disk.clone(),
                source,
            })?;
            *open = Some((f, file));
        }
        let Some((_, file)) = open.as_ref() else {
            return Ok(());
        };
        file.read_exact_at(buf, offset).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => CreateError::Changed {
                path: src.disk.clone(),
                expected: src.length,
            },
            _ => CreateError::Io {
                path: src.disk.clone(),
                source: e,
            },
        })
    }
}

/// The payload of `sources` in order: end to end for v1 (`aligned` false), or each file
/// from a piece boundary with padding after every file that does not end on one, but the
/// last with data (the v2 and hybrid layout).
pub(super) fn layout(sources: &[Source], piece_length: u32, aligned: bool) -> Vec<Segment> {
    let pl = u64::from(piece_length);
    let last = sources.iter().rposition(|s| s.length > 0);
    let mut out = Vec::with_capacity(sources.len() * 2);
    let mut offset = 0u64;
    for (i, s) in sources.iter().enumerate() {
        out.push(Segment {
            file: Some(i),
            offset,
            length: s.length,
        });
        offset += s.length;
        if aligned && !offset.is_multiple_of(pl) && last.is_some_and(|l| i < l) {
            let length = pl - offset % pl;
            out.push(Segment {
                file: None,
                offset,
                length,
            });
            offset += length;
        }
    }
    out
}
