//! Bencoding a new torrent: the v1 `files` (or `length`) and `pieces`, the v2 `file tree`
//! and `piece layers` (BEP 52), or both for a hybrid, keys sorted (canonical bencode, so
//! the same input gives the same bytes).

use std::collections::BTreeMap;

use bendy::encoding::{AsString, Encoder, Error, SingleItemEncoder};

use super::hash::{FileTree, Hashed, Segment};
use super::{SourceFile, TorrentBuilder};
use crate::metainfo::MetaVersion;
use crate::piece::merkle::Hash32;

/// A node of the v2 `file tree`.
enum Node<'a> {
    File {
        length: u64,
        root: Option<&'a Hash32>,
    },
    Folder(BTreeMap<&'a [u8], Node<'a>>),
}

/// What [`encode`] needs besides the builder's options.
pub(super) struct Parts<'a> {
    pub name: &'a str,
    pub multi_file: bool,
    pub files: &'a [SourceFile],
    pub segments: &'a [Segment],
    pub piece_length: u32,
    pub hashed: &'a Hashed,
}

fn emit_node(e: SingleItemEncoder, node: &Node<'_>) -> Result<(), Error> {
    match node {
        Node::Folder(children) => e.emit_dict(|mut d| {
            for (k, child) in children {
                d.emit_pair_with(k, |e| emit_node(e, child))?;
            }
            Ok(())
        }),
        Node::File { length, root } => e.emit_dict(|mut d| {
            d.emit_pair_with(b"", |e| {
                e.emit_dict(|mut leaf| {
                    leaf.emit_pair(b"length", *length)?;
                    if let Some(r) = root {
                        leaf.emit_pair(b"pieces root", AsString(&r[..]))?;
                    }
                    Ok(())
                })
            })
        }),
    }
}

/// The v2 `file tree` of `files` (their paths below the torrent's folder; a single-file
/// torrent's one file under its name).
fn file_tree<'a>(parts: &'a Parts<'a>) -> Node<'a> {
    let mut top: BTreeMap<&[u8], Node> = BTreeMap::new();
    'files: for (i, f) in parts.files.iter().enumerate() {
        let tree = parts.hashed.v2.get(i).and_then(Option::as_ref);
        let leaf = Node::File {
            length: f.length,
            root: tree.map(|t: &FileTree| &t.root),
        };
        if !parts.multi_file {
            top.insert(parts.name.as_bytes(), leaf);
            continue;
        }
        let mut dir = &mut top;
        let (last, folders) = match f.components.split_last() {
            Some(x) => x,
            None => continue,
        };
        for c in folders {
            let entry = dir
                .entry(c.as_bytes())
                .or_insert_with(|| Node::Folder(BTreeMap::new()));
            dir = match entry {
                Node::Folder(d) => d,
                // a file and a folder of one name cannot both come from a file system walk
                Node::File { .. } => continue 'files,
            };
        }
        dir.insert(last.as_bytes(), leaf);
    }
    Node::Folder(top)
}

/// Bencode the torrent with keys in sorted order.
pub(super) fn encode(b: &TorrentBuilder, parts: &Parts<'_>) -> Result<Vec<u8>, Error> {
    let v1 = b.version != MetaVersion::V2;
    let v2 = b.version != MetaVersion::V1;
    let pieces: Vec<u8> = parts.hashed.v1.iter().flatten().copied().collect();
    let tree = v2.then(|| file_tree(parts));
    let info = |e: SingleItemEncoder| {
        e.emit_dict(|mut d| {
            if let Some(tree) = &tree {
                d.emit_pair_with(b"file tree", |e| emit_node(e, tree))?;
            }
            if v1 && parts.multi_file {
                d.emit_pair_with(b"files", |e| {
                    e.emit_list(|l| {
                        for s in parts.segments {
                            match s.file {
                                Some(i) => l.emit_dict(|mut fd| {
                                    fd.emit_pair(b"length", s.length)?;
                                    fd.emit_pair(b"path", &parts.files[i].components)
                                })?,
                                None => l.emit_dict(|mut fd| {
                                    fd.emit_pair(b"attr", "p")?;
                                    fd.emit_pair(b"length", s.length)?;
                                    fd.emit_pair(
                                        b"path",
                                        vec![".pad".to_owned(), s.length.to_string()],
                                    )
                                })?,
                            }
                        }
                        Ok(())
                    })
                })?;
            } else if v1 {
                let length = parts.files.first().map_or(0, |f| f.length);
                d.emit_pair(b"length", length)?;
            }
            if v2 {
                d.emit_pair(b"meta version", 2u8)?;
            }
            d.emit_pair(b"name", parts.name)?;
            d.emit_pair(b"piece length", parts.piece_length)?;
            if v1 {
                d.emit_pair(b"pieces", AsString(&pieces))?;
            }
            if b.private {
                d.emit_pair(b"private", 1u8)?;
            }
            if let Some(src) = &b.source_tag {
                d.emit_pair(b"source", src)?;
            }
            Ok(())
        })
    };
    // BEP 52: a layer per file longer than one piece, keyed by its root
    let layers: BTreeMap<&Hash32, Vec<u8>> = parts
        .hashed
        .v2
        .iter()
        .flatten()
        .filter_map(|t| {
            t.layer
                .as_ref()
                .map(|l| (&t.root, l.iter().flatten().copied().collect()))
        })
        .collect();
    let all_urls = b.trackers.iter().map(Vec::len).sum::<usize>();
    let mut enc = Encoder::new();
    enc.emit_dict(|mut d| {
        if let Some(first) = b.trackers.first().and_then(|t| t.first()) {
            d.emit_pair(b"announce", first)?;
        }
        if all_urls > 1 {
            d.emit_pair(b"announce-list", &b.trackers)?;
        }
        if let Some(c) = &b.comment {
            d.emit_pair(b"comment", c)?;
        }
        if let Some(by) = &b.created_by {
            d.emit_pair(b"created by", by)?;
        }
        if let Some(date) = b.creation_date {
            d.emit_pair(b"creation date", date)?;
        }
        d.emit_pair_with(b"info", info)?;
        if v2 {
            d.emit_pair_with(b"piece layers", |e| {
                e.emit_dict(|mut ld| {
                    for (root, layer) in &layers {
                        ld.emit_pair(&root[..], AsString(layer))?;
                    }
                    Ok(())
                })
            })?;
        }
        if !b.web_seeds.is_empty() {
            d.emit_pair(b"url-list", &b.web_seeds)?;
        }
        Ok(())
    })?;
    enc.get_output()
}
