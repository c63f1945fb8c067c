//! The v2 side of a hybrid torrent (BEP 52 `meta version` 2 beside the v1 `pieces`), checked
//! against its v1 side. ratorrent downloads a hybrid through its v1 side; a v2 side that
//! describes other files, other lengths or another layout would make the v2 info hash
//! (announced, shown, used by v2 peers) name something else than what is downloaded, so
//! such a torrent is refused with the reason, as libtorrent refuses it
//! (`v2_mismatching_metadata`, `v2_invalid_file`).
//!
//! What must hold, each a [`HybridError`]:
//! - the `file tree` is a tree of dictionaries whose leaves are files: a component mapped to
//!   a dictionary holding only the key `""`, itself holding `length` (≥ 0) and, for a
//!   non-empty file, a 32-byte non-zero `pieces root`; no padding files (`attr` p), no
//!   empty folders, no empty or repeated names;
//! - the piece length is a power of two of at least 16 KiB (BEP 52);
//! - the v2 files, in tree order, are the v1 files (padding left out), in the same order,
//!   with the same path components (`path` or `path.utf-8`; for a single-file torrent the
//!   tree's one file is the `name`) and the same lengths;
//! - on the v1 side every non-empty file starts on a piece boundary (BEP 47 padding files in
//!   between), as the v2 side lays them out;
//! - `piece layers` (beside `info`), when present: a dictionary of strings; the layer of a
//!   file larger than one piece holds 32 bytes per piece of that file and hashes up to its
//!   `pieces root` (a layer may be missing: peers can send it). Layers for unknown roots are
//!   ignored.
//!
//! Paths in messages are escaped (control characters) and cut, safe for a terminal.

use sha2::{Digest, Sha256};

use super::FileInfo;
use crate::bencode::{Dict, Value};
use crate::piece::{BLOCK_SIZE, Geometry};

/// Why the v2 side of a hybrid torrent was refused. Each `Display` names the file or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HybridError {
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
    /// `piece layers` or one of its layers is malformed or disagrees with a file.
    #[error("'piece layers': {why}")]
    PieceLayers {
        /// What is wrong, naming the file.
        why: String,
    },
}

/// One file of the v2 `file tree`.
#[derive(Debug)]
struct V2File<'a> {
    path: Vec<&'a [u8]>,
    length: u64,
    root: Option<&'a [u8]>,
}

/// Longest path shown in a message, in characters.
const SHOWN_PATH_CHARS: usize = 120;

