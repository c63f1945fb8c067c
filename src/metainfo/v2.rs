//! The v2 side of a torrent (BEP 52): the `file tree`, `piece layers`, and the file list of
//! a v2-only torrent.
//!
//! What must hold, each a [`V2Error`]:
//! - the `file tree` is a tree of dictionaries whose leaves are files: a component mapped to
//!   a dictionary holding only the key `""`, itself holding `length` (≥ 0) and, for a
//!   non-empty file, a 32-byte non-zero `pieces root`; no padding files (`attr` p), no
//!   empty folders, no empty or repeated names, no `.` or `..` name (it could only be meant
//!   to leave its folder; other names are sanitised as v1 paths are, [`super::path`]);
//! - the piece length is a power of two of at least 16 KiB;
//! - `piece layers` (beside `info`), when present: a dictionary of strings; the layer of a
//!   file larger than one piece holds 32 bytes per piece of that file and hashes up to its
//!   `pieces root`. A layer may be missing (a torrent made from a magnet link's metadata:
//!   peers send them, BEP 52 hash request); layers for unknown roots are ignored.
//!
//! A v2-only torrent's payload is laid out as v2 wants it: each file starts a piece, so a
//! padding file (BEP 47, never on disk) follows every file whose length is not a multiple
//! of the piece length, the last one included (so every piece has the piece length, as
//! libtorrent 2.0.8 and later see it; the padding is zeros and outside every file's Merkle
//! tree). Its 20-byte identity on the wire (handshakes, trackers, the DHT) is the SHA-256
//! info hash cut to 20 bytes.
//!
//! Paths in messages are escaped (control characters) and cut, safe for a terminal.

use std::path::PathBuf;

use super::FileInfo;
use super::path::{PLACEHOLDER, sanitize_component_noting};
use super::path_change::{PathChange, PathChanges};
use crate::bencode::{Dict, Value};
use crate::piece::merkle::{self, Hash32};
use crate::piece::{BLOCK_SIZE, Geometry, V2File, V2Hashes};

/// Why the v2 side of a torrent was refused. Each `Display` names the file or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum V2Error {
    /// `meta version` is 2 but there is no `file tree` dictionary.
    #[error("'meta version' is 2 but there is no 'file tree' dictionary")]
    NoFileTree,
    /// A `file tree` entry is not a valid file or folder.
    #[error("v2 'file tree' entry '{path}': {why}")]
    InvalidFile {
        /// The entry's path, `/`-separated, escaped.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The piece length is not a power of two of at least 16 KiB.
    #[error("the v2 side needs a piece length that is a power of two of at least 16 KiB, not {0}")]
    PieceLength(u32),
    /// `piece layers` or one of its layers is malformed or disagrees with a file.
    #[error("'piece layers': {why}")]
    PieceLayers {
        /// What is wrong, naming the file.
        why: String,
    },
    /// The `file tree` holds no data (only empty files): nothing to share.
    #[error("the v2 'file tree' holds no data (0 bytes)")]
    Empty,
    /// More pieces than fit in a `u32`, or lengths past 2^64 bytes.
    #[error("the v2 'file tree' is too large (more than 2^32 - 1 pieces or 2^64 bytes)")]
    TooLarge,
}

/// One file of the v2 `file tree`, as found.
#[derive(Debug)]
pub(crate) struct TreeFile<'a> {
    /// Its path components below the torrent's folder.
    pub path: Vec<&'a [u8]>,
    /// Length in bytes (0 for a symlink).
    pub length: u64,
    /// `pieces root`, for a file with data.
    pub root: Option<&'a [u8]>,
    /// A symlink entry (`attr` l), with its `symlink path`.
    pub symlink: Option<Vec<&'a [u8]>>,
}

/// Longest path shown in a message, in characters.
pub(crate) const SHOWN_PATH_CHARS: usize = 120;

