//! The [`Metainfo`] model and its parser (BEP 3, 12, 19, 27, 47, 52 hybrid).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::InfoHash;
use super::path::{
    PLACEHOLDER, is_contained, numbered, sanitize_component, sanitize_component_noting,
};
use super::path_change::{PathChange, PathChanges};
use crate::bencode::{self, DecodeError, Dict, Value};
use crate::piece::Geometry;

/// Largest `piece length` accepted, in bytes (512 MiB): what libtorrent accepts (its
/// `large_piece_size` test torrent has 512 MiB less one block). A piece is never held in
/// memory whatever its length: blocks are hashed as they arrive and written, checks and
/// moves read in bounded steps.
pub const MAX_PIECE_LENGTH: u32 = 512 * 1024 * 1024;

/// Largest .torrent file [`Metainfo::from_file`] reads, in bytes (64 MiB).
pub const MAX_TORRENT_FILE_BYTES: u64 = 64 * 1024 * 1024;

pub use crate::piece::BLOCK_SIZE;

/// A parsed .torrent file: BEP 3 metainfo, BEP 52 v2 or hybrid.
///
/// Sizes and offsets are in bytes. Piece geometry counts padding files (BEP 47): the
/// payload the swarm exchanges is the concatenation of all `files` in order, pads included.
/// A v2-only torrent's files get the padding files v2's layout implies (each file starts a
/// piece), so every torrent has one geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metainfo {
    /// The torrent's 20-byte info hash on the wire (handshakes, trackers, the DHT, the
    /// state store's key): the v1 info hash, SHA-1 of [`Metainfo::info_bytes`] (BEP 3); for
    /// a v2-only torrent (no `pieces`), the v2 info hash cut to 20 bytes (BEP 52).
    pub info_hash: InfoHash,
    /// v2 info hash: SHA-256 of the same info bytes, when the info dictionary has
    /// `meta version` 2 (BEP 52: a v2-only or hybrid torrent). 32 bytes.
    pub info_hash_v2: Option<[u8; 32]>,
    /// The bencoded info dictionary exactly as found in the file (served by BEP 9).
    pub info_bytes: Vec<u8>,
    /// Display name, UTF-8: `name.utf-8` when present and valid, else `name` (lossily
    /// decoded). May hold control characters; escape before printing to a terminal. The
    /// name on disk is the first component of each [`FileInfo::path`] (sanitised; the info
    /// hash in hex when nothing usable is left, as in libtorrent).
    pub name: String,
    /// What sanitising changed in the name used on disk ([`Metainfo::saved_name`]), empty
    /// when it is used as the torrent gives it.
    pub name_changes: PathChanges,
    /// Bytes per piece (all pieces but the last), 1 ..= [`MAX_PIECE_LENGTH`].
    pub piece_length: u32,
    /// SHA-1 of each piece, in order (the `pieces` string cut into 20-byte hashes); empty
    /// for a v2-only torrent.
    pub piece_hashes: Vec<[u8; 20]>,
    /// The v2 side (BEP 52): each file's pieces root and, when the .torrent has them, its
    /// piece layer. `None` for a v1 torrent.
    pub v2: Option<crate::piece::V2Hashes>,
    /// The files in torrent order, padding files included (flagged [`FileInfo::pad`]).
    pub files: Vec<FileInfo>,
    /// Sum of all file lengths, pads included, in bytes (the piece geometry's payload).
    pub total_length: u64,
    /// Tiers of announce URLs (BEP 12): `announce-list` when it holds at least one URL,
    /// else `[[announce]]`, else empty. Each URL appears once (first occurrence kept).
    pub trackers: Vec<Vec<String>>,
    /// `private` is 1 in the info dictionary (BEP 27): no DHT, PEX or LSD.
    pub private: bool,
    /// Web seed URLs from `url-list` (BEP 19), given as a string or a list of strings.
    pub web_seeds: Vec<String>,
    /// `comment` (`comment.utf-8` preferred), lossily decoded.
    pub comment: Option<String>,
    /// `created by`, lossily decoded.
    pub created_by: Option<String>,
    /// `creation date`, Unix time in seconds.
    pub creation_date: Option<i64>,
    /// True for the multi-file form (`files`), false for single-file (`length`).
    pub multi_file: bool,
}

/// One file of a torrent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Relative path on disk, sanitised (see [`super::path`]). For a multi-file torrent it
    /// starts with the torrent's top folder (`name/a/b.bin`); for a single-file torrent it
    /// is just the name. Always relative with only normal components; no two real files
    /// (not [`FileInfo::pad`]) share a path, also ignoring letter case, and no real file's
    /// path is a folder of another (colliding files are renamed `b.1.bin`, `b.2.bin`, ...
    /// in torrent order, as libtorrent does).
    pub path: PathBuf,
    /// The path components as given in the torrent (`path.utf-8` preferred, lossy
    /// otherwise), for display; without the top folder. For a single-file torrent, the
    /// name. Empty components are kept here; a padding file without `path` has none.
    pub display_path: Vec<String>,
    /// Length in bytes (0 for a BEP 47 symlink entry, whatever its `length` says).
    pub length: u64,
    /// Byte offset of the file in the torrent's concatenated payload.
    pub offset: u64,
    /// A BEP 47 padding file (`attr` contains `p`, or the legacy `.pad/N` or
    /// `_____padding_file_` names): zeros, never written to disk nor shown as a file.
    pub pad: bool,
    /// A BEP 47 symlink entry (`attr` contains `l`). ratorrent never creates a symbolic
    /// link: the entry is stored as an empty regular file at [`FileInfo::path`], so nothing
    /// written through it can leave the download directory. Like libtorrent, it takes no
    /// bytes of the payload.
    pub symlink: bool,
    /// Where a symlink entry's `symlink path` points, for display: sanitised like a file
    /// path, starting with the top folder, and naming a file or folder of the torrent
    /// (read from the top folder, else, as libtorrent also allows, from the link's own
    /// folder). `None` for other files and for a symlink entry whose target is missing or
    /// outside the torrent (libtorrent points those at themselves).
    pub symlink_target: Option<PathBuf>,
    /// What sanitising and renaming changed in this file's path below the top folder
    /// (the top folder's own changes are [`Metainfo::name_changes`]; for a single-file
    /// torrent both are the same). Empty when the path is used as the torrent gives it.
    pub changes: PathChanges,
}

