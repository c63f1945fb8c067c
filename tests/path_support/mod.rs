//! Helpers shared by the `tests/path_*.rs` test crates (`mod path_support;`): what
//! libtorrent 2.0.8 (Debian's python3-libtorrent) makes of a .torrent, and snapshots of a
//! folder tree for "nothing was written outside" checks.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value as Json;

/// What libtorrent made of one .torrent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LtView {
    /// `lt.torrent_info` refused it, with this message.
    Refused(String),
    /// It loaded: the sanitised name and files.
    Loaded { name: String, files: Vec<LtFile> },
}

/// One file as libtorrent lists it (`file_storage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LtFile {
    /// Path relative to the save folder, `/`-separated, top folder included.
    pub path: String,
    /// Size in bytes (0 for symlinks).
    pub size: u64,
    /// A padding file.
    pub pad: bool,
    /// The symlink target (relative to the save folder) of a symlink entry.
    pub symlink: Option<String>,
}

const LT_VIEW: &str = r#"
import json, sys
import libtorrent as lt
for p in sys.argv[1:]:
    try:
        ti = lt.torrent_info(p)
    except Exception as e:
        print(json.dumps({"file": p, "error": str(e)}))
        continue
    fs = ti.files()
    files = []
    for i in range(fs.num_files()):
        flags = int(fs.file_flags(i))
        files.append({
            "path": fs.file_path(i),
            "size": fs.file_size(i),
            "pad": bool(flags & 1),
            "symlink": fs.symlink(i) if flags & 8 else None,
        })
    print(json.dumps({"file": p, "name": ti.name(), "files": files}))
"#;

/// Panic with an install hint unless `/usr/bin/python3 -c "import libtorrent"` works
/// (tests needing libtorrent fail, never skip).
pub fn require_libtorrent() {
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import libtorrent"])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3-libtorrent is not installed: apt-get install -y python3-libtorrent"
    );
}

/// libtorrent 2.0.8's view of each file in `torrents` (one python process for all).
///
/// # Panics
/// When python3-libtorrent is missing or the script fails.
pub fn lt_view(torrents: &[PathBuf]) -> BTreeMap<PathBuf, LtView> {
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(LT_VIEW)
        .args(torrents)
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3");
    assert!(
        out.status.success(),
        "libtorrent view failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut views = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Json = serde_json::from_str(line).unwrap();
        let file = PathBuf::from(v["file"].as_str().unwrap());
        let view = if let Some(e) = v.get("error") {
            LtView::Refused(e.as_str().unwrap().to_owned())
        } else {
            LtView::Loaded {
                name: v["name"].as_str().unwrap().to_owned(),
                files: v["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| LtFile {
                        path: f["path"].as_str().unwrap().to_owned(),
                        size: f["size"].as_u64().unwrap(),
                        pad: f["pad"].as_bool().unwrap(),
                        symlink: f["symlink"].as_str().map(str::to_owned),
                    })
                    .collect(),
            }
        };
        views.insert(file, view);
    }
    assert_eq!(views.len(), torrents.len(), "one answer per torrent");
    views
}

/// Every entry under `root` (not following symlinks), relative path → a description of
/// what it is (`dir`, `file <len> <first bytes hash>`, `link -> target`).
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap_or_default();
                out.insert(rel, format!("link -> {}", t.display()));
            } else if m.is_dir() {
                out.insert(rel, "dir".into());
                walk(root, &p, out);
            } else {
                let data = std::fs::read(&p).unwrap_or_default();
                use sha1::Digest;
                let h: [u8; 20] = sha1::Sha1::digest(&data).into();
                let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
                out.insert(rel, format!("file {} {hex}", m.len()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Differences between two [`snapshot`]s, one line each (`+ path: what`, `- path`, `~ path`).
pub fn snapshot_diff(
    before: &BTreeMap<PathBuf, String>,
    after: &BTreeMap<PathBuf, String>,
) -> Vec<String> {
    let mut d = Vec::new();
    for (p, a) in after {
        match before.get(p) {
            None => d.push(format!("+ {}: {a}", p.display())),
            Some(b) if b != a => d.push(format!("~ {}: {b} -> {a}", p.display())),
            Some(_) => {}
        }
    }
    for p in before.keys() {
        if !after.contains_key(p) {
            d.push(format!("- {}", p.display()));
        }
    }
    d
}

// ---------------------------------------------------------------------------------------
// Hostile torrents with real piece hashes, to download for real.

/// A bencode value; dictionaries are written with their keys sorted.
#[derive(Debug, Clone)]
pub enum B {
    I(i64),
    S(Vec<u8>),
    L(Vec<B>),
    D(Vec<(Vec<u8>, B)>),
}

impl B {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            B::I(i) => out.extend_from_slice(format!("i{i}e").as_bytes()),
            B::S(s) => {
                out.extend_from_slice(format!("{}:", s.len()).as_bytes());
                out.extend_from_slice(s);
            }
            B::L(l) => {
                out.push(b'l');
                l.iter().for_each(|v| v.encode_into(out));
                out.push(b'e');
            }
            B::D(d) => {
                let mut d: Vec<&(Vec<u8>, B)> = d.iter().collect();
                d.sort_by(|a, b| a.0.cmp(&b.0));
                out.push(b'd');
                for (k, v) in d {
                    B::S(k.clone()).encode_into(out);
                    v.encode_into(out);
                }
                out.push(b'e');
            }
        }
    }
}

fn dict(pairs: Vec<(&str, B)>) -> B {
    B::D(
        pairs
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v))
            .collect(),
    )
}