/// `parts` joined by `/`, lossily decoded, escaped by [`crate::untrusted::escape`], cut to
/// [`SHOWN_PATH_CHARS`].
fn shown(parts: &[&[u8]]) -> String {
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

/// The v2 files of `tree` in tree order (keys sorted as bencode sorts them), or why the tree
/// is not one. Recursion is bounded by the bencode decoder's nesting limit.
fn walk<'a>(
    tree: &Dict<'a>,
    prefix: &mut Vec<&'a [u8]>,
    out: &mut Vec<V2File<'a>>,
) -> Result<(), HybridError> {
    let invalid = |prefix: &[&[u8]], why| HybridError::InvalidFile {
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
fn file<'a>(leaf: &Dict<'a>, path: &[&'a [u8]]) -> Result<V2File<'a>, &'static str> {
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
    Ok(V2File {
        path: path.to_vec(),
        length,
        root: root.filter(|_| length > 0 && !symlink),
    })
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
/// The first [`HybridError`] found.
pub(crate) fn check(
    info: &Dict<'_>,
    top: &Dict<'_>,
    files: &[FileInfo],
    piece_length: u32,
    multi_file: bool,
) -> Result<(), HybridError> {
    let tree = info.get_dict(b"file tree").ok_or(HybridError::NoFileTree)?;
    if piece_length < BLOCK_SIZE || !piece_length.is_power_of_two() {
        return Err(HybridError::PieceLength(piece_length));
    }
    let mut v2 = Vec::new();
    walk(tree, &mut Vec::new(), &mut v2)?;

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
    check_layers(top, &v2, piece_length)
}

/// `piece layers`, when present, against the files' lengths and roots.
fn check_layers(top: &Dict<'_>, v2: &[V2File<'_>], piece_length: u32) -> Result<(), HybridError> {
    let Some(layers) = top.get(b"piece layers") else {
        return Ok(()); // a torrent made from fetched metadata has none: peers send them
    };
    let bad = |why: String| HybridError::PieceLayers { why };
    let Some(layers) = layers.as_dict() else {
        return Err(bad("not a dictionary".to_owned()));
    };
    let pl = u64::from(piece_length);
    for w in v2.iter().filter(|w| w.length > pl) {
        let Some(root) = w.root else { continue };
        let Some(layer) = layers.get(root) else {
            continue; // missing: it can come from peers
        };
        let Some(layer) = layer.as_bytes() else {
            return Err(bad(format!(
                "the layer of '{}' is not a string",
                shown(&w.path)
            )));
        };
        let pieces = Geometry::pieces_for(w.length, piece_length).unwrap_or(0);
        if layer.len() as u64 != 32 * pieces {
            return Err(bad(format!(
                "the layer of '{}' is {} bytes, but its {} bytes in pieces of {pl} need {} \
                 ({pieces} hashes of 32 bytes)",
                shown(&w.path),
                layer.len(),
                w.length,
                32 * pieces
            )));
        }
        if merkle_root(layer, piece_length) != root {
            return Err(bad(format!(
                "the layer of '{}' does not hash to its 'pieces root'",
                shown(&w.path)
            )));
        }
    }
    Ok(())
}

/// The root of the Merkle tree (SHA-256, BEP 52) whose piece layer is `layer` (32-byte
/// hashes, one per piece of `piece_length` bytes, a power of two ≥ 16 KiB): the layer is
/// padded to a power of two with the hash of a piece of zero leaves.
fn merkle_root(layer: &[u8], piece_length: u32) -> [u8; 32] {
    let pair = |a: &[u8], b: &[u8]| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(a);
        h.update(b);
        h.finalize().into()
    };
    // the hash of a piece whose 16 KiB leaves are all padding (32 zero bytes each)
    let mut pad = [0u8; 32];
    for _ in 0..(piece_length / BLOCK_SIZE).trailing_zeros() {
        pad = pair(&pad, &pad);
    }
    let mut level: Vec<[u8; 32]> = layer
        .chunks_exact(32)
        .map(|c| c.try_into().unwrap_or([0; 32]))
        .collect();
    if level.is_empty() {
        return pad;
    }
    while level.len() > 1 {
        if level.len() % 2 == 1 {
            level.push(pad);
        }
        level = level.chunks_exact(2).map(|p| pair(&p[0], &p[1])).collect();
        pad = pair(&pad, &pad);
    }
    level[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(parts: &[&[u8]]) -> [u8; 32] {
        let mut h = Sha256::new();
        parts.iter().for_each(|p| h.update(p));
        h.finalize().into()
    }

    /// The Merkle root of `data` computed the long way, from 16 KiB leaves padded with zero
    /// hashes to a power of two.
    fn root_of(data: &[u8]) -> [u8; 32] {
        let mut level: Vec<[u8; 32]> = data
            .chunks(BLOCK_SIZE as usize)
            .map(|c| sha(&[c]))
            .collect();
        level.resize(level.len().next_power_of_two(), [0; 32]);
        while level.len() > 1 {
            level = level.chunks(2).map(|p| sha(&[&p[0], &p[1]])).collect();
        }
        level[0]
    }

    /// The piece layer of `data`: the root of each piece's subtree (a short last piece
    /// padded with zero leaves to a whole piece).
    fn layer_of(data: &[u8], pl: usize) -> Vec<u8> {
        data.chunks(pl)
            .flat_map(|piece| {
                let mut leaves: Vec<[u8; 32]> = piece
                    .chunks(BLOCK_SIZE as usize)
                    .map(|c| sha(&[c]))
                    .collect();
                leaves.resize(pl / BLOCK_SIZE as usize, [0; 32]);
                while leaves.len() > 1 {
                    leaves = leaves.chunks(2).map(|p| sha(&[&p[0], &p[1]])).collect();
                }
                leaves[0]
            })
            .collect()
    }

    #[test]
    fn a_layer_hashes_up_to_the_files_root() {
        for (len, pl) in [
            (3 * 16_384 + 5, 16_384usize),
            (5 * 32_768, 32_768),
            (9 * 65_536 + 1, 65_536),
            (2 * 65_536, 65_536),
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
            let layer = layer_of(&data, pl);
            assert_eq!(
                merkle_root(&layer, pl as u32),
                root_of(&data),
                "{len} bytes in pieces of {pl}"
            );
            let mut wrong = layer.clone();
            wrong[0] ^= 1;
            assert_ne!(merkle_root(&wrong, pl as u32), root_of(&data));
        }
    }

    #[test]
    fn paths_in_messages_are_escaped_and_cut() {
        assert_eq!(shown(&[b"a", b"b\x1b[2J"]), "a/b\\u{1b}[2J");
        let long = vec![b'x'; 500];
        let s = shown(&[&long]);
        assert_eq!(s.chars().count(), SHOWN_PATH_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