impl FileInfo {
    /// The file's place in the payload.
    pub fn span(&self) -> crate::piece::FileSpan {
        crate::piece::FileSpan {
            offset: self.offset,
            length: self.length,
            pad: self.pad,
        }
    }
}

/// Why a .torrent was refused. Each Display names the problem.
#[derive(Debug, thiserror::Error)]
pub enum MetainfoError {
    /// The file is not valid bencode (message from [`DecodeError`]).
    #[error(transparent)]
    Bencode(#[from] DecodeError),
    /// The top level is not a dictionary.
    #[error("not a .torrent: the top level is a {found}, not a dictionary")]
    NotADict {
        /// What was found instead ("list", "integer", "string").
        found: &'static str,
    },
    /// A required key is missing.
    #[error("missing '{field}'")]
    Missing {
        /// The key, with its place (e.g. `info`, `piece length`, `files[2].length`).
        field: String,
    },
    /// A key holds the wrong type.
    #[error("invalid '{field}': expected {expected}, found {found}")]
    WrongType {
        /// The key, with its place.
        field: String,
        /// The type BEP 3 asks for.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// `piece length` is 0, negative or larger than [`MAX_PIECE_LENGTH`].
    #[error("invalid 'piece length': {value} bytes (must be between 1 and {MAX_PIECE_LENGTH})")]
    PieceLength {
        /// The value found.
        value: i64,
    },
    /// `pieces` is not a whole number of 20-byte SHA-1 hashes.
    #[error("invalid 'pieces': length {len} is not a multiple of 20")]
    PiecesNotMultipleOf20 {
        /// Its length in bytes.
        len: usize,
    },
    /// `pieces` holds a different number of hashes than the total length needs.
    #[error(
        "invalid 'pieces': {found} piece hashes, but {total_length} bytes in pieces of \
         {piece_length} bytes need {expected}"
    )]
    PieceCountMismatch {
        /// Hashes present.
        found: u64,
        /// `ceil(total_length / piece_length)`.
        expected: u64,
        /// Total length in bytes.
        total_length: u64,
        /// Piece length in bytes.
        piece_length: u32,
    },
    /// A `length` is negative.
    #[error("invalid '{field}': {value} is negative")]
    NegativeLength {
        /// `length` or `files[i].length`.
        field: String,
        /// The value.
        value: i64,
    },
    /// The file lengths add up to more than 2^64 - 1 bytes.
    #[error("invalid 'files': the lengths add up to more than 2^64 bytes")]
    TotalTooLarge,
    /// The info dictionary has both `length` and `files`.
    #[error("invalid 'info': has both 'length' (single-file) and 'files' (multi-file)")]
    LengthAndFiles,
    /// The info dictionary has neither `length` nor `files`.
    #[error("invalid 'info': has neither 'length' (single-file) nor 'files' (multi-file)")]
    NoLengthNorFiles,
    /// `files` is an empty list.
    #[error("invalid 'files': the list is empty")]
    NoFiles,
    /// The payload is 0 bytes: nothing to download, no piece to hash. Refused.
    #[error("invalid torrent: the total length is 0 bytes (no data to share)")]
    EmptyPayload,
    /// A v2-only torrent (BEP 52, no v1 `pieces`) whose v2 side is malformed.
    #[error("invalid v2 torrent: {0}")]
    V2(#[from] super::v2::V2Error),
    /// More pieces than fit in a `u32`.
    #[error("invalid 'pieces': more than 2^32 - 1 pieces")]
    TooManyPieces,
    /// A hybrid torrent (BEP 52) whose v2 side is malformed or disagrees with its v1 side.
    #[error("invalid hybrid torrent: {0}")]
    Hybrid(#[from] super::hybrid::HybridError),
    /// The .torrent file could not be read.
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The .torrent file is larger than [`MAX_TORRENT_FILE_BYTES`].
    #[error("{path:?} is larger than {max} bytes: not a .torrent file this client will load")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        max: u64,
    },
}

/// Text of a bencode string: UTF-8 when valid (`true`), else lossily decoded (`false`).
fn text(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_owned(), true),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
    }
}

fn wrong_type(field: impl Into<String>, expected: &'static str, v: &Value<'_>) -> MetainfoError {
    MetainfoError::WrongType {
        field: field.into(),
        expected,
        found: v.kind(),
    }
}

