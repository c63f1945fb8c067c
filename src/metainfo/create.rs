//! Writing new .torrent files from a file or folder on disk: v1 (BEP 3), v2 (BEP 52) or
//! hybrid (both, as qBittorrent and libtorrent make them by default), with tiers of
//! trackers (BEP 12), web seeds (BEP 19), the private flag (BEP 27), a comment and a source
//! tag. `ratorrent create` and the TUI's create dialog use it; so do tests and magnet links
//! (a fetched info dictionary becomes a .torrent with [`torrent_from_info`]).
//!
//! The pieces are hashed on worker threads, every byte read once ([`hash`]); the result is
//! parsed back before it is handed out, so a torrent that this client would not load is
//! never written.
//!
//! ```no_run
//! use ratorrent::metainfo::{MetaVersion, TorrentBuilder};
//! let bytes = TorrentBuilder::new("/srv/share/album")
//!     .version(MetaVersion::Hybrid)
//!     .announce("http://tracker.example.org/announce")
//!     .private(true)
//!     .build()?;
//! std::fs::write("album.torrent", bytes)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::path::{UnsafeComponent, check_component, sanitize_component};
use super::{MetaVersion, Metainfo};

mod encode;
mod hash;

/// Smallest piece length [`default_piece_length`] picks and the builder accepts: 16 KiB.
pub const MIN_PIECE_LENGTH: u32 = 16 * 1024;

/// Largest piece length [`default_piece_length`] picks: 16 MiB.
pub const MAX_DEFAULT_PIECE_LENGTH: u32 = 16 * 1024 * 1024;

/// Number of pieces [`default_piece_length`] aims for.
pub const TARGET_PIECE_COUNT: u64 = 1500;

/// The piece length, in bytes, for a payload of `total_length` bytes: the power of two
/// that gives at most about [`TARGET_PIECE_COUNT`] pieces, clamped to
/// [`MIN_PIECE_LENGTH`] ..= [`MAX_DEFAULT_PIECE_LENGTH`].
pub fn default_piece_length(total_length: u64) -> u32 {
    let ideal = total_length
        .div_ceil(TARGET_PIECE_COUNT)
        .next_power_of_two();
    let clamped = ideal.clamp(
        u64::from(MIN_PIECE_LENGTH),
        u64::from(MAX_DEFAULT_PIECE_LENGTH),
    );
    // clamped <= 16 MiB fits in u32
    u32::try_from(clamped).unwrap_or(MAX_DEFAULT_PIECE_LENGTH)
}

/// Why a torrent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// Reading the source failed.
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The source is neither a regular file nor a folder.
    #[error("{path:?} is neither a regular file nor a folder")]
    NotFileOrFolder {
        /// The source path.
        path: PathBuf,
    },
    /// A file or folder name is not valid UTF-8 (torrent names are UTF-8).
    #[error("file name {path:?} is not valid UTF-8")]
    NonUtf8Name {
        /// The offending path.
        path: PathBuf,
    },
    /// A name that a downloader would refuse or store differently (control characters,
    /// `...`, `\`, ...): the torrent could not be seeded from these files.
    #[error("file name {path:?} cannot be used in a torrent: it {problem}")]
    UnsafeName {
        /// The offending path.
        path: PathBuf,
        /// Which rule it breaks.
        problem: NameProblem,
    },
    /// All files together hold 0 bytes.
    #[error("nothing to share: {path:?} holds no data")]
    Empty {
        /// The source path.
        path: PathBuf,
    },
    /// The requested piece length is not a power of two in 16 KiB ..= 512 MiB.
    #[error("invalid piece length {0} bytes: must be a power of two from 16 KiB to 512 MiB")]
    PieceLength(u32),
    /// A file's size changed while it was being hashed.
    #[error("{path:?} changed while it was being hashed (expected {expected} bytes)")]
    Changed {
        /// The file.
        path: PathBuf,
        /// Its size when listed, in bytes.
        expected: u64,
    },
    /// The work was cancelled ([`CreateProgress::cancel`]).
    #[error("cancelled")]
    Cancelled,
    /// The torrent made does not parse back (a bug if it ever happens).
    #[error("the torrent made does not read back: {0}")]
    Verify(#[from] super::MetainfoError),
    /// bendy refused the structure (a bug if it ever happens).
    #[error("bencode encoding failed: {0}")]
    Encode(#[from] bendy::encoding::Error),
}

/// Why a name on disk cannot go into a torrent (see [`CreateError::UnsafeName`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    /// Refused by the path rules of [`super::path`].
    #[error("{0}")]
    Unsafe(UnsafeComponent),
    /// Would be stored under another name by a downloader (control characters, a
    /// right-to-left override, more than 240 bytes).
    #[error(
        "would be renamed on download (control characters, text-direction marks or more than 240 bytes)"
    )]
    Renamed,
    /// Differs from another name in the same folder only by letter case: a downloader
    /// renames one of them (`a.1.txt`), since a case-insensitive file system cannot hold
    /// both.
    #[error(
        "differs from another name in its folder only by letter case (a downloader renames one)"
    )]
    CaseCollision,
}