fn str_list(parts: &[Vec<u8>]) -> B {
    B::L(parts.iter().map(|p| B::S(p.clone())).collect())
}

/// One entry of a multi-file torrent's `files` list.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A real file: its `path` components and length in bytes.
    File(Vec<Vec<u8>>, u64),
    /// A BEP 47 padding file (`attr` p): its `path` (`None`: no `path` key) and length.
    Pad(Option<Vec<Vec<u8>>>, u64),
    /// A BEP 47 symlink entry (`attr` l, `length` 0): its `path` and `symlink path`.
    Symlink(Vec<Vec<u8>>, Vec<Vec<u8>>),
}

/// `path` components from `/`-free text pieces (use [`Entry::File`] directly for bytes).
pub fn comps(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// The shape of a hostile torrent: its `name` and either one file (`single`, length in
/// bytes) or a `files` list.
#[derive(Debug, Clone)]
pub struct Shape {
    pub name: Vec<u8>,
    pub single: Option<u64>,
    pub entries: Vec<Entry>,
    pub piece_length: u32,
}

/// A torrent built from a [`Shape`] with real SHA-1 piece hashes over a generated payload.
pub struct Built {
    /// The .torrent file.
    pub torrent: Vec<u8>,
    /// The bencoded info dictionary, exactly as inside `torrent`.
    pub info: Vec<u8>,
    /// The payload: every file's bytes in order, padding as zeros.
    pub payload: Vec<u8>,
}

/// `len` deterministic pseudo-random bytes (xorshift64 from `seed`).
pub fn data(len: u64, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

impl Shape {
    /// Build the torrent, announcing to `announce`.
    pub fn build(&self, announce: &str) -> Built {
        let mut payload = Vec::new();
        let mut info = vec![
            ("name", B::S(self.name.clone())),
            ("piece length", B::I(i64::from(self.piece_length))),
        ];
        if let Some(len) = self.single {
            payload.extend(data(len, 1));
            info.push(("length", B::I(len as i64)));
        } else {
            let mut files = Vec::new();
            for (i, e) in self.entries.iter().enumerate() {
                files.push(match e {
                    Entry::File(path, len) => {
                        payload.extend(data(*len, i as u64 + 1));
                        dict(vec![
                            ("length", B::I(*len as i64)),
                            ("path", str_list(path)),
                        ])
                    }
                    Entry::Pad(path, len) => {
                        payload.extend(std::iter::repeat_n(0u8, *len as usize));
                        let mut d =
                            vec![("attr", B::S(b"p".to_vec())), ("length", B::I(*len as i64))];
                        if let Some(p) = path {
                            d.push(("path", str_list(p)));
                        }
                        dict(d)
                    }
                    Entry::Symlink(path, target) => dict(vec![
                        ("attr", B::S(b"l".to_vec())),
                        ("length", B::I(0)),
                        ("path", str_list(path)),
                        ("symlink path", str_list(target)),
                    ]),
                });
            }
            info.push(("files", B::L(files)));
        }
        use sha1::Digest;
        let pieces: Vec<u8> = payload
            .chunks(self.piece_length as usize)
            .flat_map(|c| <[u8; 20]>::from(sha1::Sha1::digest(c)))
            .collect();
        info.push(("pieces", B::S(pieces)));
        let info = dict(info);
        let torrent = dict(vec![
            ("announce", B::S(announce.as_bytes().to_vec())),
            ("info", info.clone()),
        ]);
        Built {
            torrent: torrent.encode(),
            info: info.encode(),
            payload,
        }
    }
}

/// Lay the payload out under `dir` by the file list of a loaded torrent view (path and size
/// of each file in payload order; padding files and symlink entries are skipped).
pub fn lay_out(dir: &Path, payload: &[u8], files: &[(String, u64, bool)]) {
    let mut offset = 0usize;
    for (path, size, skip) in files {
        let size = *size as usize;
        if !skip {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &payload[offset..offset + size]).unwrap();
        }
        offset += size;
    }
}