/// The bytes of `key.utf-8` when it is a valid UTF-8 string, else of `key`. `Ok(None)`
/// when neither is present.
fn utf8_preferred<'a>(
    d: &Dict<'a>,
    key: &str,
    field: &str,
) -> Result<Option<&'a [u8]>, MetainfoError> {
    let utf8_key = format!("{key}.utf-8");
    if let Some(s) = d.get_str(utf8_key.as_bytes()) {
        return Ok(Some(s.as_bytes()));
    }
    match d.get(key.as_bytes()) {
        None => Ok(None),
        Some(Value::Bytes(b)) => Ok(Some(b)),
        Some(v) => Err(wrong_type(field, "a string", v)),
    }
}

/// A non-negative integer under `key`.
fn length(d: &Dict<'_>, key: &[u8], field: &str) -> Result<u64, MetainfoError> {
    match d.get(key) {
        None => Err(MetainfoError::Missing {
            field: field.to_owned(),
        }),
        Some(Value::Int(v)) => u64::try_from(*v).map_err(|_| MetainfoError::NegativeLength {
            field: field.to_owned(),
            value: *v,
        }),
        Some(v) => Err(wrong_type(field, "an integer", v)),
    }
}

/// BEP 47 padding: `attr` contains `p`, or a legacy padding name (`.pad/<anything>`, or a
/// last component starting with `_____padding_file_`).
fn is_pad(attr: &[u8], components: &[String]) -> bool {
    attr.contains(&b'p')
        || (components.len() >= 2 && components.first().is_some_and(|c| c == ".pad"))
        || components
            .last()
            .is_some_and(|c| c.starts_with("_____padding_file_"))
}

/// The raw path components of `files[index]`: `path.utf-8` when it is a list of valid
/// UTF-8 strings, else `path`. `Ok(None)` when there is no `path`.
fn file_components<'a>(d: &Dict<'a>, index: usize) -> Result<Option<Vec<&'a [u8]>>, MetainfoError> {
    if let Some(list) = d.get_list(b"path.utf-8") {
        let utf8: Option<Vec<&[u8]>> = list.iter().map(|v| v.as_str().map(str::as_bytes)).collect();
        if let Some(c) = utf8 {
            return Ok(Some(c));
        }
    }
    string_list(d, b"path", &format!("files[{index}].path"))
}

/// The list of strings under `key`, `Ok(None)` when absent.
fn string_list<'a>(
    d: &Dict<'a>,
    key: &[u8],
    field: &str,
) -> Result<Option<Vec<&'a [u8]>>, MetainfoError> {
    let list = match d.get(key) {
        None => return Ok(None),
        Some(Value::List(l)) => l,
        Some(v) => return Err(wrong_type(field, "a list of strings", v)),
    };
    list.iter()
        .map(|v| match v {
            Value::Bytes(b) => Ok(*b),
            other => Err(wrong_type(field, "a list of strings", other)),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Tracker tiers (BEP 12), deduplicated.
fn trackers(top: &Dict<'_>) -> Vec<Vec<String>> {
    let mut seen = HashSet::new();
    let mut accept = |v: &Value<'_>| -> Option<String> {
        let url = v.as_str()?.trim();
        (!url.is_empty() && seen.insert(url.to_owned())).then(|| url.to_owned())
    };
    let mut tiers = Vec::new();
    if let Some(list) = top.get_list(b"announce-list") {
        for tier in list {
            let urls: Vec<String> = match tier {
                Value::List(urls) => urls.iter().filter_map(&mut accept).collect(),
                // quirk: a tier written as a bare string
                single @ Value::Bytes(_) => accept(single).into_iter().collect(),
                _ => Vec::new(),
            };
            if !urls.is_empty() {
                tiers.push(urls);
            }
        }
    }
    if tiers.is_empty()
        && let Some(url) = top.get(b"announce").and_then(&mut accept)
    {
        tiers.push(vec![url]);
    }
    tiers
}

/// `url-list` (BEP 19) as a string or a list of strings, deduplicated.
fn web_seeds(top: &Dict<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |v: &Value<'_>| {
        if let Some(url) = v.as_str().map(str::trim)
            && !url.is_empty()
            && !out.iter().any(|u| u == url)
        {
            out.push(url.to_owned());
        }
    };
    match top.get(b"url-list") {
        Some(Value::List(l)) => l.iter().for_each(&mut push),
        Some(v @ Value::Bytes(_)) => push(v),
        _ => {}
    }
    out
}