/// `parts` joined by `/`, lossily decoded, escaped by [`crate::untrusted::escape`], cut to
/// [`SHOWN_PATH_CHARS`].
pub(crate) fn shown(parts: &[&[u8]]) -> String {
    let joined: Vec<String> = parts
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let text = crate::untrusted::escape(&joined.join("/")).into_owned();
    match text.char_indices().nth(SHOWN_PATH_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The files of `info`'s `file tree` in tree order (keys sorted as bencode sorts them).
///
/// # Errors
/// [`V2Error::NoFileTree`], or the first entry that is not a file or folder.
pub(crate) fn tree_files<'a>(info: &Dict<'a>) -> Result<Vec<TreeFile<'a>>, V2Error> {
    let tree = info.get_dict(b"file tree").ok_or(V2Error::NoFileTree)?;
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// The files of `tree`, appended to `out`. Recursion is bounded by the bencode decoder's
/// nesting limit.
fn walk<'a>(
    tree: &Dict<'a>,
    prefix: &mut Vec<&'a [u8]>,
    out: &mut Vec<TreeFile<'a>>,
) -> Result<(), V2Error> {
    let invalid = |prefix: &[&[u8]], why| V2Error::InvalidFile {
        path: shown(prefix),
        why,
    };
    if tree.entries.is_empty() {
        return Err(invalid(prefix, "an empty folder"));
    }
    let mut entries: Vec<&(&[u8], Value<'a>)> = tree.entries.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    if entries.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(invalid(prefix, "a name appears twice in one folder"));
    }
    for (name, value) in entries {
        prefix.push(name);
        if name.is_empty() {
            return Err(invalid(prefix, "an empty name"));
        }
        if *name == b".." || *name == b"." {
            return Err(invalid(
                prefix,
                "a '.' or '..' name (it would leave its folder): refused",
            ));
        }
        let Some(node) = value.as_dict() else {
            return Err(invalid(prefix, "not a dictionary"));
        };
        match node.get(b"") {
            Some(leaf) => {
                if node.entries.len() != 1 {
                    return Err(invalid(prefix, "a file ('' key) that is also a folder"));
                }
                let Some(leaf) = leaf.as_dict() else {
                    return Err(invalid(prefix, "its '' entry is not a dictionary"));
                };
                out.push(file(leaf, prefix).map_err(|why| invalid(prefix, why))?);
            }
            None => walk(node, prefix, out)?,
        }
        prefix.pop();
    }
    Ok(())
}

/// The file described by a leaf dictionary (the value of a `""` key) at `path`.
fn file<'a>(leaf: &Dict<'a>, path: &[&'a [u8]]) -> Result<TreeFile<'a>, &'static str> {
    let attr = leaf.get_bytes(b"attr").unwrap_or_default();
    if attr.contains(&b'p') {
        return Err("a padding file (attr p) on the v2 side");
    }
    let symlink = attr.contains(&b'l');
    let length = match leaf.get(b"length") {
        Some(Value::Int(n)) => u64::try_from(*n).map_err(|_| "a negative 'length'")?,
        Some(_) => return Err("'length' is not an integer"),
        None if symlink => 0,
        None => return Err("no 'length'"),
    };
    let root = match leaf.get(b"pieces root") {
        Some(Value::Bytes(r)) => Some(*r),
        Some(_) => return Err("'pieces root' is not a string"),
        None => None,
    };
    if length > 0 && !symlink {
        match root {
            None => return Err("no 'pieces root' for a non-empty file"),
            Some(r) if r.len() != 32 => return Err("a 'pieces root' that is not 32 bytes"),
            Some(r) if r.iter().all(|&b| b == 0) => return Err("a 'pieces root' of zeros"),
            Some(_) => {}
        }
    }
    let target = symlink.then(|| {
        leaf.get_list(b"symlink path")
            .map(|l| l.iter().filter_map(Value::as_bytes).collect())
            .unwrap_or_default()
    });
    Ok(TreeFile {
        path: path.to_vec(),
        length: if symlink { 0 } else { length },
        root: root.filter(|_| length > 0 && !symlink),
        symlink: target,
    })
}

/// Check the piece length for the v2 side: a power of two of at least 16 KiB.
///
/// # Errors
/// [`V2Error::PieceLength`].
pub(crate) fn check_piece_length(piece_length: u32) -> Result<(), V2Error> {
    if piece_length < BLOCK_SIZE || !piece_length.is_power_of_two() {
        return Err(V2Error::PieceLength(piece_length));
    }
    Ok(())
}

