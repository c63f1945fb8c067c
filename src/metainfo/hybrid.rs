//! The v2 side of a hybrid torrent (BEP 52 `meta version` 2 beside the v1 `pieces`), checked
//! against its v1 side. A v2 side that describes other files, other lengths or another
//! layout would make the v2 info hash (announced, shown, used by v2 peers) name something
//! else than what is downloaded, so such a torrent is refused with the reason, as
//! libtorrent refuses it (`v2_mismatching_metadata`, `v2_invalid_file`).
//!
//! What must hold, each a [`HybridError`]:
//! - the v2 side on its own, as [`super::v2`] checks it (the `file tree`, the piece length,
//!   `piece layers`);
//! - the v2 files, in tree order, are the v1 files (padding left out), in the same order,
//!   with the same path components (`path` or `path.utf-8`; for a single-file torrent the
//!   tree's one file is the `name`) and the same lengths;
//! - on the v1 side every non-empty file starts on a piece boundary (BEP 47 padding files in
//!   between), as the v2 side lays them out;
//!
//! Both sides are verified when the torrent downloads: a piece counts when its SHA-1 and its
//! v2 Merkle hash both match.
//!
//! Paths in messages are escaped (control characters) and cut, safe for a terminal.

use super::FileInfo;
use super::v2::{self, V2Error, shown};
use crate::bencode::{Dict, Value};
use crate::piece::V2Hashes;

/// Why the v2 side of a hybrid torrent was refused. Each `Display` names the file or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HybridError {
    /// The v2 side is malformed on its own ([`V2Error`]).
    #[error(transparent)]
    V2(#[from] V2Error),
    /// The two sides list a different number of files (padding left out).
    #[error(
        "the v1 side lists {v1} files but the v2 side {v2} (the v1 and v2 file lists do not match)"
    )]
    FileCount {
        /// Real (non-padding) files on the v1 side.
        v1: usize,
        /// Files in the v2 `file tree`.
        v2: usize,
    },
    /// File `index` has another path on each side.
    #[error("file {index} is '{v1}' on the v1 side but '{v2}' on the v2 side")]
    Path {
        /// Index among the real files, from 0.
        index: usize,
        /// Its v1 path, escaped.
        v1: String,
        /// Its v2 path, escaped.
        v2: String,
    },
    /// A file has another length on each side.
    #[error("'{path}' is {v1} bytes on the v1 side but {v2} on the v2 side")]
    Length {
        /// The file, escaped.
        path: String,
        /// Its v1 length, bytes.
        v1: u64,
        /// Its v2 length, bytes.
        v2: u64,
    },
    /// A non-empty v1 file does not start on a piece boundary.
    #[error(
        "'{path}' starts at byte {offset} on the v1 side, not on a piece boundary as the v2 \
         side lays it out (padding files missing or wrong)"
    )]
    Misaligned {
        /// The file, escaped.
        path: String,
        /// Its offset in the v1 payload, bytes.
        offset: u64,
    },
}

/// The raw path components of v1 entry `index` of a multi-file `files` list: `path` and, if
/// present, `path.utf-8`.
fn v1_paths<'a>(list: &[Value<'a>], index: usize) -> Vec<Vec<&'a [u8]>> {
    let Some(d) = list.get(index).and_then(Value::as_dict) else {
        return Vec::new();
    };
    [&b"path"[..], b"path.utf-8"]
        .iter()
        .filter_map(|k| d.get_list(k))
        .map(|l| l.iter().filter_map(Value::as_bytes).collect())
        .collect()
}

/// Check the v2 side of a hybrid: `info` (with `meta version` 2), `top` (the torrent's top
/// dictionary, for `piece layers`), the v1 `files` as parsed, the piece length and whether
/// the v1 side is multi-file. See the module documentation for what must hold.
///
/// # Errors
/// The first [`HybridError`] found; else the v2 hashes (roots, and the piece layers given).
pub(crate) fn check(
    info: &Dict<'_>,
    top: &Dict<'_>,
    files: &[FileInfo],
    piece_length: u32,
    multi_file: bool,
) -> Result<V2Hashes, HybridError> {
    let v2 = v2::tree_files(info)?;
    v2::check_piece_length(piece_length)?;

    // the v1 files with their raw paths (all the accepted spellings), padding left out
    let list = info.get_list(b"files").unwrap_or_default();
    let names: Vec<&[u8]> = [&b"name"[..], b"name.utf-8"]
        .iter()
        .filter_map(|k| info.get_bytes(k))
        .collect();
    let v1: Vec<(usize, &FileInfo)> = files.iter().enumerate().filter(|(_, f)| !f.pad).collect();
    if v1.len() != v2.len() {
        return Err(HybridError::FileCount {
            v1: v1.len(),
            v2: v2.len(),
        });
    }
    for (n, ((index, f), w)) in v1.iter().zip(&v2).enumerate() {
        let spellings: Vec<Vec<&[u8]>> = if multi_file {
            v1_paths(list, *index)
        } else {
            names.iter().map(|n| vec![*n]).collect()
        };
        if !spellings.contains(&w.path) {
            let v1_shown = spellings.first().map_or_else(String::new, |p| shown(p));
            return Err(HybridError::Path {
                index: n,
                v1: v1_shown,
                v2: shown(&w.path),
            });
        }
        if f.length != w.length {
            return Err(HybridError::Length {
                path: shown(&w.path),
                v1: f.length,
                v2: w.length,
            });
        }
        if f.length > 0 && f.offset % u64::from(piece_length) != 0 {
            return Err(HybridError::Misaligned {
                path: shown(&w.path),
                offset: f.offset,
            });
        }
    }
    let indices: Vec<usize> = v1.iter().map(|(i, _)| *i).collect();
    Ok(v2::hashes(top, &v2, &indices, files, piece_length)?)
}