impl Metainfo {
    /// Parse a .torrent file's bytes.
    ///
    /// Accepts unsorted and repeated keys (first occurrence wins), non-power-of-two piece
    /// lengths, legacy encodings (`*.utf-8` keys preferred), pads, zero-length files,
    /// BEP 52 hybrids (v1 side). The info hash is SHA-1 over the info dictionary's bytes
    /// as found (never re-encoded).
    ///
    /// Names and paths are never a reason to refuse: they are sanitised (see
    /// [`super::path`]), nameless ones get a placeholder, colliding ones are renamed.
    ///
    /// # Errors
    /// A [`MetainfoError`]: bencode errors, missing or mistyped keys (a real file needs a
    /// non-empty `path` list of strings), bad piece geometry, a 0-byte payload, a v2-only
    /// torrent.
    /// Trailing whitespace or NUL padding after the top-level dictionary (a newline added by
    /// an editor or a download tool) is accepted, as other clients do; other trailing bytes
    /// are an error.
    pub fn from_bytes(data: &[u8]) -> Result<Metainfo, MetainfoError> {
        let root = decode_whole(data)?;
        let (top, info) = top_and_info(&root)?;
        let meta_version = info.get_int(b"meta version");
        let info_hash_v2: Option<[u8; 32]> = (meta_version == Some(2)).then(|| {
            use sha2::{Digest, Sha256};
            Sha256::digest(info.raw).into()
        });
        let info_hash = match (info.get(b"pieces"), info_hash_v2) {
            // v2-only: the v2 hash cut to 20 bytes stands for it on the wire (BEP 52)
            (None, Some(v2)) => InfoHash::truncated(&v2),
            _ => InfoHash::of_info_bytes(info.raw),
        };

        let (name, name_disk, name_changes) = names(info, || info_hash)?;

        let piece_length = piece_length(info)?;

        let (files, multi_file, piece_hashes, v2) = match info.get(b"pieces") {
            None if meta_version == Some(2) => {
                v2_only(top, info, &name, &name_disk, name_changes, piece_length)?
            }
            None => {
                return Err(MetainfoError::Missing {
                    field: "pieces".into(),
                });
            }
            Some(Value::Bytes(pieces)) => {
                let (files, multi_file) = file_list(info, &name, &name_disk, name_changes)?;
                let hashes = v1_hashes(pieces, &files, piece_length)?;
                // a hybrid: its v2 side must describe the same files as the v1 side
                let v2 = if meta_version == Some(2) {
                    Some(super::hybrid::check(
                        info,
                        top,
                        &files,
                        piece_length,
                        multi_file,
                    )?)
                } else {
                    None
                };
                (files, multi_file, hashes, v2)
            }
            Some(v) => return Err(wrong_type("pieces", "a string", v)),
        };
        let total_length = files.last().map_or(0, |f| f.offset + f.length);

        Ok(Metainfo {
            info_hash,
            info_hash_v2,
            info_bytes: info.raw.to_vec(),
            name,
            name_changes,
            piece_length,
            piece_hashes,
            v2,
            files,
            total_length,
            trackers: trackers(top),
            private: info.get_int(b"private") == Some(1),
            web_seeds: web_seeds(top),
            comment: utf8_preferred(top, "comment", "comment")
                .ok()
                .flatten()
                .map(|b| text(b).0),
            created_by: top.get_bytes(b"created by").map(|b| text(b).0),
            creation_date: top.get_int(b"creation date"),
            multi_file,
        })
    }

    /// Read and parse a .torrent file of at most [`MAX_TORRENT_FILE_BYTES`] bytes.
    ///
    /// # Errors
    /// [`MetainfoError::Io`] when it cannot be read, [`MetainfoError::FileTooLarge`] when
    /// it is bigger than the limit, else as [`Metainfo::from_bytes`].
    pub fn from_file(path: &Path) -> Result<Metainfo, MetainfoError> {
        Metainfo::from_bytes(&read_torrent_file(path)?)
    }

    /// [`Metainfo::from_file`] with the error as a sentence for the user: a file that
    /// cannot be read says so (`cannot read "x.torrent": No such file or directory`), a
    /// malformed one says `x.torrent: not a valid torrent: <reason>`.
    ///
    /// # Errors
    /// The sentence.
    pub fn load(path: &Path) -> Result<Metainfo, String> {
        Self::load_with_bytes(path).map(|(meta, _)| meta)
    }

    /// [`Metainfo::load`] that also hands back the file's bytes (at most
    /// [`MAX_TORRENT_FILE_BYTES`]), read once: the session keeps them in its state store.
    ///
    /// # Errors
    /// The sentence, as [`Metainfo::load`].
    pub fn load_with_bytes(path: &Path) -> Result<(Metainfo, Vec<u8>), String> {
        let data = read_torrent_file(path).map_err(|e| sentence(path, e))?;
        let meta = Metainfo::from_bytes(&data).map_err(|e| sentence(path, e))?;
        Ok((meta, data))
    }

    /// The fast mode of the same reader: only the file list of the .torrent at `path`
    /// ([`files_from_bytes`]: no info-hash SHA-1, no copy of the piece hashes), with errors
    /// as sentences like [`Metainfo::load`]'s. For checking resume data at start-up.
    ///
    /// # Errors
    /// The sentence.
    pub fn load_files(path: &Path) -> Result<Vec<FileInfo>, String> {
        read_torrent_file(path)
            .and_then(|data| files_from_bytes(&data))
            .map_err(|e| sentence(path, e))
    }
}

/// A reading or parsing error as a sentence for the user (see [`Metainfo::load`]).
fn sentence(path: &Path, e: MetainfoError) -> String {
    match e {
        MetainfoError::Io { .. } | MetainfoError::FileTooLarge { .. } => e.to_string(),
        e => format!("{}: not a valid torrent: {e}", path.display()),
    }
}