/// How far a [`TorrentBuilder::build`] is, shared with whoever shows it: payload bytes
/// (padding included) hashed out of the total, and a switch that stops the work.
#[derive(Debug, Default)]
pub struct CreateProgress {
    /// Bytes hashed so far.
    pub done: AtomicU64,
    /// Bytes to hash (set once the files are listed; 0 before).
    pub total: AtomicU64,
    /// Set to stop the build ([`CreateError::Cancelled`]).
    pub cancel: AtomicBool,
}

/// Builder of a .torrent from a file or a folder: v1 (BEP 3), v2 (BEP 52) or hybrid, with
/// BEP 12 tiers, BEP 19 web seeds, BEP 27 private, a comment and a source tag. Folders are
/// walked recursively, files sorted by path (the v2 `file tree` order); symbolic links are
/// skipped (not followed), empty folders cannot be represented.
#[derive(Debug, Clone)]
pub struct TorrentBuilder {
    source: PathBuf,
    piece_length: Option<u32>,
    trackers: Vec<Vec<String>>,
    web_seeds: Vec<String>,
    private: bool,
    comment: Option<String>,
    created_by: Option<String>,
    creation_date: Option<i64>,
    source_tag: Option<String>,
    version: MetaVersion,
    threads: usize,
    progress: Option<Arc<CreateProgress>>,
}

/// One file found under the source, in torrent order.
struct SourceFile {
    /// Path components below the source folder (empty for a single-file source).
    components: Vec<String>,
    /// Where to read it.
    disk: PathBuf,
    /// Size in bytes when listed.
    length: u64,
}

