//! Hostile paths downloaded for real: every shared case of the `unsafe-path` and
//! `empty-path-component` classes (t01-name-dotdot, t01-path-dotdot, t08-path-empty-leading,
//! rebuilt with the same names and paths over a real payload) and our own variants are
//! seeded by a real libtorrent 2.0.8 peer (which lays the files out by its own sanitising)
//! and downloaded by `ratorrent download`. Each must exit 0 with every byte verified (each
//! file compared by our sanitised path) and nothing anywhere outside the save folder: the
//! save folder sits in a test root beside a sentinel folder, which many variants aim at
//! (by `..`, absolute paths, backslashes, symlink entries); the whole root is compared
//! before and after. The info hash is the SHA-1 of the info bytes as written, on both sides.
//!
//! A last pair of tests plants symbolic links in the save folder before downloading.

mod common;
mod path_support;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::rat::Rat;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on};
use path_support::{Entry, LtView, Shape, comps, lay_out, lt_view, snapshot, snapshot_diff};
use ratorrent::metainfo::{InfoHash, Metainfo};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A test root: `root/save` (the save folder, empty), `root/sentinel` (with one file),
/// the torrent at `root/case.torrent`.
struct Root {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Root {
    fn new() -> Root {
        let tmp = tempfile::Builder::new()
            .prefix("ratorrent-paths-")
            .tempdir()
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("save")).unwrap();
        std::fs::create_dir_all(root.join("sentinel")).unwrap();
        std::fs::write(root.join("sentinel/keep"), b"sentinel").unwrap();
        Root { _tmp: tmp, root }
    }

    fn save(&self) -> PathBuf {
        self.root.join("save")
    }

    /// The sentinel's absolute path split into components (for absolute-path variants).
    fn sentinel_components(&self) -> Vec<String> {
        self.root
            .join("sentinel")
            .components()
            .skip(1)
            .map(|c| c.as_os_str().to_str().unwrap().to_owned())
            .collect()
    }
}

/// What a download run gives back for the checks.
struct Run {
    meta: Metainfo,
    payload: Vec<u8>,
    rat: Rat,
    ok: bool,
}

/// Seed `shape` from libtorrent, download it with ratorrent into `root/save` (after
/// `plant` ran on the save folder) and wait for ratorrent to exit.
fn run(root: &Root, shape: &Shape, plant: impl FnOnce(&Path)) -> Run {
    let tracker = TestTracker::start();
    let built = shape.build(&tracker.url());
    let torrent = root.root.join("case.torrent");
    std::fs::write(&torrent, &built.torrent).unwrap();
    let meta = Metainfo::from_file(&torrent).expect("ratorrent loads the hostile torrent");
    // the info hash is the hash of the info bytes as written, not of a sanitised copy
    let want_hash = InfoHash::of_info_bytes(&built.info);
    assert_eq!(meta.info_hash, want_hash);
    assert_eq!(meta.info_bytes, built.info);

    // libtorrent's seeder finds the data where libtorrent's own sanitising puts it
    let seed_dir = tempfile::Builder::new()
        .prefix("ratorrent-paths-seed-")
        .tempdir()
        .unwrap();
    let files = match lt_view(std::slice::from_ref(&torrent)).remove(&torrent) {
        Some(LtView::Loaded { files, .. }) => files,
        other => panic!("libtorrent does not load it: {other:?}"),
    };
    let layout: Vec<(String, u64, bool)> = files
        .iter()
        .map(|f| (f.path.clone(), f.size, f.pad || f.symlink.is_some()))
        .collect();
    lay_out(seed_dir.path(), &built.payload, &layout);
    let seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        seed_dir.path(),
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));
    assert_eq!(
        seeder.info_hash(),
        Some(want_hash),
        "libtorrent's info hash"
    );

    plant(&root.save());
    let port = free_port();
    let mut rat = Rat::download(&torrent, &root.save(), port, &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    if status.success() {
        // ratorrent announced the same info hash
        assert!(
            tracker
                .announces_for(&want_hash)
                .iter()
                .any(|a| a.addr.port() == port),
            "{}",
            tracker.describe()
        );
    }
    Run {
        meta,
        payload: built.payload,
        rat,
        ok: status.success(),
    }
}