/// The bytes of the file at `path`, at most [`MAX_TORRENT_FILE_BYTES`].
fn read_torrent_file(path: &Path) -> Result<Vec<u8>, MetainfoError> {
    {
        let io = |source| MetainfoError::Io {
            path: path.to_owned(),
            source,
        };
        let too_large = || MetainfoError::FileTooLarge {
            path: path.to_owned(),
            max: MAX_TORRENT_FILE_BYTES,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size > MAX_TORRENT_FILE_BYTES {
            return Err(too_large());
        }
        let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        // `take` guards against a file that grows while being read.
        file.take(MAX_TORRENT_FILE_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(io)?;
        if data.len() as u64 > MAX_TORRENT_FILE_BYTES {
            return Err(too_large());
        }
        Ok(data)
    }
}

impl Metainfo {
    /// The name used on disk (the top folder, or the single file): [`Metainfo::name`]
    /// sanitised (see [`super::path`]), the info hash in hex when nothing usable was left.
    /// What was changed is in [`Metainfo::name_changes`]. This is the name to show.
    pub fn saved_name(&self) -> &str {
        // every path starts with the sanitised name, a single normal component
        self.files
            .first()
            .and_then(|f| f.path.components().next())
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or(PLACEHOLDER)
    }

    /// `file`'s path as used on disk below the torrent's folder, `/`-separated (for a
    /// single-file torrent: its name, [`Metainfo::saved_name`]). Never the torrent's raw
    /// path; what was changed is in [`FileInfo::changes`].
    pub fn path_in_folder(&self, file: &FileInfo) -> String {
        let skip = usize::from(self.multi_file);
        let parts: Vec<_> = file
            .path
            .components()
            .skip(skip)
            .map(|c| c.as_os_str().to_string_lossy())
            .collect();
        parts.join("/")
    }

    /// Piece and block geometry of the payload (padding included).
    pub fn geometry(&self) -> Geometry {
        // from_bytes checked piece length > 0 and the piece count against the length
        Geometry::new(self.total_length, self.piece_length, self.piece_count()).unwrap_or_default()
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        // from_bytes checked that the count fits in u32
        let n = Geometry::pieces_for(self.total_length, self.piece_length).unwrap_or(0);
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// What each piece must hash to: v1 SHA-1s, v2 Merkle hashes, or both (a hybrid).
    pub fn hashes(&self) -> crate::piece::PieceHashes {
        crate::piece::PieceHashes {
            v1: self.piece_hashes.clone(),
            v2: self.v2.clone(),
        }
    }

    /// Which BEP 52 version the torrent is.
    pub fn version(&self) -> super::MetaVersion {
        match (self.piece_hashes.is_empty(), self.v2.is_some()) {
            (_, false) => super::MetaVersion::V1,
            (true, true) => super::MetaVersion::V2,
            (false, true) => super::MetaVersion::Hybrid,
        }
    }

    /// Where each file lies in the payload, padding files included (BEP 47).
    pub fn layout(&self) -> crate::piece::FileLayout {
        // from_bytes laid the files end to end from 0 to total_length
        crate::piece::FileLayout::new(self.files.iter().map(FileInfo::span), self.total_length)
            .unwrap_or_default()
    }

    /// Size of piece `index` in bytes: [`Metainfo::piece_length`] for every piece but the
    /// last, which holds the rest of the payload. 0 for an index past the end.
    pub fn piece_size(&self, index: u32) -> u32 {
        self.geometry().piece_size(index)
    }

    /// Byte offset of piece `index` in the concatenated payload (`index * piece_length`).
    pub fn piece_offset(&self, index: u32) -> u64 {
        self.geometry().piece_offset(index)
    }

    /// Number of [`BLOCK_SIZE`] blocks in piece `index` (the last one may be shorter);
    /// 0 for an index past the end.
    pub fn block_count(&self, index: u32) -> u32 {
        self.geometry().block_count(index)
    }

    /// Size in bytes of block `block` of piece `index`: [`BLOCK_SIZE`], or less for the
    /// last block of a piece. 0 when out of range.
    pub fn block_size(&self, index: u32, block: u32) -> u32 {
        self.geometry().block(index, block).map_or(0, |b| b.length)
    }

    /// Bytes written to disk: [`Metainfo::total_length`] minus padding files.
    pub fn payload_size(&self) -> u64 {
        self.files.iter().filter(|f| !f.pad).map(|f| f.length).sum()
    }
}

/// `piece length`: 1 ..= [`MAX_PIECE_LENGTH`] bytes.
fn piece_length(info: &Dict<'_>) -> Result<u32, MetainfoError> {
    match info.get(b"piece length") {
        None => Err(MetainfoError::Missing {
            field: "piece length".into(),
        }),
        Some(Value::Int(v)) => match u32::try_from(*v) {
            Ok(pl) if pl > 0 && pl <= MAX_PIECE_LENGTH => Ok(pl),
            _ => Err(MetainfoError::PieceLength { value: *v }),
        },
        Some(v) => Err(wrong_type("piece length", "an integer", v)),
    }
}

/// The v1 piece hashes: `pieces` cut into 20-byte SHA-1s, as many as the files' total
/// length needs in pieces of `piece_length` bytes.
fn v1_hashes(
    pieces: &[u8],
    files: &[FileInfo],
    piece_length: u32,
) -> Result<Vec<[u8; 20]>, MetainfoError> {
    if !pieces.len().is_multiple_of(20) {
        return Err(MetainfoError::PiecesNotMultipleOf20 { len: pieces.len() });
    }
    let total_length = match files.last() {
        Some(f) => f
            .offset
            .checked_add(f.length)
            .ok_or(MetainfoError::TotalTooLarge)?,
        None => 0,
    };
    if total_length == 0 {
        return Err(MetainfoError::EmptyPayload);
    }
    let found = (pieces.len() / 20) as u64;
    // piece_length > 0 was checked
    let expected = Geometry::pieces_for(total_length, piece_length).unwrap_or(0);
    if found != expected {
        return Err(MetainfoError::PieceCountMismatch {
            found,
            expected,
            total_length,
            piece_length,
        });
    }
    if u32::try_from(found).is_err() {
        return Err(MetainfoError::TooManyPieces);
    }
    Ok(pieces
        .chunks_exact(20)
        .map(|c| {
            let mut h = [0u8; 20];
            h.copy_from_slice(c);
            h
        })
        .collect())
}

/// A v2-only torrent's files (laid out from piece boundaries), no v1 hashes, its v2 hashes.
#[allow(clippy::type_complexity)]
fn v2_only(
    top: &Dict<'_>,
    info: &Dict<'_>,
    name: &str,
    name_disk: &str,
    name_changes: PathChanges,
    piece_length: u32,
) -> Result<
    (
        Vec<FileInfo>,
        bool,
        Vec<[u8; 20]>,
        Option<crate::piece::V2Hashes>,
    ),
    MetainfoError,
> {
    let tree = super::v2::tree_files(info)?;
    let (files, multi_file, indices) =
        v2_only_files(&tree, name, name_disk, name_changes, piece_length)?;
    let hashes = super::v2::hashes(top, &tree, &indices, &files, piece_length)?;
    Ok((files, multi_file, Vec::new(), Some(hashes)))
}

/// A v2-only torrent's file list (paths resolved, collisions renamed, symlink targets
/// found), whether it is multi-file, and the index in the list of each tree file.
fn v2_only_files(
    tree: &[super::v2::TreeFile<'_>],
    name: &str,
    name_disk: &str,
    name_changes: PathChanges,
    piece_length: u32,
) -> Result<(Vec<FileInfo>, bool, Vec<usize>), MetainfoError> {
    super::v2::check_piece_length(piece_length)?;
    let (mut files, multi_file, indices, targets) =
        super::v2::v2_only_files(tree, name, name_disk, name_changes, piece_length)?;
    rename_collisions(&mut files);
    resolve_symlink_targets(&mut files, &targets, name_disk);
    Ok((files, multi_file, indices))
}

/// Parse the multi-file `files` list (BEP 3), with disk paths under `name_disk`.
/// The whole of `data` as one bencoded value (only whitespace or NUL may follow it).
fn decode_whole(data: &[u8]) -> Result<Value<'_>, MetainfoError> {
    let (root, used) = bencode::decode_prefix(data)?;
    let rest = &data[used..];
    if !rest.iter().all(|b| b.is_ascii_whitespace() || *b == 0) {
        return Err(MetainfoError::Bencode(
            bencode::DecodeError::TrailingBytes {
                count: rest.len(),
                offset: used,
            },
        ));
    }
    Ok(root)
}

/// The top-level dictionary and its `info` dictionary.
fn top_and_info<'r, 'a>(
    root: &'r Value<'a>,
) -> Result<(&'r Dict<'a>, &'r Dict<'a>), MetainfoError> {
    let top = match root {
        Value::Dict(d) => d,
        other => {
            return Err(MetainfoError::NotADict {
                found: other.kind(),
            });
        }
    };
    let info = match top.get(b"info") {
        None => {
            return Err(MetainfoError::Missing {
                field: "info".into(),
            });
        }
        Some(Value::Dict(d)) => d,
        Some(v) => return Err(wrong_type("info", "a dictionary", v)),
    };
    Ok((top, info))
}

/// The torrent's name as shown, as the folder or file on disk (sanitised; when nothing
/// usable is left, the info hash in hex, as libtorrent names it), and what was changed.
fn names(
    info: &Dict<'_>,
    info_hash: impl FnOnce() -> InfoHash,
) -> Result<(String, String, PathChanges), MetainfoError> {
    let name_raw = utf8_preferred(info, "name", "name")?.ok_or_else(|| MetainfoError::Missing {
        field: "name".into(),
    })?;
    let name = text(name_raw).0;
    let mut changes = PathChanges::NONE;
    let name_disk = sanitize_component_noting(name_raw, &mut changes).unwrap_or_else(|| {
        changes.insert(PathChange::NamedAfterInfoHash);
        info_hash().to_hex()
    });
    Ok((name, name_disk, changes))
}

/// The files of `info` (single-file `length` or multi-file `files`), paths sanitised under
/// `name_disk`; and whether it is a multi-file torrent.
fn file_list(
    info: &Dict<'_>,
    name: &str,
    name_disk: &str,
    name_changes: PathChanges,
) -> Result<(Vec<FileInfo>, bool), MetainfoError> {
    match (info.get(b"length"), info.get(b"files")) {
        (Some(_), Some(_)) => Err(MetainfoError::LengthAndFiles),
        (None, None) => Err(MetainfoError::NoLengthNorFiles),
        (Some(_), None) => {
            let length = length(info, b"length", "length")?;
            let file = FileInfo {
                path: PathBuf::from(name_disk),
                display_path: vec![name.to_owned()],
                length,
                offset: 0,
                pad: false,
                symlink: false,
                symlink_target: None,
                changes: name_changes,
            };
            Ok((vec![file], false))
        }
        (None, Some(Value::List(list))) => Ok((multi_files(list, name_disk)?, true)),
        (None, Some(v)) => Err(wrong_type("files", "a list", v)),
    }
}

/// The file list of a .torrent (paths exactly as [`Metainfo::from_bytes`] resolves them),
/// without hashing the info dictionary or copying the piece hashes: what comparing a
/// restored torrent's files with its resume data needs (10,000 of them at start-up).
///
/// # Errors
/// The bytes are not a .torrent with a usable file list ([`MetainfoError`]); the piece
/// hashes are not checked here.
pub fn files_from_bytes(data: &[u8]) -> Result<Vec<FileInfo>, MetainfoError> {
    let root = decode_whole(data)?;
    let (_, info) = top_and_info(&root)?;
    if info.get(b"pieces").is_none() && info.get_int(b"meta version") == Some(2) {
        // v2-only: the file tree, laid out from piece boundaries (its layers unchecked)
        let v2 = || {
            use sha2::{Digest, Sha256};
            InfoHash::truncated(&Sha256::digest(info.raw).into())
        };
        let (name, name_disk, name_changes) = names(info, v2)?;
        let tree = super::v2::tree_files(info)?;
        let pl = piece_length(info)?;
        return Ok(v2_only_files(&tree, &name, &name_disk, name_changes, pl)?.0);
    }
    let (name, name_disk, name_changes) = names(info, || InfoHash::of_info_bytes(info.raw))?;
    Ok(file_list(info, &name, &name_disk, name_changes)?.0)
}

fn multi_files(list: &[Value<'_>], name_disk: &str) -> Result<Vec<FileInfo>, MetainfoError> {
    if list.is_empty() {
        return Err(MetainfoError::NoFiles);
    }
    let mut files = Vec::with_capacity(list.len());
    // the sanitised `symlink path` of each symlink entry, resolved once all paths are known
    let mut targets: Vec<(usize, Vec<String>)> = Vec::new();
    let mut offset: u64 = 0;
    for (index, entry) in list.iter().enumerate() {
        let d = entry
            .as_dict()
            .ok_or_else(|| wrong_type(format!("files[{index}]"), "a dictionary", entry))?;
        let attr = d.get_bytes(b"attr").unwrap_or_default();
        let is_symlink = attr.contains(&b'l');
        // a symlink entry takes no payload, whatever its `length` says (libtorrent too)
        let length = if is_symlink {
            0
        } else {
            length(d, b"length", &format!("files[{index}].length"))?
        };
        let raw = file_components(d, index)?;
        let display_path: Vec<String> = raw.iter().flatten().map(|c| text(c).0).collect();
        let pad = is_pad(attr, &display_path);

        let mut path = PathBuf::from(name_disk);
        let before = path.components().count();
        let mut changes = PathChanges::NONE;
        path.extend(
            raw.iter()
                .flatten()
                .filter_map(|c| sanitize_component_noting(c, &mut changes)),
        );
        if path.components().count() == before {
            if pad {
                // never on disk; named like libtorrent's pads, inside the top folder
                path.push(".pad");
                path.push(length.to_string());
            } else if raw.as_ref().is_some_and(|r| !r.is_empty()) {
                changes.insert(PathChange::Nameless);
                path.push(PLACEHOLDER); // every component was nameless
            } else {
                // a real file without a name (libtorrent refuses it too)
                return Err(MetainfoError::Missing {
                    field: format!("files[{index}].path"),
                });
            }
        }
        // sanitize_component only returns normal components
        debug_assert!(is_contained(&path), "{path:?}");
        if is_symlink {
            let field = format!("files[{index}].symlink path");
            if let Some(target) = string_list(d, b"symlink path", &field)? {
                let target: Vec<String> = target
                    .iter()
                    .filter_map(|c| sanitize_component(c))
                    .collect();
                if !target.is_empty() {
                    targets.push((index, target));
                }
            }
        }
        files.push(FileInfo {
            path,
            display_path,
            length,
            offset,
            pad,
            symlink: is_symlink,
            symlink_target: None,
            changes,
        });
        offset = offset
            .checked_add(length)
            .ok_or(MetainfoError::TotalTooLarge)?;
    }
    rename_collisions(&mut files);
    resolve_symlink_targets(&mut files, &targets, name_disk);
    Ok(files)
}

/// Fill in [`FileInfo::symlink_target`] for the symlink entries in `targets` (file index,
/// sanitised `symlink path` components): the first of "from the top folder", "from the
/// link's folder" that names a file or a folder of the torrent, directly or through other
/// symlink entries (each followed once), as libtorrent resolves them.
pub(super) fn resolve_symlink_targets(
    files: &mut [FileInfo],
    targets: &[(usize, Vec<String>)],
    top: &str,
) {
    if targets.is_empty() {
        return;
    }
    let mut folders: HashSet<PathBuf> = HashSet::new();
    let mut known: HashSet<PathBuf> = HashSet::new();
    for f in files.iter().filter(|f| !f.pad) {
        known.insert(f.path.clone());
        folders.extend(f.path.ancestors().skip(1).map(Path::to_path_buf));
    }
    known.extend(folders.iter().cloned());
    let candidates = |files: &[FileInfo], index: usize, target: &[String]| {
        let rel: PathBuf = target.iter().collect();
        let from_link = files[index].path.parent().map(|dir| dir.join(&rel));
        std::iter::once(Path::new(top).join(&rel)).chain(from_link)
    };
    // first the direct ones, then those that go through another link
    let mut links: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut later = Vec::new();
    for (index, target) in targets {
        match candidates(files, *index, target).find(|p| known.contains(p)) {
            Some(t) => {
                links.insert(files[*index].path.clone(), t.clone());
                files[*index].symlink_target = Some(t);
            }
            None => later.push((*index, target)),
        }
    }
    for (index, target) in later {
        let found = candidates(files, index, target)
            .find(|p| resolves_through_links(p, &folders, &known, &links));
        files[index].symlink_target = found;
    }
}

/// Most symlink entries followed to resolve one `symlink path` (as Linux's `MAXSYMLINKS`):
/// a target that needs more is left unresolved. Without the bound a torrent of chained links
/// cost time quadratic in its file count (thousands of links: seconds; a 64 MiB torrent:
/// hours).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Whether `target` names a known file or folder once the symlink entries on its way
/// (`links`: link path → its target) are replaced by their targets, each link at most once
/// and at most [`MAX_SYMLINK_HOPS`] in all.
fn resolves_through_links(
    target: &Path,
    folders: &HashSet<PathBuf>,
    known: &HashSet<PathBuf>,
    links: &HashMap<PathBuf, PathBuf>,
) -> bool {
    let mut target = target.to_path_buf();
    let mut followed: HashSet<PathBuf> = HashSet::new();
    'restart: loop {
        let mut prefix = PathBuf::new();
        let mut parts = target.components();
        while let Some(c) = parts.next() {
            prefix.push(c);
            if parts.as_path().as_os_str().is_empty() {
                break; // the last component: checked below
            }
            if folders.contains(&prefix) {
                continue;
            }
            match links.get(&prefix) {
                Some(to)
                    if followed.len() < MAX_SYMLINK_HOPS && followed.insert(prefix.clone()) =>
                {
                    target = to.join(parts.as_path());
                    continue 'restart;
                }
                _ => return false,
            }
        }
        return known.contains(&target);
    }
}

/// Rename real files whose path another real file already has, or that is a folder of
/// another file, comparing without letter case (a case-insensitive file system would merge
/// them): as libtorrent, every folder is taken first, then the files in torrent order, and
/// a file whose path is taken becomes `name.1.ext`, `name.2.ext`, ... (the first free one).
/// Padding files never reach the disk and are left alone.
///
/// Linear in the number of files and folders: each name's next counter is remembered.
pub(super) fn rename_collisions(files: &mut [FileInfo]) {
    // paths are built from UTF-8 components
    let key = |p: &Path| p.to_string_lossy().to_lowercase();
    let mut taken: HashSet<String> = HashSet::new();
    for f in files.iter().filter(|f| !f.pad) {
        for folder in f.path.ancestors().skip(1) {
            if folder.as_os_str().is_empty() || !taken.insert(key(folder)) {
                break; // its ancestors are in already
            }
        }
    }
    let mut next: HashMap<String, u64> = HashMap::new();
    for f in files.iter_mut().filter(|f| !f.pad) {
        let k = key(&f.path);
        if taken.insert(k.clone()) {
            continue;
        }
        let name = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| PLACEHOLDER.to_owned());
        let n = next.entry(k).or_insert(1);
        loop {
            let candidate = f.path.with_file_name(numbered(&name, *n));
            *n += 1;
            if taken.insert(key(&candidate)) {
                tracing::debug!(from = %f.path.display(), to = %candidate.display(),
                    "renaming a file whose path another file of the torrent has");
                f.path = candidate;
                f.changes.insert(PathChange::Renamed);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-file torrent: `a`, 5 bytes, one piece.
    const TORRENT: &[u8] =
        b"d4:infod6:lengthi5e4:name1:a12:piece lengthi16384e6:pieces20:aaaaaaaaaaaaaaaaaaaaee";

    #[test]
    fn the_reader_has_a_whole_and_a_files_only_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.torrent");
        std::fs::write(&path, TORRENT).unwrap();
        let (meta, bytes) = Metainfo::load_with_bytes(&path).unwrap();
        assert_eq!(bytes, TORRENT);
        assert_eq!((meta.name.as_str(), meta.total_length), ("a", 5));
        assert_eq!(Metainfo::load(&path).unwrap(), meta);
        assert_eq!(Metainfo::from_file(&path).unwrap(), meta);
        let files = Metainfo::load_files(&path).unwrap();
        assert_eq!(files, meta.files);
    }

    #[test]
    fn reader_errors_are_sentences_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.torrent");
        for e in [
            Metainfo::load(&missing).unwrap_err(),
            Metainfo::load_files(&missing).unwrap_err(),
        ] {
            assert!(e.contains("missing.torrent"), "{e}");
            assert!(!e.contains("not a valid torrent"), "{e}");
        }
        let bad = dir.path().join("bad.torrent");
        std::fs::write(&bad, b"d4:infoi1ee").unwrap();
        for e in [
            Metainfo::load_with_bytes(&bad).unwrap_err(),
            Metainfo::load_files(&bad).unwrap_err(),
        ] {
            assert!(
                e.starts_with(&format!("{}: not a valid torrent: ", bad.display())),
                "{e}"
            );
        }
    }
}