impl TorrentBuilder {
    /// A builder for the file or folder at `source`. Defaults: v1 ([`MetaVersion::V1`];
    /// `ratorrent create` asks for hybrid), piece length from [`default_piece_length`], no
    /// tracker, public, no comment, no source tag, `created by` `ratorrent/<version>`,
    /// creation date = now, one hashing thread per core.
    pub fn new(source: impl Into<PathBuf>) -> TorrentBuilder {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_secs()).ok());
        TorrentBuilder {
            source: source.into(),
            piece_length: None,
            trackers: Vec::new(),
            web_seeds: Vec::new(),
            private: false,
            comment: None,
            created_by: Some(concat!("ratorrent/", env!("CARGO_PKG_VERSION")).to_owned()),
            creation_date: now,
            source_tag: None,
            version: MetaVersion::V1,
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            progress: None,
        }
    }

    /// Make a v1, v2 or hybrid torrent.
    #[must_use]
    pub fn version(mut self, version: MetaVersion) -> Self {
        self.version = version;
        self
    }

    /// Set or clear the `source` tag in the info dictionary (private trackers use it to
    /// tell their torrents apart; it changes the info hash).
    #[must_use]
    pub fn source_tag(mut self, tag: Option<String>) -> Self {
        self.source_tag = tag;
        self
    }

    /// Hash on `threads` threads (at least 1, at most 64).
    #[must_use]
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.clamp(1, 64);
        self
    }

    /// Report progress to (and take a cancel from) `progress`.
    #[must_use]
    pub fn progress(mut self, progress: Arc<CreateProgress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Use `bytes` per piece: a power of two from 16 KiB to 512 MiB (checked by `build`).
    #[must_use]
    pub fn piece_length(mut self, bytes: u32) -> Self {
        self.piece_length = Some(bytes);
        self
    }

    /// Add a tier holding one announce URL (BEP 12). The first URL is also `announce`.
    #[must_use]
    pub fn announce(mut self, url: impl Into<String>) -> Self {
        self.trackers.push(vec![url.into()]);
        self
    }

    /// Add a tier of announce URLs (BEP 12), tried in the given order. Empty tiers are
    /// ignored.
    #[must_use]
    pub fn announce_tier(mut self, urls: Vec<String>) -> Self {
        if !urls.is_empty() {
            self.trackers.push(urls);
        }
        self
    }

    /// Add a web seed URL (`url-list`, BEP 19).
    #[must_use]
    pub fn web_seed(mut self, url: impl Into<String>) -> Self {
        self.web_seeds.push(url.into());
        self
    }

    /// Set the `private` flag (BEP 27).
    #[must_use]
    pub fn private(mut self, private: bool) -> Self {
        self.private = private;
        self
    }

    /// Set or clear the `comment`.
    #[must_use]
    pub fn comment(mut self, comment: Option<String>) -> Self {
        self.comment = comment;
        self
    }

    /// Set or clear `created by`.
    #[must_use]
    pub fn created_by(mut self, created_by: Option<String>) -> Self {
        self.created_by = created_by;
        self
    }

    /// Set or clear `creation date` (Unix time, seconds).
    #[must_use]
    pub fn creation_date(mut self, unix_seconds: Option<i64>) -> Self {
        self.creation_date = unix_seconds;
        self
    }

    /// Walk the source, hash every piece and encode the .torrent (canonical bencode: keys
    /// sorted; the same files and options give the same bytes when the creation date is
    /// left out). Reads every byte of the source once; the result is parsed back.
    ///
    /// # Errors
    /// [`CreateError`]: unreadable source, names that cannot go into a torrent, 0 bytes of
    /// data, a bad piece length, a file changing size while hashed, a cancel.
    pub fn build(&self) -> Result<Vec<u8>, CreateError> {
        self.build_meta().map(|(bytes, _)| bytes)
    }

    /// [`TorrentBuilder::build`], handing back the torrent as parsed too.
    ///
    /// # Errors
    /// As [`TorrentBuilder::build`].
    pub fn build_meta(&self) -> Result<(Vec<u8>, Metainfo), CreateError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| CreateError::Io { path, source }
        };
        let root = std::fs::canonicalize(&self.source).map_err(io(&self.source))?;
        let name = root
            .file_name()
            .ok_or_else(|| CreateError::NotFileOrFolder { path: root.clone() })
            .and_then(|n| checked_name(n, &root))?;
        let meta = std::fs::metadata(&root).map_err(io(&root))?;
        let multi_file = meta.is_dir();
        let files = if multi_file {
            let mut files = Vec::new();
            walk(&root, &mut Vec::new(), &mut files)?;
            files.sort_by(|a, b| a.components.cmp(&b.components));
            check_case_collisions(&root, &files)?;
            files
        } else if meta.is_file() {
            vec![SourceFile {
                components: Vec::new(),
                disk: root.clone(),
                length: meta.len(),
            }]
        } else {
            return Err(CreateError::NotFileOrFolder { path: root });
        };
        let total: u64 = files.iter().map(|f| f.length).sum();
        if total == 0 {
            return Err(CreateError::Empty { path: root });
        }
        let piece_length = match self.piece_length {
            None => default_piece_length(total),
            Some(pl)
                if pl.is_power_of_two()
                    && (MIN_PIECE_LENGTH..=super::MAX_PIECE_LENGTH).contains(&pl) =>
            {
                pl
            }
            Some(pl) => return Err(CreateError::PieceLength(pl)),
        };
        let sources: Vec<hash::Source> = files
            .iter()
            .map(|f| hash::Source {
                disk: f.disk.clone(),
                length: f.length,
            })
            .collect();
        let segments = hash::layout(&sources, piece_length, self.version != MetaVersion::V1);
        let local = CreateProgress::default();
        let progress = self.progress.as_deref().unwrap_or(&local);
        progress.done.store(0, Ordering::Relaxed);
        progress.total.store(
            segments.last().map_or(0, |s| s.offset + s.length),
            Ordering::Relaxed,
        );
        let hashed = hash::Job {
            sources: &sources,
            segments: &segments,
            piece_length,
            v1: self.version != MetaVersion::V2,
            v2: self.version != MetaVersion::V1,
            threads: self.threads,
            progress: &progress.done,
            cancel: &progress.cancel,
        }
        .run()?;
        let parts = encode::Parts {
            name: &name,
            multi_file,
            files: &files,
            segments: &segments,
            piece_length,
            hashed: &hashed,
        };
        let bytes = encode::encode(self, &parts)?;
        let meta = Metainfo::from_bytes(&bytes)?;
        if meta.version() != self.version || meta.v2.as_ref().is_some_and(|v| !v.complete()) {
            return Err(CreateError::Verify(super::MetainfoError::Missing {
                field: "piece layers".into(),
            }));
        }
        Ok((bytes, meta))
    }
}