/// Download `shape` and check: exit 0, every file's bytes at our sanitised path, exactly
/// those files (regular files, no links) under the save folder, nothing else changed in
/// the root. Returns the sanitised paths of the real files.
fn download_ok(shape: &Shape) -> Vec<String> {
    download_ok_in(&Root::new(), shape)
}

/// [`download_ok`] in a given root (whose sentinel the shape may aim at).
fn download_ok_in(root: &Root, shape: &Shape) -> Vec<String> {
    let before = snapshot(&root.root);
    let r = run(root, shape, |_| {});
    assert!(r.ok, "ratorrent failed\n{}", r.rat.output());
    assert!(r.rat.stdout().contains("complete:"), "{}", r.rat.output());
    let save = root.save();
    let mut want = Vec::new();
    for f in r.meta.files.iter().filter(|f| !f.pad) {
        let p = save.join(&f.path);
        let m = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert!(m.is_file(), "{p:?} is not a regular file");
        let o = f.offset as usize;
        let got = std::fs::read(&p).unwrap();
        assert!(
            got == r.payload[o..o + f.length as usize],
            "{:?}: wrong bytes",
            f.path
        );
        want.push(Path::new("save").join(&f.path));
    }
    want.sort();
    // nothing but the torrent's files appeared, all inside the save folder
    let after = snapshot(&root.root);
    let mut new_files = Vec::new();
    for line in snapshot_diff(&before, &after) {
        let rel = line[2..].split(": ").next().unwrap().to_owned();
        assert!(
            line.starts_with("+ ") && rel.starts_with("save/") || rel == "case.torrent",
            "changed outside the save folder: {line}\n{}",
            r.rat.output()
        );
        if line.ends_with(": link") || line.contains(": link ->") {
            panic!("a link was created: {line}");
        }
        if line.contains(": file ") {
            new_files.push(PathBuf::from(rel));
        }
    }
    new_files.retain(|p| p != Path::new("case.torrent"));
    new_files.sort();
    assert_eq!(new_files, want);
    assert_eq!(
        std::fs::read(root.root.join("sentinel/keep")).unwrap(),
        b"sentinel"
    );
    r.meta
        .files
        .iter()
        .filter(|f| !f.pad)
        .map(|f| f.path.to_str().unwrap().to_owned())
        .collect()
}

fn multi(name: &str, entries: Vec<Entry>) -> Shape {
    Shape {
        name: name.as_bytes().to_vec(),
        single: None,
        entries,
        piece_length: 16384,
    }
}

// ---- the shared cases (same names, paths and lengths as the fixtures) -------------------

#[test]
fn t01_name_dotdot() {
    // libtorrent 2.0.8: ..sample.bin
    let shape = Shape {
        name: b"../sample.bin".to_vec(),
        single: Some(7),
        entries: Vec::new(),
        piece_length: 16384,
    };
    assert_eq!(download_ok(&shape), ["..sample.bin"]);
}

#[test]
fn t01_path_dotdot() {
    // libtorrent 2.0.8: sample/etc/hosts, sample/ok.txt
    let shape = multi(
        "sample",
        vec![
            Entry::File(comps(&["..", "..", "etc", "hosts"]), 11),
            Entry::File(comps(&["ok.txt"]), 5),
        ],
    );
    assert_eq!(download_ok(&shape), ["sample/etc/hosts", "sample/ok.txt"]);
}

#[test]
fn t08_path_empty_leading() {
    // libtorrent 2.0.8: sample/_/video.bin
    let shape = multi("sample", vec![Entry::File(comps(&["", "video.bin"]), 3000)]);
    assert_eq!(download_ok(&shape), ["sample/video.bin"]);
}

// ---- variants aimed at the sentinel folder beside the save folder ----------------------

#[test]
fn climbing_paths_and_names() {
    // from save/s, two `..` reach the root that holds the sentinel
    let shape = multi(
        "s",
        vec![
            Entry::File(comps(&["..", "..", "sentinel", "x"]), 20_000),
            Entry::File(comps(&["a", "..", "..", "..", "sentinel", "y"]), 5_000),
            Entry::File(comps(&["..\\..\\sentinel\\w"]), 17_000),
            Entry::File(comps(&["b/../../../sentinel/v"]), 100),
            Entry::File(comps(&["ok.bin"]), 40_000),
        ],
    );
    assert_eq!(
        download_ok(&shape),
        [
            "s/sentinel/x",
            "s/a/sentinel/y",
            "s/....sentinelw",
            "s/b......sentinelv",
            "s/ok.bin"
        ]
    );
    // libtorrent 2.0.8 stores the same paths; a name climbing out is one name inside
    let shape = multi(
        "../sentinel",
        vec![
            Entry::File(comps(&["x"]), 30_000),
            Entry::File(comps(&["..", "y"]), 3),
        ],
    );
    assert_eq!(download_ok(&shape), ["..sentinel/x", "..sentinel/y"]);
    let shape = Shape {
        name: b"../sentinel/keep".to_vec(),
        single: Some(50_000),
        entries: Vec::new(),
        piece_length: 16384,
    };
    assert_eq!(download_ok(&shape), ["..sentinelkeep"]);
}

