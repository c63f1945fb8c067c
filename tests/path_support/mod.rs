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