/// The v2 hashes of the tree files `v2`, each the real file `files[index]` (already laid out
/// from piece boundaries), with their layers from `top`'s `piece layers` checked.
///
/// # Errors
/// A malformed or wrong `piece layers` ([`V2Error::PieceLayers`]).
pub(crate) fn hashes(
    top: &Dict<'_>,
    v2: &[TreeFile<'_>],
    indices: &[usize],
    files: &[FileInfo],
    piece_length: u32,
) -> Result<V2Hashes, V2Error> {
    let bad = |why: String| V2Error::PieceLayers { why };
    let layers = match top.get(b"piece layers") {
        None => None, // a torrent made from fetched metadata has none: peers send them
        Some(l) => Some(
            l.as_dict()
                .ok_or_else(|| bad("not a dictionary".to_owned()))?,
        ),
    };
    let pl = u64::from(piece_length);
    let mut out = Vec::new();
    for (w, &index) in v2.iter().zip(indices) {
        let Some(root) = w.root else { continue };
        let mut r: Hash32 = [0; 32];
        r.copy_from_slice(root);
        let f = &files[index];
        let mut vf = V2File {
            file: index,
            first_piece: u32::try_from(f.offset / pl).map_err(|_| V2Error::TooLarge)?,
            length: f.length,
            root: r,
            layer: None,
        };
        if vf.needs_layer(piece_length)
            && let Some(layer) = layers.and_then(|d| d.get(root))
        {
            vf.layer = Some(check_layer(layer, &w.path, &vf, piece_length)?);
        }
        out.push(vf);
    }
    Ok(V2Hashes {
        piece_length,
        files: out,
    })
}

/// One file's layer from `piece layers`, checked against its length and root.
fn check_layer(
    layer: &Value<'_>,
    path: &[&[u8]],
    f: &V2File,
    piece_length: u32,
) -> Result<Box<[Hash32]>, V2Error> {
    let bad = |why: String| V2Error::PieceLayers { why };
    let Some(layer) = layer.as_bytes() else {
        return Err(bad(format!(
            "the layer of '{}' is not a string",
            shown(path)
        )));
    };
    let pieces = u64::from(f.piece_count(piece_length));
    if layer.len() as u64 != 32 * pieces {
        return Err(bad(format!(
            "the layer of '{}' is {} bytes, but its {} bytes in pieces of {piece_length} need \
             {} ({pieces} hashes of 32 bytes)",
            shown(path),
            layer.len(),
            f.length,
            32 * pieces
        )));
    }
    let hashes: Box<[Hash32]> = layer
        .chunks_exact(32)
        .map(|c| c.try_into().unwrap_or([0; 32]))
        .collect();
    let level = (piece_length / BLOCK_SIZE).trailing_zeros();
    let width = 1u64 << (f.levels() - level);
    if merkle::root_of(&hashes, level, width) != f.root {
        return Err(bad(format!(
            "the layer of '{}' does not hash to its 'pieces root'",
            shown(path)
        )));
    }
    Ok(hashes)
}

/// A v2-only torrent's files from its tree: sanitised paths under `name_disk` (a tree of one
/// file at its top is a single-file torrent named `name`), a padding file after each file
/// that does not end on a piece boundary (the last one too), symlink entries kept (no
/// bytes).
/// Returns the files, whether the torrent is multi-file, the index in the file list of
/// each tree file, and the symlink targets to resolve.
///
/// # Errors
/// [`V2Error::Empty`] for a tree without data, [`V2Error::TooLarge`].
#[allow(clippy::type_complexity)]
pub(crate) fn v2_only_files(
    tree: &[TreeFile<'_>],
    name: &str,
    name_disk: &str,
    name_changes: PathChanges,
    piece_length: u32,
) -> Result<(Vec<FileInfo>, bool, Vec<usize>, Vec<(usize, Vec<String>)>), V2Error> {
    let single = tree.len() == 1 && tree[0].path.len() == 1 && tree[0].symlink.is_none();
    let pl = u64::from(piece_length);
    let mut files = Vec::with_capacity(tree.len() * 2);
    let mut indices = Vec::with_capacity(tree.len());
    let mut targets = Vec::new();
    let mut offset = 0u64;
    let last_with_data = tree.iter().rposition(|f| f.length > 0);
    for (i, t) in tree.iter().enumerate() {
        let (path, display_path, changes) = if single {
            (
                PathBuf::from(name_disk),
                vec![name.to_owned()],
                name_changes,
            )
        } else {
            let mut changes = PathChanges::NONE;
            let mut path = PathBuf::from(name_disk);
            path.extend(
                t.path
                    .iter()
                    .filter_map(|c| sanitize_component_noting(c, &mut changes)),
            );
            if path.components().count() == 1 {
                changes.insert(PathChange::Nameless);
                path.push(PLACEHOLDER);
            }
            let shown = t
                .path
                .iter()
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            (path, shown, changes)
        };
        if let Some(target) = &t.symlink {
            let target: Vec<String> = target
                .iter()
                .filter_map(|c| super::path::sanitize_component(c))
                .collect();
            if !target.is_empty() {
                targets.push((files.len(), target));
            }
        }
        indices.push(files.len());
        files.push(FileInfo {
            path,
            display_path,
            length: t.length,
            offset,
            pad: false,
            symlink: t.symlink.is_some(),
            symlink_target: None,
            changes,
        });
        offset = offset.checked_add(t.length).ok_or(V2Error::TooLarge)?;
        let tail = offset % pl;
        // the last file with data is padded too ("tail padding", as libtorrent 2.0.8 and
        // later lay a v2 torrent out): its last piece is a whole piece on the wire, so
        // requests for it are the same size on both sides
        if tail != 0 && last_with_data.is_some_and(|l| i <= l) {
            let length = pl - tail;
            files.push(FileInfo {
                path: PathBuf::from(name_disk)
                    .join(".pad")
                    .join(length.to_string()),
                display_path: Vec::new(),
                length,
                offset,
                pad: true,
                symlink: false,
                symlink_target: None,
                changes: PathChanges::NONE,
            });
            offset = offset.checked_add(length).ok_or(V2Error::TooLarge)?;
        }
    }
    if offset == 0 {
        return Err(V2Error::Empty);
    }
    let pieces = Geometry::pieces_for(offset, piece_length).unwrap_or(0);
    if u32::try_from(pieces).is_err() {
        return Err(V2Error::TooLarge);
    }
    Ok((files, !single, indices, targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_messages_are_escaped_and_cut() {
        assert_eq!(shown(&[b"a", b"b\x1b[2J"]), "a/b\\u{1b}[2J");
        let long = vec![b'x'; 500];
        let s = shown(&[&long]);
        assert_eq!(s.chars().count(), SHOWN_PATH_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