#[test]
fn absolute_paths() {
    // aimed at the sentinel beside the save folder (never at a real system path)
    let root = Root::new();
    let abs = format!("{}/abs", root.root.join("sentinel").display());
    // the absolute path as one component, and as components after an empty one
    let mut split = vec![String::new()];
    split.extend(root.sentinel_components());
    split.push("split".into());
    let split: Vec<&str> = split.iter().map(String::as_str).collect();
    let shape = multi(
        "s",
        vec![
            Entry::File(comps(&[abs.as_str()]), 20_000),
            Entry::File(comps(&split), 9_000),
            Entry::File(comps(&["C:", "Windows", "win.ini"]), 10),
        ],
    );
    let got = download_ok_in(&root, &shape);
    // '/' removed inside a component; the empty first component dropped
    assert_eq!(got[0], format!("s/{}", abs.replace('/', "")));
    assert_eq!(got[1], format!("s/{}", split[1..].join("/")));
    assert_eq!(got[2..], ["s/C_/Windows/win.ini"]);
    // an absolute name
    let root = Root::new();
    let shape = multi(
        &format!("{}/n", root.root.join("sentinel").display()),
        vec![Entry::File(comps(&["f"]), 1_000)],
    );
    let got = download_ok_in(&root, &shape);
    assert!(got[0].ends_with("sentineln/f"), "{got:?}");
}

#[test]
fn empty_and_nameless_components() {
    // libtorrent 2.0.8 writes each empty component as `_` (s/_, s/_/_/deep/_/f)
    let shape = multi(
        "s",
        vec![
            Entry::File(comps(&[""]), 16_384),
            Entry::File(comps(&["."]), 100),
            Entry::File(comps(&["..", ".."]), 100),
            Entry::File(comps(&["", "", "deep", "", "f"]), 20_000),
            Entry::File(comps(&["/", "\\", "g"]), 10),
            Entry::File(comps(&["..."]), 10),
        ],
    );
    assert_eq!(
        download_ok(&shape),
        ["s/_", "s/_.1", "s/_.2", "s/deep/f", "s/g", "s/_.3"]
    );
    // a nameless name: the info hash (libtorrent too)
    let shape = multi("..", vec![Entry::File(comps(&["f"]), 10)]);
    let got = download_ok(&shape);
    // the info hash does not depend on the announce URL (outside the info dictionary)
    let hash = Metainfo::from_bytes(&shape.build("http://127.0.0.1:1/announce").torrent)
        .unwrap()
        .info_hash
        .to_hex();
    assert_eq!(got, [format!("{hash}/f")]);
}

#[test]
fn duplicates_case_and_file_folder_collisions() {
    // libtorrent 2.0.8 gives the same names
    let shape = multi(
        "s",
        vec![
            Entry::File(comps(&["dup.bin"]), 20_000),
            Entry::File(comps(&["dup.bin"]), 7_000),
            Entry::File(comps(&["DUP.bin"]), 9_000),
            Entry::File(comps(&["f"]), 3_000),
            Entry::File(comps(&["f", "g"]), 3_000),
            Entry::File(comps(&["..", "dup.bin"]), 5),
        ],
    );
    assert_eq!(
        download_ok(&shape),
        [
            "s/dup.bin",
            "s/dup.1.bin",
            "s/DUP.2.bin",
            "s/f.1",
            "s/f/g",
            "s/dup.3.bin"
        ]
    );
}