/// A file or folder name as UTF-8, refused when a downloader would refuse or rename it.
fn checked_name(name: &std::ffi::OsStr, path: &Path) -> Result<String, CreateError> {
    let s = name.to_str().ok_or_else(|| CreateError::NonUtf8Name {
        path: path.to_owned(),
    })?;
    let problem = match check_component(s) {
        Err(p) => NameProblem::Unsafe(p),
        Ok(()) if sanitize_component(s.as_bytes()).as_deref() == Some(s) => {
            return Ok(s.to_owned());
        }
        Ok(()) => NameProblem::Renamed,
    };
    Err(CreateError::UnsafeName {
        path: path.to_owned(),
        problem,
    })
}

/// Refuse two files whose paths differ only by letter case (`A.txt`, `a.txt`; also a file
/// and a folder): a downloader renames the later one, so the torrent could not be seeded
/// from these files. `files` are sorted by path.
fn check_case_collisions(root: &Path, files: &[SourceFile]) -> Result<(), CreateError> {
    let mut seen: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for f in files {
        // every folder prefix, then the file itself
        for depth in 1..=f.components.len() {
            let exact = &f.components[..depth];
            let key = exact.join("/").to_lowercase();
            match seen.get(&key) {
                Some(first) if first.as_slice() == exact => {}
                Some(_) => {
                    return Err(CreateError::UnsafeName {
                        path: exact.iter().fold(root.to_path_buf(), |p, c| p.join(c)),
                        problem: NameProblem::CaseCollision,
                    });
                }
                None => {
                    seen.insert(key, exact.to_vec());
                }
            }
        }
    }
    Ok(())
}

