//! Writing new v1 .torrent files (BEP 3) from a file or folder on disk.
//!
//! ```no_run
//! use ratorrent::metainfo::TorrentBuilder;
//! let bytes = TorrentBuilder::new("/srv/share/album")
//!     .announce("http://tracker.example.org/announce")
//!     .private(true)
//!     .build()?;
//! std::fs::write("album.torrent", bytes)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use bendy::encoding::{AsString, Encoder, SingleItemEncoder};
use sha1::{Digest, Sha1};

use super::path::{UnsafeComponent, check_component, sanitize_component};

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

/// Builder of a v1 .torrent (BEP 3, with BEP 12 tiers, BEP 19 web seeds, BEP 27 private)
/// from a file or a folder. Folders are walked recursively, files sorted by path;
/// symbolic links are skipped (not followed), empty folders cannot be represented.
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
    /// A builder for the file or folder at `source`. Defaults: piece length from
    /// [`default_piece_length`], no tracker, public, no comment, `created by`
    /// `ratorrent/<version>`, creation date = now.
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
        }
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

    /// Walk the source, hash every piece with SHA-1 and encode the .torrent (canonical
    /// bencode: keys sorted). Reads every byte of the source once.
    ///
    /// # Errors
    /// [`CreateError`]: unreadable source, names that cannot go into a torrent, 0 bytes of
    /// data, a bad piece length, a file changing size while hashed.
    pub fn build(&self) -> Result<Vec<u8>, CreateError> {
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
        let pieces = hash_pieces(&files, piece_length)?;
        self.encode(&name, multi_file, &files, piece_length, &pieces)
    }

    /// Bencode the torrent with keys in sorted order.
    fn encode(
        &self,
        name: &str,
        multi_file: bool,
        files: &[SourceFile],
        piece_length: u32,
        pieces: &[u8],
    ) -> Result<Vec<u8>, CreateError> {
        let info = |e: SingleItemEncoder| {
            e.emit_dict(|mut d| {
                if multi_file {
                    d.emit_pair_with(b"files", |e| {
                        e.emit_list(|l| {
                            for f in files {
                                l.emit_dict(|mut fd| {
                                    fd.emit_pair(b"length", f.length)?;
                                    fd.emit_pair(b"path", &f.components)
                                })?;
                            }
                            Ok(())
                        })
                    })?;
                } else {
                    let length = files.first().map_or(0, |f| f.length);
                    d.emit_pair(b"length", length)?;
                }
                d.emit_pair(b"name", name)?;
                d.emit_pair(b"piece length", piece_length)?;
                d.emit_pair(b"pieces", AsString(pieces))?;
                if self.private {
                    d.emit_pair(b"private", 1u8)?;
                }
                Ok(())
            })
        };
        let all_urls = self.trackers.iter().map(Vec::len).sum::<usize>();
        let mut enc = Encoder::new();
        enc.emit_dict(|mut d| {
            if let Some(first) = self.trackers.first().and_then(|t| t.first()) {
                d.emit_pair(b"announce", first)?;
            }
            if all_urls > 1 {
                d.emit_pair(b"announce-list", &self.trackers)?;
            }
            if let Some(c) = &self.comment {
                d.emit_pair(b"comment", c)?;
            }
            if let Some(by) = &self.created_by {
                d.emit_pair(b"created by", by)?;
            }
            if let Some(date) = self.creation_date {
                d.emit_pair(b"creation date", date)?;
            }
            d.emit_pair_with(b"info", info)?;
            if !self.web_seeds.is_empty() {
                d.emit_pair(b"url-list", &self.web_seeds)?;
            }
            Ok(())
        })?;
        Ok(enc.get_output()?)
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

/// `read` that retries on `Interrupted`.
fn read_some(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Bytes read at once while hashing the files of a new torrent: a fixed buffer, never a
/// whole piece (pieces go up to [`super::MAX_PIECE_LENGTH`], 512 MiB).
const HASH_READ: usize = 1 << 20;

/// SHA-1 of every piece of the concatenated files, 20 bytes per piece, hashed as the bytes
/// are read through a [`HASH_READ`] buffer.
fn hash_pieces(files: &[SourceFile], piece_length: u32) -> Result<Vec<u8>, CreateError> {
    let pl = piece_length as usize;
    let mut buf = vec![0u8; HASH_READ.min(pl)];
    let mut hasher = Sha1::new();
    // bytes of the current piece hashed so far
    let mut filled = 0usize;
    let mut pieces = Vec::new();
    for f in files {
        let io = |source| CreateError::Io {
            path: f.disk.clone(),
            source,
        };
        let changed = || CreateError::Changed {
            path: f.disk.clone(),
            expected: f.length,
        };
        let mut file = File::open(&f.disk).map_err(io)?;
        let mut remaining = f.length;
        while remaining > 0 {
            let want = (pl - filled)
                .min(buf.len())
                .min(usize::try_from(remaining).unwrap_or(usize::MAX));
            let n = read_some(&mut file, &mut buf[..want]).map_err(io)?;
            if n == 0 {
                return Err(changed());
            }
            hasher.update(&buf[..n]);
            filled += n;
            remaining -= n as u64;
            if filled == pl {
                pieces.extend_from_slice(&std::mem::take(&mut hasher).finalize());
                filled = 0;
            }
        }
        if read_some(&mut file, &mut [0u8; 1]).map_err(io)? != 0 {
            return Err(changed());
        }
    }
    if filled > 0 {
        pieces.extend_from_slice(&hasher.finalize());
    }
    Ok(pieces)
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
        let sizes = [3 * HASH_READ as u64 + 5, 1, 0, 40_000, HASH_READ as u64];
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