#[test]
fn symlink_entries_pads_and_odd_names() {
    let long = format!("{}.mkv", "x".repeat(300));
    let shape = multi(
        "s",
        vec![
            Entry::File(comps(&["a.bin"]), 10_000),
            // a padding file without `path`
            Entry::Pad(None, 6_384),
            Entry::File(comps(&["b.bin"]), 16_384),
            // BEP 47 symlinks aimed at the sentinel: empty regular files here
            Entry::Symlink(comps(&["link"]), comps(&["..", "..", "sentinel", "keep"])),
            Entry::Symlink(comps(&["dirlink"]), comps(&["..", "..", "sentinel"])),
            Entry::File(comps(&["Icon\r"]), 10),
            Entry::File(vec![b"\xd1\xf9\xc0\xfd.txt".to_vec()], 10),
            Entry::File(comps(&["evil\u{202e}txt.exe"]), 10),
            Entry::File(comps(&[long.as_str()]), 10),
        ],
    );
    let got = download_ok(&shape);
    assert_eq!(
        got,
        [
            "s/a.bin".to_string(),
            "s/b.bin".into(),
            "s/link".into(),
            "s/dirlink".into(),
            "s/Icon_".into(),
            "s/__.txt".into(),
            "s/eviltxt.exe".into(),
            format!("s/{}.mkv", "x".repeat(240)),
        ]
    );
}

// ---- planted symlinks in the save folder ------------------------------------------------

#[test]
fn planted_folder_link_is_refused_and_nothing_leaves() {
    // the torrent's top folder is already a link to the sentinel: ratorrent stops with
    // an error naming the escape, and the sentinel is untouched
    let shape = multi(
        "sample",
        vec![
            Entry::File(comps(&["..", "..", "etc", "hosts"]), 11),
            Entry::File(comps(&["ok.txt"]), 5),
        ],
    );
    for target in ["../sentinel", "ABS"] {
        let root = Root::new();
        let sentinel = root.root.join("sentinel");
        let target = if target == "ABS" {
            sentinel.clone()
        } else {
            PathBuf::from(target)
        };
        let outside_before = snapshot(&sentinel);
        let r = run(&root, &shape, |save| {
            std::os::unix::fs::symlink(&target, save.join("sample")).unwrap()
        });
        assert!(
            !r.ok,
            "ratorrent wrote through a planted link\n{}",
            r.rat.output()
        );
        assert!(
            r.rat
                .stderr()
                .contains("resolves outside the download folder"),
            "{}",
            r.rat.output()
        );
        let changes = snapshot_diff(&outside_before, &snapshot(&sentinel));
        assert!(changes.is_empty(), "{changes:#?}");
    }
}

#[test]
fn planted_file_link_is_refused_and_the_target_kept() {
    let shape = multi(
        "sample",
        vec![
            Entry::File(comps(&["..", "..", "etc", "hosts"]), 11),
            Entry::File(comps(&["ok.txt"]), 5),
        ],
    );
    let root = Root::new();
    let victim = root.root.join("sentinel/keep");
    let r = run(&root, &shape, |save| {
        std::fs::create_dir_all(save.join("sample/etc")).unwrap();
        std::os::unix::fs::symlink(&victim, save.join("sample/etc/hosts")).unwrap();
    });
    assert!(!r.ok, "{}", r.rat.output());
    assert_eq!(std::fs::read(&victim).unwrap(), b"sentinel");
    assert!(
        std::fs::symlink_metadata(root.save().join("sample/etc/hosts"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the planted link is left as it was"
    );
}

// ---- `ratorrent info` ---------------------------------------------------------------------

#[test]
fn info_shows_where_sanitised_files_go() {
    let home = common::temp_dir();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torrent");
    for (file, needles) in [
        (
            "t01-path-dotdot.torrent",
            &["  sample/etc/hosts  11 bytes  (changed from the torrent's path: '..' dropped)\n"][..],
        ),
        (
            "t01-name-dotdot.torrent",
            &[
                "Name:          ..sample.bin  (changed from the torrent's name: '..' joined to a name by slashes neutralised)\n",
                "  ..sample.bin  7 bytes\n",
            ],
        ),
        (
            "t08-path-empty-leading.torrent",
            &[
                "  sample/video.bin  2.93 KiB (3000 bytes)  (changed from the torrent's path: empty or '.' folder dropped)\n",
            ],
        ),
    ] {
        let out = common::rat::command(home.path())
            .arg("info")
            .arg(fixtures.join(file))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{file}: {out:?}");
        for n in needles {
            assert!(text.contains(n), "{file}: {n:?} not in\n{text}");
        }
    }
}