/// Collect the regular files under `dir` (recursively, symbolic links skipped).
fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<SourceFile>,
) -> Result<(), CreateError> {
    let io = |source| CreateError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|source| CreateError::Io {
            path: path.clone(),
            source,
        })?;
        if kind.is_symlink() {
            continue;
        }
        let name = checked_name(&entry.file_name(), &path)?;
        if kind.is_dir() {
            prefix.push(name);
            walk(&path, prefix, out)?;
            prefix.pop();
        } else if kind.is_file() {
            let length = entry
                .metadata()
                .map_err(|source| CreateError::Io {
                    path: path.clone(),
                    source,
                })?
                .len();
            let mut components = prefix.clone();
            components.push(name);
            out.push(SourceFile {
                components,
                disk: path,
                length,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces are hashed through a bounded buffer: the hashes are those of the
    /// concatenated files cut at every piece length, from 16 KiB to 512 MiB (one piece
    /// then), with pieces spanning files and reads shorter and longer than the buffer.
    #[test]
    fn pieces_are_hashed_across_files_at_every_piece_length() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("t");
        std::fs::create_dir(&top).unwrap();
        let sizes = [
            3 * hash::HASH_READ as u64 + 5,
            1,
            0,
            40_000,
            hash::HASH_READ as u64,
        ];
        let mut all = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            let bytes: Vec<u8> = (0..*n).map(|j| (j * 31 + i as u64) as u8).collect();
            std::fs::write(top.join(format!("f{i}")), &bytes).unwrap();
            all.extend(bytes);
        }
        for pl in [
            MIN_PIECE_LENGTH,
            1 << 20,
            4 << 20,
            super::super::MAX_PIECE_LENGTH,
        ] {
            let t = TorrentBuilder::new(&top).piece_length(pl).build().unwrap();
            let m = crate::metainfo::Metainfo::from_bytes(&t).unwrap();
            use sha1::{Digest, Sha1};
            let want: Vec<[u8; 20]> = all
                .chunks(pl as usize)
                .map(|c| Sha1::digest(c).into())
                .collect();
            assert_eq!(m.piece_hashes, want, "piece length {pl}");
        }
        let e = TorrentBuilder::new(&top)
            .piece_length(super::super::MAX_PIECE_LENGTH * 2)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("512 MiB"), "{e}");
    }

    /// v2 and hybrid torrents of files with odd sizes and an empty one verify piece by
    /// piece on every side, and a flipped byte fails its piece.
    #[test]
    fn v2_and_hybrid_pieces_verify_on_every_side() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("t");
        std::fs::create_dir_all(top.join("sub")).unwrap();
        let sizes = [
            ("a.bin", 100_000u64),
            ("sub/b.bin", 0),
            ("sub/c.bin", 16_384),
            ("z.bin", 5 * 65_536 + 3),
        ];
        for (i, (n, len)) in sizes.iter().enumerate() {
            let bytes: Vec<u8> = (0..*len).map(|j| (j * 13 + i as u64) as u8).collect();
            std::fs::write(top.join(n), bytes).unwrap();
        }
        for version in [MetaVersion::V2, MetaVersion::Hybrid, MetaVersion::V1] {
            let (bytes, m) = TorrentBuilder::new(&top)
                .version(version)
                .piece_length(65_536)
                .creation_date(None)
                .threads(3)
                .build_meta()
                .unwrap();
            assert_eq!(m.version(), version);
            // reproducible
            let again = TorrentBuilder::new(&top)
                .version(version)
                .piece_length(65_536)
                .creation_date(None)
                .threads(1)
                .build()
                .unwrap();
            assert_eq!(again, bytes, "{version:?}");
            let mut payload = Vec::new();
            for f in &m.files {
                if f.pad {
                    payload.resize(payload.len() + f.length as usize, 0);
                } else {
                    let rel: PathBuf = f.path.components().skip(1).collect();
                    payload.extend(std::fs::read(top.join(rel)).unwrap());
                }
            }
            let hashes = m.hashes();
            let geo = m.geometry();
            for p in 0..m.piece_count() {
                let r = geo.piece_range(p);
                let piece = &payload[r.start as usize..r.end as usize];
                let mut v = crate::piece::PieceVerifier::new(&hashes, p);
                v.update(piece);
                assert!(v.matches(&hashes, p), "{version:?} piece {p}");
                let mut bad = piece.to_vec();
                bad[0] ^= 1; // a pad byte would not count on a v2-only torrent
                let mut v = crate::piece::PieceVerifier::new(&hashes, p);
                v.update(&bad);
                assert!(!v.matches(&hashes, p), "{version:?} piece {p} corrupt");
            }
        }
    }

    #[test]
    fn default_piece_length_aims_for_1500_pieces() {
        assert_eq!(default_piece_length(1), MIN_PIECE_LENGTH);
        assert_eq!(default_piece_length(1500 * 16 * 1024), MIN_PIECE_LENGTH);
        assert_eq!(default_piece_length(1500 * 16 * 1024 + 1), 32 * 1024);
        let gib = 1u64 << 30;
        let pl = default_piece_length(gib);
        assert_eq!(pl, 1024 * 1024); // 1024 pieces
        assert!(gib.div_ceil(u64::from(pl)) <= TARGET_PIECE_COUNT);
        assert_eq!(default_piece_length(u64::MAX), MAX_DEFAULT_PIECE_LENGTH);
    }
}

/// A .torrent file for an info dictionary fetched from peers (BEP 9): `announce` (the
/// first tracker), `announce-list` (`trackers`, when any) and `info` (the raw bytes, so the
/// info hash is unchanged), keys in sorted order.
pub fn torrent_from_info(info: &[u8], trackers: &[Vec<String>]) -> Vec<u8> {
    torrent_from_parts(info, trackers, &std::collections::BTreeMap::new())
}

/// [`torrent_from_info`] with the `piece layers` of a v2 torrent (BEP 52) fetched from
/// peers: by pieces root, 32 bytes per piece.
pub fn torrent_from_parts(
    info: &[u8],
    trackers: &[Vec<String>],
    layers: &std::collections::BTreeMap<[u8; 32], Vec<u8>>,
) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &[u8]) {
        out.extend_from_slice(s.len().to_string().as_bytes());
        out.push(b':');
        out.extend_from_slice(s);
    }
    let mut out = vec![b'd'];
    let tiers: Vec<&Vec<String>> = trackers.iter().filter(|t| !t.is_empty()).collect();
    if let Some(first) = tiers.first().and_then(|t| t.first()) {
        string(&mut out, b"announce");
        string(&mut out, first.as_bytes());
        string(&mut out, b"announce-list");
        out.push(b'l');
        for tier in &tiers {
            out.push(b'l');
            for url in tier.iter() {
                string(&mut out, url.as_bytes());
            }
            out.push(b'e');
        }
        out.push(b'e');
    }
    string(&mut out, b"info");
    out.extend_from_slice(info);
    if !layers.is_empty() {
        string(&mut out, b"piece layers");
        out.push(b'd');
        for (root, layer) in layers {
            string(&mut out, root);
            string(&mut out, layer);
        }
        out.push(b'e');
    }
    out.push(b'e');
    out
}

#[cfg(test)]
mod from_info_tests {
    use super::*;
    use crate::metainfo::{InfoHash, Metainfo};

    #[test]
    fn the_info_hash_and_trackers_survive() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.bin");
        std::fs::write(&f, vec![7u8; 100_000]).unwrap();
        let t = TorrentBuilder::new(&f).build().unwrap();
        let m = Metainfo::from_bytes(&t).unwrap();
        let tiers = vec![
            vec!["http://a/announce".to_string()],
            vec!["udp://b:1".to_string()],
        ];
        let again = Metainfo::from_bytes(&torrent_from_info(&m.info_bytes, &tiers)).unwrap();
        assert_eq!(again.info_hash, m.info_hash);
        assert_eq!(again.info_hash, InfoHash::of_info_bytes(&m.info_bytes));
        assert_eq!(again.trackers, tiers);
        let bare = Metainfo::from_bytes(&torrent_from_info(&m.info_bytes, &[])).unwrap();
        assert!(bare.trackers.is_empty());
        assert_eq!(bare.files, m.files);
    }
}
