//! Metainfo parsing against the hostile-input cases (tests/fixtures/torrent/expected.json,
//! copied from the shared case list), per-class variants, a mutation property test, and
//! the .torrent builder round trip.

mod path_support;

use std::path::{Component, Path, PathBuf};

use ratorrent::bencode;
use ratorrent::metainfo::path::{MAX_COMPONENT_BYTES, UnsafeComponent};
use ratorrent::metainfo::{
    CreateError, InfoHash, Metainfo, MetainfoError, TorrentBuilder, create::NameProblem,
};
use serde_json::Value as Json;
use sha1::{Digest, Sha1};

// ---------------------------------------------------------------------------------------
// A tiny order-preserving bencode writer (unsorted and repeated keys allowed on purpose).

#[derive(Clone, Debug)]
enum B {
    I(i64),
    S(Vec<u8>),
    L(Vec<B>),
    D(Vec<(Vec<u8>, B)>),
    /// Raw bytes written as they are (non-canonical integers, depth bombs).
    Raw(Vec<u8>),
}

impl B {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            B::I(i) => out.extend_from_slice(format!("i{i}e").as_bytes()),
            B::S(s) => {
                out.extend_from_slice(format!("{}:", s.len()).as_bytes());
                out.extend_from_slice(s);
            }
            B::L(l) => {
                out.push(b'l');
                l.iter().for_each(|v| v.encode(out));
                out.push(b'e');
            }
            B::D(d) => {
                out.push(b'd');
                for (k, v) in d {
                    B::S(k.clone()).encode(out);
                    v.encode(out);
                }
                out.push(b'e');
            }
            B::Raw(r) => out.extend_from_slice(r),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Set (replace the first, or append) `key` in a dictionary.
    fn set(mut self, key: &str, value: B) -> B {
        if let B::D(d) = &mut self {
            match d.iter_mut().find(|(k, _)| k == key.as_bytes()) {
                Some(slot) => slot.1 = value,
                None => d.push((key.as_bytes().to_vec(), value)),
            }
        }
        self
    }

    /// Remove every `key` from a dictionary.
    fn remove(mut self, key: &str) -> B {
        if let B::D(d) = &mut self {
            d.retain(|(k, _)| k != key.as_bytes());
        }
        self
    }

    /// Append `key` (even if present: a duplicate).
    fn push(mut self, key: &str, value: B) -> B {
        if let B::D(d) = &mut self {
            d.push((key.as_bytes().to_vec(), value));
        }
        self
    }

    /// Sort a dictionary's keys (one level).
    fn sorted(mut self) -> B {
        if let B::D(d) = &mut self {
            d.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self
    }
}

fn s(text: &str) -> B {
    B::S(text.as_bytes().to_vec())
}

fn d(pairs: Vec<(&str, B)>) -> B {
    B::D(
        pairs
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v))
            .collect(),
    )
}

fn path_list(components: &[&str]) -> B {
    B::L(components.iter().map(|c| s(c)).collect())
}

/// Placeholder piece hashes for `total` bytes in pieces of `pl` bytes.
fn pieces_for(total: u64, pl: u64) -> B {
    B::S((0..total.div_ceil(pl) * 20).map(|i| i as u8).collect())
}

const PL: i64 = 16384;

fn single_info(name: &str, length: i64) -> B {
    d(vec![
        ("length", B::I(length)),
        ("name", s(name)),
        ("piece length", B::I(PL)),
        ("pieces", pieces_for(length.max(0) as u64, PL as u64)),
    ])
}

fn file_entry(components: &[&str], length: i64) -> B {
    d(vec![
        ("length", B::I(length)),
        ("path", path_list(components)),
    ])
}

fn pad_entry(components: &[&str], length: i64) -> B {
    d(vec![
        ("attr", s("p")),
        ("length", B::I(length)),
        ("path", path_list(components)),
    ])
}

fn multi_info_entries(name: &str, entries: Vec<B>) -> B {
    let total: u64 = entries
        .iter()
        .map(|e| match e {
            B::D(d) => d
                .iter()
                .find(|(k, _)| k == b"length")
                .map(|(_, v)| {
                    if let B::I(i) = v {
                        (*i).max(0) as u64
                    } else {
                        0
                    }
                })
                .unwrap_or(0),
            _ => 0,
        })
        .fold(0u64, u64::saturating_add);
    d(vec![
        ("files", B::L(entries)),
        ("name", s(name)),
        ("piece length", B::I(PL)),
        ("pieces", pieces_for(total.min(1 << 30), PL as u64)),
    ])
}

fn multi_info(name: &str, files: &[(&[&str], i64)]) -> B {
    multi_info_entries(name, files.iter().map(|(c, l)| file_entry(c, *l)).collect())
}

fn torrent(info: B) -> Vec<u8> {
    d(vec![
        ("announce", s("http://127.0.0.1:6969/announce")),
        ("info", info),
    ])
    .bytes()
}

fn parse(info: B) -> Result<Metainfo, MetainfoError> {
    let bytes = torrent(info);
    let full = Metainfo::from_bytes(&bytes);
    // the file-list-only parse (resume validation at start-up) resolves every accepted
    // torrent's paths exactly as the full parse does
    if let Ok(m) = &full {
        let files = ratorrent::metainfo::files_from_bytes(&bytes);
        assert_eq!(
            files.as_ref().ok(),
            Some(&m.files),
            "files_from_bytes differs"
        );
    }
    full
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------
// Invariants every accepted torrent must satisfy.

fn assert_invariants(m: &Metainfo) {
    assert!(!m.files.is_empty());
    let mut offset = 0u64;
    let mut seen = std::collections::HashSet::new();
    for f in &m.files {
        let comps: Vec<Component<'_>> = f.path.components().collect();
        assert!(!comps.is_empty(), "empty path {f:?}");
        assert!(f.path.is_relative(), "absolute path {:?}", f.path);
        for c in &comps {
            match c {
                Component::Normal(n) => {
                    let n = n.to_str().expect("paths are UTF-8");
                    assert!(!n.is_empty() && n != "." && n != "..", "{:?}", f.path);
                    assert!(n.len() <= MAX_COMPONENT_BYTES, "{:?}", f.path);
                    assert!(!n.contains(['\0', '/', '\\']), "{:?}", f.path);
                    assert!(!n.chars().any(char::is_control), "{:?}", f.path);
                    assert!(!n.chars().all(|c| c == '.' || c == ' '), "{:?}", f.path);
                }
                other => panic!("component {other:?} in {:?}", f.path),
            }
        }
        // stays inside: joining to a base never climbs out
        let base = Path::new("/downloads/base");
        assert!(base.join(&f.path).starts_with(base));
        if f.symlink {
            assert_eq!(f.length, 0, "a symlink entry takes no payload");
        }
        if m.multi_file {
            assert!(
                comps.len() >= 2,
                "multi-file path without top folder {:?}",
                f.path
            );
            assert_eq!(comps[0], m.files[0].path.components().next().unwrap());
        } else {
            assert_eq!(comps.len(), 1);
        }
        assert_eq!(f.offset, offset);
        offset += f.length;
        if !f.pad {
            // no two real files collide, not even ignoring letter case
            let key = f.path.to_str().unwrap().to_lowercase();
            assert!(seen.insert(key), "duplicate {:?}", f.path);
        }
    }
    assert_eq!(m.total_length, offset);
    assert!(m.total_length > 0);
    assert_eq!(
        u64::from(m.piece_count()),
        m.total_length.div_ceil(u64::from(m.piece_length))
    );
    let sum: u64 = (0..m.piece_count())
        .map(|i| u64::from(m.piece_size(i)))
        .sum();
    assert_eq!(sum, m.total_length);
    if m.version() == ratorrent::metainfo::MetaVersion::V2 {
        // a v2-only torrent is known on the wire by its v2 hash cut to 20 bytes
        assert_eq!(m.info_hash, InfoHash::truncated(&m.info_hash_v2.unwrap()));
        assert!(m.piece_hashes.is_empty());
    } else {
        assert_eq!(m.info_hash, InfoHash::of_info_bytes(&m.info_bytes));
    }
    // a real file is never a folder of another real file, not even ignoring letter case
    let folders: std::collections::HashSet<String> = m
        .files
        .iter()
        .filter(|f| !f.pad)
        .flat_map(|f| f.path.ancestors().skip(1))
        .map(|p| p.to_str().unwrap().to_lowercase())
        .collect();
    for f in m.files.iter().filter(|f| !f.pad) {
        let key = f.path.to_str().unwrap().to_lowercase();
        assert!(
            !folders.contains(&key),
            "{:?} is a folder of another file",
            f.path
        );
    }
}

// ---------------------------------------------------------------------------------------
// The shared cases.

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torrent")
}

fn load_cases() -> Vec<Json> {
    let text = std::fs::read_to_string(fixture_dir().join("expected.json")).unwrap();
    let v: Json = serde_json::from_str(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn strings(v: &Json) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

fn check_ok(id: &str, m: &Metainfo, ok: &serde_json::Map<String, Json>) {
    assert_invariants(m);
    for (key, want) in ok {
        match key.as_str() {
            "info_hash_v1" => assert_eq!(m.info_hash.to_hex(), want.as_str().unwrap(), "{id}"),
            "info_hash_v2" => assert_eq!(
                m.info_hash_v2.map(|h| hex(&h)).as_deref(),
                Some(want.as_str().unwrap()),
                "{id}"
            ),
            "info_hash_v2_truncated" => assert_eq!(
                m.info_hash_v2.map(|h| hex(&h[..20])).as_deref(),
                Some(want.as_str().unwrap()),
                "{id}"
            ),
            "name" => assert_eq!(m.name, want.as_str().unwrap(), "{id}"),
            "files" => {
                let want = want.as_array().unwrap();
                assert_eq!(m.files.len(), want.len(), "{id}");
                for (f, w) in m.files.iter().zip(want) {
                    assert_eq!(f.display_path, strings(&w["path"]), "{id}");
                    assert_eq!(f.length, w["length"].as_u64().unwrap(), "{id}");
                    assert_eq!(f.offset, w["offset"].as_u64().unwrap(), "{id}");
                    assert_eq!(f.pad, w["pad"].as_bool().unwrap(), "{id}");
                }
            }
            "total_length" => assert_eq!(m.total_length, want.as_u64().unwrap(), "{id}"),
            "piece_length" => {
                assert_eq!(u64::from(m.piece_length), want.as_u64().unwrap(), "{id}")
            }
            "piece_count" => {
                assert_eq!(u64::from(m.piece_count()), want.as_u64().unwrap(), "{id}")
            }
            "last_piece_length" => assert_eq!(
                u64::from(m.piece_size(m.piece_count() - 1)),
                want.as_u64().unwrap(),
                "{id}"
            ),
            "blocks_per_full_piece" => {
                assert_eq!(u64::from(m.block_count(0)), want.as_u64().unwrap(), "{id}")
            }
            "last_block_of_full_piece" => assert_eq!(
                u64::from(m.block_size(0, m.block_count(0) - 1)),
                want.as_u64().unwrap(),
                "{id}"
            ),
            "disk_paths" => {
                let got: Vec<&str> = m.files.iter().map(|f| f.path.to_str().unwrap()).collect();
                assert_eq!(got, strings(want), "{id}");
            }
            "acceptable_disk_paths" => {
                let allowed = strings(want);
                for f in m.files.iter().filter(|f| !f.pad) {
                    let p = f.path.to_str().unwrap();
                    assert!(
                        allowed.iter().any(|a| a == p),
                        "{id}: {p} not in {allowed:?}"
                    );
                }
            }
            "visible_files" => {
                let visible: Vec<String> = m
                    .files
                    .iter()
                    .filter(|f| !f.pad)
                    .map(|f| f.display_path.join("/"))
                    .collect();
                assert_eq!(visible, strings(want), "{id}");
            }
            "display_paths" => {
                let want: Vec<Vec<String>> = want.as_array().unwrap().iter().map(strings).collect();
                let got: Vec<Vec<String>> =
                    m.files.iter().map(|f| f.display_path.clone()).collect();
                assert_eq!(got, want, "{id}");
            }
            "file_lengths" => {
                let want: Vec<u64> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                let got: Vec<u64> = m.files.iter().map(|f| f.length).collect();
                assert_eq!(got, want, "{id}");
            }
            "web_seeds" => assert_eq!(m.web_seeds, strings(want), "{id}"),
            "trackers" => {
                let want: Vec<Vec<String>> = want.as_array().unwrap().iter().map(strings).collect();
                assert_eq!(m.trackers, want, "{id}");
            }
            "pieces_roots" => {
                // The v1 view keeps the BEP 52 file tree in the raw info bytes.
                let info = bencode::decode(&m.info_bytes).unwrap();
                let tree = info.as_dict().unwrap().get_dict(b"file tree").unwrap();
                for (file, root) in want.as_object().unwrap() {
                    let leaf = tree
                        .get_dict(file.as_bytes())
                        .and_then(|f| f.get_dict(b""))
                        .unwrap();
                    assert_eq!(
                        hex(leaf.get_bytes(b"pieces root").unwrap()),
                        root.as_str().unwrap(),
                        "{id}: {file}"
                    );
                }
            }
            other => panic!("{id}: expectation {other:?} not checked by this test"),
        }
    }
}

#[test]
fn every_shared_torrent_case() {
    let cases = load_cases();
    assert_eq!(cases.len(), 14);
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let path = fixture_dir().join(case["input"].as_str().unwrap());
        let data = std::fs::read(&path).unwrap();
        let parsed = Metainfo::from_bytes(&data);
        // from_file agrees with from_bytes
        match (&parsed, Metainfo::from_file(&path)) {
            (Ok(a), Ok(b)) => assert_eq!(a, &b, "{id}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{id}"),
            (a, b) => panic!("{id}: from_bytes {a:?} vs from_file {b:?}"),
        }
        let expect = &case["expect"];
        if let Some(err) = expect.get("error") {
            let err = err.as_str().unwrap();
            let msg = match parsed {
                Ok(m) => panic!("{id}: accepted, expected error {err:?}: {m:?}"),
                Err(e) => e.to_string(),
            };
            // the substance: the text before the first parenthesised remark
            let substance = err.split(" (").next().unwrap();
            assert!(
                msg.starts_with(substance),
                "{id}: error {msg:?} does not say {substance:?}"
            );
        } else {
            let m = parsed.unwrap_or_else(|e| panic!("{id}: refused: {e}"));
            check_ok(id, &m, expect["ok"].as_object().unwrap());
            if let Some(wrong) = case
                .get("context")
                .and_then(|c| c.get("wrong_info_hash_if_resorted"))
            {
                assert_ne!(m.info_hash.to_hex(), wrong.as_str().unwrap(), "{id}");
            }
        }
    }
}

/// The `libtorrent_2_0_8` note of each shared case is what libtorrent 2.0.8 really does.
#[test]
fn shared_cases_libtorrent_notes_hold() {
    path_support::require_libtorrent();
    let cases = load_cases();
    let paths: Vec<PathBuf> = cases
        .iter()
        .map(|c| fixture_dir().join(c["input"].as_str().unwrap()))
        .collect();
    let views = path_support::lt_view(&paths);
    for (case, path) in cases.iter().zip(&paths) {
        let id = case["id"].as_str().unwrap();
        let note = &case["libtorrent_2_0_8"];
        match (&views[path], note.get("error")) {
            (path_support::LtView::Refused(e), Some(want)) => {
                assert_eq!(e, want.as_str().unwrap(), "{id}")
            }
            (path_support::LtView::Loaded { files, .. }, None) => {
                let got: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
                assert_eq!(got, strings(&note["disk_paths"]), "{id}");
            }
            (view, _) => panic!("{id}: libtorrent {view:?}, note {note}"),
        }
    }
}

#[test]
fn shared_cases_on_disk_paths() {
    let load = |name: &str| Metainfo::from_file(&fixture_dir().join(name)).unwrap();
    // control character replaced on disk only
    let m = load("t02-name-control-char.torrent");
    assert_eq!(m.files[0].path, Path::new("sample/Icon_"));
    assert_eq!(m.files[1].path, Path::new("sample/data.bin"));
    // leading empty component dropped (libtorrent 2.0.8 writes sample/_/video.bin)
    let m = load("t08-path-empty-leading.torrent");
    assert_eq!(m.files[0].path, Path::new("sample/video.bin"));
    // unsafe-path: sanitised, as libtorrent 2.0.8 does, not refused
    let m = load("t01-name-dotdot.torrent");
    assert_eq!(m.files[0].path, Path::new("..sample.bin"));
    assert_eq!(m.name, "../sample.bin");
    // what is shown: the name used, and what was changed
    assert_eq!(m.saved_name(), "..sample.bin");
    assert_eq!(m.path_in_folder(&m.files[0]), "..sample.bin");
    assert_eq!(
        m.name_changes.iter().collect::<Vec<_>>(),
        vec![ratorrent::metainfo::PathChange::HiddenParent]
    );
    let m = load("t01-path-dotdot.torrent");
    assert_eq!(m.files[0].path, Path::new("sample/etc/hosts"));
    assert_eq!(m.files[0].display_path, vec!["..", "..", "etc", "hosts"]);
    assert_eq!(m.saved_name(), "sample");
    assert!(m.name_changes.is_empty());
    assert_eq!(m.path_in_folder(&m.files[0]), "etc/hosts");
    assert_eq!(
        m.files[0].changes.iter().collect::<Vec<_>>(),
        vec![ratorrent::metainfo::PathChange::ParentDropped]
    );
    assert!(m.files[1].changes.is_empty());
    // `info` shows the path used and what was changed, never the raw path
    assert!(
        m.describe().contains(
            "  sample/etc/hosts  11 bytes  (changed from the torrent's path: '..' dropped)\n"
        ),
        "{}",
        m.describe()
    );
    assert!(!m.describe().contains("../"), "{}", m.describe());
    // UTF-8 fields used on disk
    let m = load("t11-gbk-with-utf8-fields.torrent");
    assert_eq!(m.files[0].path, Path::new("样例/文件.txt"));
    // pads flagged, payload excludes them
    let m = load("t09-pad-files-duplicate-names.torrent");
    assert_eq!(m.payload_size(), 10000 + 26384 + 5000);
    assert_eq!(m.total_length, 54152);
    // single-file: the path is the name
    let m = load("t12-url-list-string.torrent");
    assert!(!m.multi_file);
    assert_eq!(m.files[0].path, Path::new("sample.iso"));
    assert_eq!(m.files[0].display_path, vec!["sample.iso".to_string()]);
    let m = load("t13-hybrid-v1-v2.torrent");
    assert!(m.multi_file);
    assert_eq!(m.created_by.as_deref(), Some("sample-generator"));
    assert_eq!(m.creation_date, Some(1_700_000_000));
}

#[test]
fn describe_summarises_without_pads_and_escapes_controls() {
    let load = |name: &str| Metainfo::from_file(&fixture_dir().join(name)).unwrap();
    let text = load("t09-pad-files-duplicate-names.torrent").describe();
    assert!(text.contains("Name:          sample\n"), "{text}");
    assert!(
        text.contains("Info hash v1:  d85d18b52a0d2bd548d9cf78f7e0fb1501ab0f09\n"),
        "{text}"
    );
    assert!(
        text.contains("Pieces:        4 x 16.0 KiB (16384 bytes)\n"),
        "{text}"
    );
    assert!(
        text.contains("Total size:    40.4 KiB (41384 bytes)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "Padding:       12.5 KiB (12768 bytes) in 2 padding file(s) (BEP 47, not written to disk)\n"
        ),
        "{text}"
    );
    assert!(text.contains("Private:       no\n"), "{text}");
    assert!(
        text.contains("tier 1:  http://tracker.example.org/announce\n"),
        "{text}"
    );
    assert!(text.contains("Files (3):\n"), "{text}");
    assert!(
        text.contains("  sample/b.bin  25.8 KiB (26384 bytes)\n"),
        "{text}"
    );
    assert!(!text.contains(".pad"), "{text}");
    assert!(!text.contains("Info hash v2"), "{text}");

    let text = load("t02-name-control-char.torrent").describe();
    // the name used on disk, and what was changed (issue 16)
    assert!(
        text.contains(
            "sample/Icon_  0 bytes  (changed from the torrent's path: control characters replaced by '_')"
        ),
        "{text}"
    );
    assert!(!text.contains('\r'));

    let text = load("t13-hybrid-v1-v2.torrent").describe();
    assert!(
        text.contains(
            "Info hash v2:  e3d7397a7f2247340e8b7418afa79dc6da7784f6f23f1cd102d04cd1705b5478\n"
        ),
        "{text}"
    );
    let text = load("t12-url-list-string.torrent").describe();
    assert!(
        text.contains("Web seeds:\n  http://example.org/files/\n"),
        "{text}"
    );
    assert!(
        text.contains("Created on:    2023-11-14 22:13:20 UTC\n"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------
// unsafe-path and empty-path-component variants: every name is sanitised, never refused.
// Each table says what ratorrent stores and what libtorrent 2.0.8 (Debian's
// python3-libtorrent) stores; `libtorrent_agrees_with_the_tables` checks the libtorrent
// column against the real thing. `#` stands for the torrent's info hash in hex.

/// A multi-file torrent `name` (raw bytes) → (our top folder, libtorrent 2.0.8's). As a
/// single-file name: the same, except that libtorrent refuses the `#` ones and the empty
/// one ("missing name in torrent file") where ratorrent names the file by the info hash.
const NAME_CASES: &[(&[u8], &str, &str)] = &[
    (b"..", "#", "#"),
    (b".", "#", "#"),
    (b"../x", "..x", "..x"),
    (b"/etc/x", "etcx", "etcx"),
    (b"a/b", "ab", "ab"),
    (b"..\\..\\x", "....x", "....x"),
    (b"\\x", "x", "x"),
    (b"/", "#", "#"),
    (b"/..", "#", "#"),
    (b"a\0b", "ab", "ab"),
    // libtorrent writes an empty name as `_`; an empty name is nameless here
    (b"", "#", "_"),
    // legal on Linux and kept by libtorrent; ratorrent avoids names that other systems
    // read as a drive, as `..` or as nothing
    (b"C:", "C_", "C:"),
    (b"...", "_", "..."),
    (b" ", "_", " "),
    (b"Icon\r", "Icon_", "Icon_"),
    // C1 controls and DEL: libtorrent keeps them
    (b"a\xc2\x9bb", "a_b", "a\u{9b}b"),
    (b"\xd1\xf9\xc0\xfd", "__", "__"),
    (b"evil\xe2\x80\xaetxt.exe", "eviltxt.exe", "eviltxt.exe"),
    // the isolates reorder text too; libtorrent keeps them
    (b"x\xe2\x81\xa6y", "xy", "x\u{2066}y"),
];

/// A file's `path` list → (our path below the top folder `s`, libtorrent 2.0.8's).
const PATH_CASES: &[(&[&str], &str, &str)] = &[
    (&["..", "x"], "x", "x"),
    (&["a", "..", "b"], "a/b", "a/b"),
    (&["a", "b", ".."], "a/b", "a/b"),
    (
        &["..", "..", "..", "etc", "passwd"],
        "etc/passwd",
        "etc/passwd",
    ),
    (&["/etc/x"], "etcx", "etcx"),
    (&["a", "/abs"], "a/abs", "a/abs"),
    (&["a/../../b"], "a....b", "a....b"),
    (&["..\\..\\x"], "....x", "....x"),
    (&["/", "/", "bar"], "bar", "bar"),
    (&["\\", "\\", "bar"], "bar", "bar"),
    (&[".", "a"], "a", "a"),
    (&["a", ".", "b"], "a/b", "a/b"),
    (&["a", "x\0.txt"], "a/x.txt", "a/x.txt"),
    // every component nameless: a placeholder, as libtorrent
    (&["."], "_", "_"),
    (&["..", ".."], "_", "_"),
    (&["/"], "_", "_"),
    (&[""], "_", "_"),
    (&["", ""], "_", "_/_"),
    // empty components are dropped here, written as `_` by libtorrent
    (&["", "a"], "a", "_/a"),
    (&["a", "", "b"], "a/b", "a/_/b"),
    (&["a", ""], "a", "a/_"),
    (&["C:", "x"], "C_/x", "C:/x"),
    (&["..."], "_", "..."),
    (&["a", " . "], "a/_", "a/ . "),
    (&["Icon\r"], "Icon_", "Icon_"),
];

fn top_of(m: &Metainfo) -> String {
    m.files[0]
        .path
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap()
        .to_owned()
}

fn with_hash(want: &str, m_hash: &str) -> String {
    want.replace('#', m_hash)
}

#[test]
fn unsafe_names_are_sanitised() {
    for (name, ours, _) in NAME_CASES {
        let multi = multi_info_entries("x", vec![file_entry(&["a.bin"], 10)])
            .set("name", B::S(name.to_vec()));
        let m = parse(multi).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_invariants(&m);
        assert_eq!(
            top_of(&m),
            with_hash(ours, &m.info_hash.to_hex()),
            "{name:?}"
        );
        assert_eq!(m.files[0].path, Path::new(&top_of(&m)).join("a.bin"));
        assert_eq!(
            m.name,
            String::from_utf8_lossy(name),
            "the display name is as given"
        );
        // the single-file form: the file is the name
        let single = single_info("x", 10).set("name", B::S(name.to_vec()));
        let m = parse(single).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_invariants(&m);
        assert_eq!(
            m.files[0].path,
            Path::new(&with_hash(ours, &m.info_hash.to_hex())),
            "{name:?}"
        );
    }
}

#[test]
fn unsafe_file_paths_are_sanitised() {
    for (components, ours, _) in PATH_CASES {
        // the odd file can be first, in the middle or last
        for position in 0..3 {
            let mut files: Vec<(&[&str], i64)> = vec![(&["ok1"], 5), (&["ok2"], 5)];
            files.insert(position, (components, 7));
            let m =
                parse(multi_info("s", &files)).unwrap_or_else(|e| panic!("{components:?}: {e}"));
            assert_invariants(&m);
            assert_eq!(
                m.files[position].path,
                Path::new("s").join(ours),
                "{components:?}"
            );
            let shown: Vec<&str> = m.files[position]
                .display_path
                .iter()
                .map(String::as_str)
                .collect();
            assert_eq!(&shown, components, "shown as given");
            assert_eq!(m.files[position].length, 7);
        }
    }
}

/// What libtorrent 2.0.8 stores, for each torrent of the tables above.
#[test]
fn libtorrent_agrees_with_the_tables() {
    path_support::require_libtorrent();
    let dir = tempfile::tempdir().unwrap();
    let mut torrents = Vec::new();
    for (i, (name, _, lt)) in NAME_CASES.iter().enumerate() {
        let info = multi_info_entries("x", vec![file_entry(&["a.bin"], 10)])
            .set("name", B::S(name.to_vec()));
        let path = dir.path().join(format!("name{i}.torrent"));
        std::fs::write(&path, torrent(info.clone())).unwrap();
        let hash = InfoHash::of_info_bytes(&info.bytes()).to_hex();
        torrents.push((
            path,
            format!("{}/a.bin", with_hash(lt, &hash)),
            format!("name {name:?}"),
        ));
        // single-file: libtorrent refuses a name with nothing usable left (ratorrent names
        // the file by the info hash), else stores the same name
        let path = dir.path().join(format!("single{i}.torrent"));
        std::fs::write(
            &path,
            torrent(single_info("x", 10).set("name", B::S(name.to_vec()))),
        )
        .unwrap();
        let want = if *lt == "#" || name.is_empty() {
            "refused: missing name in torrent file".to_string()
        } else {
            lt.to_string()
        };
        torrents.push((path, want, format!("single-file name {name:?}")));
    }
    for (i, (components, _, lt)) in PATH_CASES.iter().enumerate() {
        let path = dir.path().join(format!("path{i}.torrent"));
        std::fs::write(&path, torrent(multi_info("s", &[(components, 7)]))).unwrap();
        torrents.push((path, format!("s/{lt}"), format!("path {components:?}")));
    }
    for (i, (files, _, lt)) in COLLISION_CASES.iter().enumerate() {
        let path = dir.path().join(format!("coll{i}.torrent"));
        let files: Vec<(&[&str], i64)> = files.iter().map(|f| (*f, 3)).collect();
        std::fs::write(&path, torrent(multi_info("s", &files))).unwrap();
        torrents.push((path, lt.join("|"), format!("files {files:?}")));
    }
    let paths: Vec<PathBuf> = torrents.iter().map(|t| t.0.clone()).collect();
    let views = path_support::lt_view(&paths);
    let mut wrong = Vec::new();
    for (path, want, what) in &torrents {
        let got = match &views[path] {
            path_support::LtView::Loaded { files, .. } => files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join("|"),
            path_support::LtView::Refused(e) => format!("refused: {e}"),
        };
        if &got != want {
            wrong.push(format!(
                "{what}: libtorrent stores {got:?}, the table says {want:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn utf8_fields_are_sanitised_too() {
    // safe legacy name, unsafe `name.utf-8`: the UTF-8 one is used
    let m = parse(single_info("ok.bin", 10).push("name.utf-8", s(".."))).unwrap();
    assert_eq!(m.files[0].path, Path::new(&m.info_hash.to_hex()));
    assert_eq!(m.name, "..");
    let entry = file_entry(&["ok.bin"], 10).push("path.utf-8", path_list(&["..", "x"]));
    let m = parse(multi_info_entries("sample", vec![entry])).unwrap();
    assert_eq!(m.files[0].path, Path::new("sample/x"));
    assert_eq!(m.files[0].display_path, vec!["..", "x"]);
    // an invalid `path.utf-8` (not UTF-8) falls back to `path`
    let entry = file_entry(&["ok.bin"], 10).push("path.utf-8", B::L(vec![B::S(vec![0xff])]));
    let m = parse(multi_info_entries("sample", vec![entry])).unwrap();
    assert_eq!(m.files[0].path, Path::new("sample/ok.bin"));
}

#[test]
fn legacy_bytes_without_utf8_fields_load_safely() {
    // GBK "样例" = d1 f9 c0 fd; "\x95\x5c" has a '\' trail byte. Invalid sequences become
    // `_` as libtorrent counts them (the lead byte's claimed length), '\' is removed.
    let name = B::S(vec![0xd1, 0xf9, 0xc0, 0xfd]);
    let path = B::L(vec![B::S(vec![0x95, 0x5c, b'.', b't', b'x', b't'])]);
    let info = multi_info_entries("x", vec![d(vec![("length", B::I(10)), ("path", path)])])
        .set("name", name);
    let m = parse(info).unwrap();
    assert_invariants(&m);
    // each of the four bytes is an invalid UTF-8 sequence on its own for display
    assert_eq!(m.name, "\u{fffd}".repeat(4));
    assert_eq!(m.files[0].path, Path::new("__/_.txt"));
    assert_eq!(m.files[0].display_path, vec!["\u{fffd}\\.txt".to_string()]);
    // lossy ".." is still nameless
    let m = parse(single_info("x", 10).set("name", B::S(b"..".to_vec()))).unwrap();
    assert_eq!(m.files[0].path, Path::new(&m.info_hash.to_hex()));
}

/// Files' `path` lists, in torrent order.
type FileList = &'static [&'static [&'static str]];

/// Real files' paths (below `s`) in torrent order → (ours, libtorrent 2.0.8's, with `s/`).
const COLLISION_CASES: &[(FileList, &[&str], &[&str])] = &[
    (
        &[&["a.txt"], &["a.txt"]],
        &["a.txt", "a.1.txt"],
        &["s/a.txt", "s/a.1.txt"],
    ),
    // letter case: a case-insensitive file system would merge them
    (
        &[&["A.txt"], &["a.txt"]],
        &["A.txt", "a.1.txt"],
        &["s/A.txt", "s/a.1.txt"],
    ),
    // a later file already named like a renamed one is renamed in turn
    (
        &[&["x.txt"], &["x.txt"], &["x.1.txt"]],
        &["x.txt", "x.1.txt", "x.1.1.txt"],
        &["s/x.txt", "s/x.1.txt", "s/x.1.1.txt"],
    ),
    // a file that is a folder of another file is renamed, in either order
    (&[&["a"], &["a", "b"]], &["a.1", "a/b"], &["s/a.1", "s/a/b"]),
    (
        &[&["a", "b", "c"], &["a", "b"]],
        &["a/b/c", "a/b.1"],
        &["s/a/b/c", "s/a/b.1"],
    ),
    (&[&["D", "x"], &["d"]], &["D/x", "d.1"], &["s/D/x", "s/d.1"]),
    // folders are taken before any file is numbered
    (
        &[&["b.txt"], &["b.txt"], &["b.1.txt", "y"]],
        &["b.txt", "b.2.txt", "b.1.txt/y"],
        &["s/b.txt", "s/b.2.txt", "s/b.1.txt/y"],
    ),
    // sanitising makes them equal
    (&[&["a\r"], &["a\n"]], &["a_", "a_.1"], &["s/a_", "s/a_.1"]),
    (&[&["", "a"], &["a"]], &["a", "a.1"], &["s/_/a", "s/a"]),
    (&[&["/x"], &["x"]], &["x", "x.1"], &["s/x", "s/x.1"]),
    (&[&["."], &[".."]], &["_", "_.1"], &["s/_", "s/_.1"]),
    // non-ASCII letter case: libtorrent folds ASCII only
    (
        &[&["É.txt"], &["é.txt"]],
        &["É.txt", "é.1.txt"],
        &["s/É.txt", "s/é.txt"],
    ),
    (
        &[&[".hidden"], &[".hidden"]],
        &[".hidden", ".hidden.1"],
        &["s/.hidden", "s/.1.hidden"],
    ),
];

#[test]
fn colliding_paths_are_renamed_and_pads_may_repeat() {
    for (files, ours, _) in COLLISION_CASES {
        let list: Vec<(&[&str], i64)> = files.iter().map(|f| (*f, 3)).collect();
        let m = parse(multi_info("s", &list)).unwrap_or_else(|e| panic!("{files:?}: {e}"));
        assert_invariants(&m);
        let got: Vec<PathBuf> = m.files.iter().map(|f| f.path.clone()).collect();
        let want: Vec<PathBuf> = ours.iter().map(|p| Path::new("s").join(p)).collect();
        assert_eq!(got, want, "{files:?}");
    }
    // many duplicates: numbered in order, in linear time
    let same: Vec<(&[&str], i64)> = vec![(&["d", "f.bin"][..], 1); 20_000];
    let m = parse(multi_info("s", &same)).unwrap();
    assert_invariants(&m);
    assert_eq!(m.files[0].path, Path::new("s/d/f.bin"));
    assert_eq!(m.files[19_999].path, Path::new("s/d/f.19999.bin"));
    // a renamed long name stays within the component limit
    let long = format!("{}.mkv", "é".repeat(120));
    let m = parse(multi_info(
        "s",
        &[(&[long.as_str()], 1), (&[long.as_str()], 1)],
    ))
    .unwrap();
    assert_invariants(&m);
    assert!(m.files[1].path.to_str().unwrap().ends_with(".1.mkv"));
    // pads with the same name are fine, and never renamed
    let m = parse(multi_info_entries(
        "s",
        vec![
            file_entry(&["a"], 100),
            pad_entry(&[".pad", "16284"], 16284),
            file_entry(&["b"], 100),
            pad_entry(&[".pad", "16284"], 16284),
            file_entry(&["c"], 100),
        ],
    ))
    .unwrap();
    assert_invariants(&m);
    assert_eq!(m.files.iter().filter(|f| f.pad).count(), 2);
    assert_eq!(m.files[3].path, Path::new("s/.pad/16284"));
}

#[test]
fn a_real_file_needs_a_path() {
    // no `path`, or an empty list: refused, as libtorrent does (padding files excepted)
    for entry in [
        d(vec![("length", B::I(10))]),
        d(vec![("length", B::I(10)), ("path", B::L(vec![]))]),
    ] {
        let err = parse(multi_info_entries("s", vec![file_entry(&["ok"], 3), entry])).unwrap_err();
        assert_eq!(err.to_string(), "missing 'files[1].path'");
    }
}

#[test]
fn long_components_are_cut() {
    let long = format!("{}.mkv", "x".repeat(400));
    let m = parse(multi_info("s", &[(&[long.as_str()], 10)])).unwrap();
    assert_invariants(&m);
    let file = m.files[0].path.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        file,
        format!("{}.mkv", "x".repeat(240)),
        "as libtorrent cuts it"
    );
    assert_eq!(m.files[0].display_path, vec![long]);
}

#[test]
fn symlink_entries_are_empty_plain_files() {
    // BEP 47: attr `l` with a `symlink path`; libtorrent takes no payload bytes for it,
    // whatever `length` says. ratorrent never creates the link: an empty regular file.
    let link = d(vec![
        ("attr", s("l")),
        ("length", B::I(425)),
        ("path", path_list(&["sub", "link"])),
        ("symlink path", path_list(&["..", "..", "etc", "passwd"])),
    ]);
    let info = d(vec![
        (
            "files",
            B::L(vec![file_entry(&["a.bin"], 100), link.clone()]),
        ),
        ("name", s("s")),
        ("piece length", B::I(PL)),
        ("pieces", pieces_for(100, PL as u64)),
    ]);
    let m = parse(info).unwrap();
    assert_invariants(&m);
    let f = &m.files[1];
    assert!(f.symlink && !f.pad);
    assert_eq!((f.length, f.offset), (0, 100));
    assert_eq!(f.path, Path::new("s/sub/link"));
    // a target outside the torrent (here `etc/passwd` once `..` is dropped) is no target
    assert_eq!(f.symlink_target, None);
    assert_eq!(m.total_length, 100);
    assert!(
        m.describe()
            .contains("  s/sub/link  0 bytes  (symlink: saved as an empty file)\n"),
        "{}",
        m.describe()
    );
    // targets inside: read from the top folder, else from the link's folder
    for (target, want) in [
        (&["a.bin"][..], "s/a.bin"),
        (&["sub"], "s/sub"),
        (&["link2"], "s/sub/link2"),
    ] {
        let entry = link.clone().set("symlink path", path_list(target));
        let other = link.clone().set("path", path_list(&["sub", "link2"]));
        let info = multi_info_entries("s", vec![file_entry(&["a.bin"], 100), entry, other])
            .set("pieces", pieces_for(100, PL as u64));
        let m = parse(info).unwrap();
        assert_eq!(
            m.files[1].symlink_target.as_deref(),
            Some(Path::new(want)),
            "{target:?}"
        );
    }
    let entry = link.clone().set("symlink path", path_list(&["a.bin"]));
    let info = multi_info_entries("s", vec![file_entry(&["a.bin"], 100), entry])
        .set("pieces", pieces_for(100, PL as u64));
    assert!(
        parse(info)
            .unwrap()
            .describe()
            .contains("  s/sub/link  0 bytes  (symlink to s/a.bin: saved as an empty file)\n")
    );
    // without `length` (libtorrent's symlink_zero_size.torrent) or `symlink path`
    let bare = d(vec![("attr", s("xl")), ("path", path_list(&["l2"]))]);
    let info = multi_info_entries("s", vec![file_entry(&["a.bin"], 100), bare]);
    let m = parse(info).unwrap();
    assert!(m.files[1].symlink && m.files[1].symlink_target.is_none());
    assert_eq!(m.files[1].length, 0);
    // a mistyped `symlink path` is refused (libtorrent: invalid_symlink.torrent)
    let bad = link.set("symlink path", B::L(vec![s("a"), B::I(4)]));
    let info = multi_info_entries("s", vec![file_entry(&["a.bin"], 100), bad]);
    let err = parse(info).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid 'files[1].symlink path': expected a list of strings, found integer"
    );
}

#[test]
fn padding_files_without_a_path_load() {
    // libtorrent's pad_file_no_path.torrent: attr `p`, no `path`
    let pad = d(vec![("attr", s("p")), ("length", B::I(2124))]);
    let info = multi_info_entries("temp", vec![file_entry(&["foo", "bar.txt"], 45), pad]);
    let m = parse(info).unwrap();
    assert_invariants(&m);
    assert!(m.files[1].pad);
    // libtorrent names it `.pad/2124`, outside the top folder; never on disk either way
    assert_eq!(m.files[1].path, Path::new("temp/.pad/2124"));
    assert!(m.files[1].display_path.is_empty());
    assert_eq!(m.payload_size(), 45);
}

// ---------------------------------------------------------------------------------------
// infohash-raw-bytes, duplicate keys, non-canonical integers, depth

#[test]
fn unsorted_keys_at_every_level_are_hashed_as_found() {
    let file = d(vec![
        ("path", path_list(&["a.bin"])),
        ("length", B::I(20000)),
    ]);
    let info = d(vec![
        ("pieces", pieces_for(20000, PL as u64)),
        ("piece length", B::I(PL)),
        ("name", s("n")),
        ("files", B::L(vec![file])),
    ]);
    let info_bytes = info.bytes();
    let top = d(vec![
        ("info", info.clone()),
        ("creation date", B::I(1)),
        ("announce", s("http://127.0.0.1/a")),
    ]);
    let m = Metainfo::from_bytes(&top.bytes()).unwrap();
    assert_eq!(m.info_bytes, info_bytes);
    assert_eq!(m.info_hash.0, <[u8; 20]>::from(Sha1::digest(&info_bytes)));
    let resorted =
        Metainfo::from_bytes(&top.clone().set("info", info.sorted()).sorted().bytes()).unwrap();
    assert_ne!(m.info_hash, resorted.info_hash);
    assert_eq!(m.files, resorted.files);
    assert_eq!(m.trackers, vec![vec!["http://127.0.0.1/a".to_string()]]);
}

#[test]
fn duplicate_keys_first_occurrence_wins() {
    let info = single_info("first", 100)
        .push("name", s("second"))
        .push("length", B::I(999_999));
    let m = parse(info).unwrap();
    assert_eq!(m.name, "first");
    assert_eq!(m.total_length, 100);
    // a duplicate `info` at the top level: the first one is hashed
    let first = single_info("one", 10);
    let top = d(vec![
        ("info", first.clone()),
        ("info", single_info("two", 10)),
    ]);
    let m = Metainfo::from_bytes(&top.bytes()).unwrap();
    assert_eq!(m.name, "one");
    assert_eq!(m.info_bytes, first.bytes());
    // duplicate keys inside a file entry
    let entry = file_entry(&["a"], 10)
        .push("length", B::I(5))
        .push("path", path_list(&[".."]));
    let m = parse(multi_info_entries("s", vec![entry])).unwrap();
    assert_eq!(m.files[0].length, 10);
    assert_eq!(m.files[0].path, Path::new("s/a"));
}

#[test]
fn non_canonical_integers_are_refused() {
    for raw in ["i016384e", "i-0e", "i00e", "i+5e", "i 5e", "i5.0e"] {
        let raw = B::Raw(raw.as_bytes().to_vec());
        for info in [
            single_info("n", 10).set("piece length", raw.clone()),
            single_info("n", 10).set("length", raw.clone()),
            multi_info_entries("n", vec![file_entry(&["a"], 10).set("length", raw.clone())]),
            single_info("n", 10).push("x-unknown", raw.clone()),
        ] {
            let err = parse(info).unwrap_err();
            assert!(
                err.to_string().starts_with("invalid bencode integer: "),
                "{raw:?}: {err}"
            );
        }
        let top = d(vec![
            ("creation date", raw.clone()),
            ("info", single_info("n", 10)),
        ]);
        assert!(matches!(
            Metainfo::from_bytes(&top.bytes()),
            Err(MetainfoError::Bencode(_))
        ));
    }
    // a string length with a leading zero is refused too
    let info = single_info("n", 10).set("name", B::Raw(b"01:n".to_vec()));
    assert!(matches!(parse(info), Err(MetainfoError::Bencode(_))));
}

fn list_bomb(levels: usize) -> B {
    let mut raw = vec![b'l'; levels];
    raw.extend(vec![b'e'; levels]);
    B::Raw(raw)
}

#[test]
fn depth_bombs_anywhere_fail_cleanly() {
    let bomb = list_bomb(200_000);
    let dict_bomb = {
        let mut raw = Vec::new();
        for _ in 0..100_000 {
            raw.extend_from_slice(b"d1:k");
        }
        raw.extend_from_slice(b"i0e");
        raw.extend(vec![b'e'; 100_000]);
        B::Raw(raw)
    };
    for b in [bomb, dict_bomb] {
        let variants = vec![
            single_info("n", 10).push("x-nested", b.clone()),
            multi_info_entries("n", vec![file_entry(&["a"], 10).push("x", b.clone())]),
            multi_info("n", &[(&["a"], 10)]).set("files", B::L(vec![b.clone()])),
        ];
        for info in variants {
            let err = parse(info).unwrap_err();
            assert!(
                err.to_string().starts_with("bencode nesting too deep"),
                "{err}"
            );
        }
        let top = d(vec![
            ("announce-list", B::L(vec![b.clone()])),
            ("info", single_info("n", 10)),
        ]);
        let err = Metainfo::from_bytes(&top.bytes()).unwrap_err();
        assert!(
            err.to_string().starts_with("bencode nesting too deep"),
            "{err}"
        );
    }
    // modest nesting in an unknown key is fine (3 levels used by top, info, list)
    let m = parse(single_info("n", 10).push("x-nested", list_bomb(50))).unwrap();
    assert_eq!(m.name, "n");
}

// ---------------------------------------------------------------------------------------
// pieces-inconsistent, odd-piece-geometry, lengths

#[test]
fn pieces_must_match_the_total_length() {
    // 40000 bytes in 16 KiB pieces need 3 hashes
    for hashes in [0usize, 1, 2, 4, 100] {
        let info = single_info("n", 40000).set("pieces", B::S(vec![7; hashes * 20]));
        match parse(info) {
            Err(MetainfoError::PieceCountMismatch {
                found, expected, ..
            }) => {
                assert_eq!(found, hashes as u64);
                assert_eq!(expected, 3);
            }
            other => panic!("{hashes}: {other:?}"),
        }
    }
    for len in [1usize, 19, 21, 59, 61] {
        let info = single_info("n", 40000).set("pieces", B::S(vec![7; len]));
        let err = parse(info).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("invalid 'pieces': length {len} is not a multiple of 20")
        );
    }
    let err = parse(single_info("n", 40000).set("pieces", B::I(5))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid 'pieces': expected a string, found integer"
    );
    let err = parse(single_info("n", 40000).remove("pieces")).unwrap_err();
    assert_eq!(err.to_string(), "missing 'pieces'");
}

#[test]
fn piece_length_bounds() {
    for bad in [
        0i64,
        -1,
        -16384,
        512 * 1024 * 1024 + 1,
        1 << 30,
        1 << 32,
        i64::MAX,
        i64::MIN,
    ] {
        let info = single_info("n", 10).set("piece length", B::I(bad));
        match parse(info) {
            Err(e @ MetainfoError::PieceLength { .. }) => {
                assert!(e.to_string().starts_with("invalid 'piece length': "));
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    // 16 KiB to 512 MiB (libtorrent's large_piece_size: 512 MiB less a block) and odd
    // sizes are accepted (issue 16)
    for ok in [
        512 * 1024 * 1024i64,
        512 * 1024 * 1024 - 16 * 1024,
        256 * 1024 * 1024,
        16 * 1024,
        1,
        270_544,
        16385,
    ] {
        let info = single_info("n", 1_000_000)
            .set("piece length", B::I(ok))
            .set("pieces", pieces_for(1_000_000, ok as u64));
        let m = parse(info).unwrap();
        assert_invariants(&m);
        assert_eq!(i64::from(m.piece_length), ok);
    }
    let err = parse(single_info("n", 10).set("piece length", s("16384"))).unwrap_err();
    assert!(matches!(err, MetainfoError::WrongType { .. }), "{err}");
}

#[test]
fn piece_and_block_geometry() {
    // 40000 bytes in pieces of 20000: two full pieces of two blocks (16384 + 3616)
    let info = single_info("n", 40000)
        .set("piece length", B::I(20000))
        .set("pieces", pieces_for(40000, 20000));
    let m = parse(info).unwrap();
    assert_eq!(m.piece_count(), 2);
    assert_eq!(m.piece_size(0), 20000);
    assert_eq!(m.piece_size(1), 20000);
    assert_eq!(m.piece_size(2), 0);
    assert_eq!(m.piece_offset(1), 20000);
    assert_eq!(m.block_count(0), 2);
    assert_eq!(m.block_size(0, 0), 16384);
    assert_eq!(m.block_size(0, 1), 20000 - 16384);
    assert_eq!(m.block_size(0, 2), 0);
    assert_eq!(m.block_count(9), 0);
    let m = parse(single_info("n", 40000)).unwrap();
    assert_eq!(m.piece_count(), 3);
    assert_eq!(m.piece_size(2), 40000 - 2 * 16384);
    assert_eq!(m.piece_offset(2), 2 * 16384);
    assert_eq!(m.piece_hashes.len(), 3);
    assert_eq!(m.piece_hashes[1][0], 20);
}

#[test]
fn lengths_must_be_non_negative_and_consistent() {
    let err = parse(single_info("n", -1)).unwrap_err();
    assert_eq!(err.to_string(), "invalid 'length': -1 is negative");
    let err = parse(multi_info("n", &[(&["a"], 10), (&["b"], -5)])).unwrap_err();
    assert_eq!(err.to_string(), "invalid 'files[1].length': -5 is negative");
    let err = parse(single_info("n", 10).set("files", B::L(vec![]))).unwrap_err();
    assert!(matches!(err, MetainfoError::LengthAndFiles), "{err}");
    let err = parse(single_info("n", 10).remove("length")).unwrap_err();
    assert!(matches!(err, MetainfoError::NoLengthNorFiles), "{err}");
    let err = parse(multi_info("n", &[])).unwrap_err();
    assert_eq!(err.to_string(), "invalid 'files': the list is empty");
    let err = parse(single_info("n", 0).set("pieces", B::S(vec![]))).unwrap_err();
    assert!(matches!(err, MetainfoError::EmptyPayload), "{err}");
    let err = parse(multi_info("n", &[(&["a"], 0), (&["b"], 0)])).unwrap_err();
    assert!(matches!(err, MetainfoError::EmptyPayload), "{err}");
    // lengths adding up past u64
    let info = multi_info("n", &[(&["a"], i64::MAX), (&["b"], i64::MAX), (&["c"], 10)])
        .set("pieces", B::S(vec![]));
    let err = parse(info).unwrap_err();
    assert!(matches!(err, MetainfoError::TotalTooLarge), "{err}");
    let err = parse(multi_info("n", &[(&["a"], 10)]).set("files", B::L(vec![s("x")]))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid 'files[0]': expected a dictionary, found string"
    );
    let entry = d(vec![("length", B::I(10))]);
    let err = parse(multi_info_entries("n", vec![entry])).unwrap_err();
    assert_eq!(err.to_string(), "missing 'files[0].path'");
    let entry = d(vec![("length", B::I(10)), ("path", B::L(vec![B::I(1)]))]);
    let err = parse(multi_info_entries("n", vec![entry])).unwrap_err();
    assert!(matches!(err, MetainfoError::WrongType { .. }), "{err}");
}

#[test]
fn top_level_structure_errors() {
    for (data, want) in [
        (
            &b"le"[..],
            "not a .torrent: the top level is a list, not a dictionary",
        ),
        (
            b"i1e",
            "not a .torrent: the top level is a integer, not a dictionary",
        ),
        (b"de", "missing 'info'"),
        (
            b"d4:infoi1ee",
            "invalid 'info': expected a dictionary, found integer",
        ),
        (b"d4:infodee", "missing 'name'"),
    ] {
        let err = Metainfo::from_bytes(data).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
    let err = Metainfo::from_bytes(b"<html>").unwrap_err();
    assert!(err.to_string().starts_with("invalid bencode"), "{err}");
    let err = parse(single_info("n", 10).remove("piece length")).unwrap_err();
    assert_eq!(err.to_string(), "missing 'piece length'");
    // trailing garbage after the torrent
    let mut data = torrent(single_info("n", 10));
    data.extend_from_slice(b"junk");
    assert!(matches!(
        Metainfo::from_bytes(&data),
        Err(MetainfoError::Bencode(_))
    ));
    // ...but a trailing newline or NUL padding is fine, with the same info hash
    let clean = torrent(single_info("n", 10));
    let want = Metainfo::from_bytes(&clean).unwrap().info_hash;
    for tail in [&b"\n"[..], b"\r\n", b"  \n\n", b"\0\0\0"] {
        let mut data = clean.clone();
        data.extend_from_slice(tail);
        assert_eq!(
            Metainfo::from_bytes(&data).unwrap().info_hash,
            want,
            "{tail:?}"
        );
    }
}

#[test]
fn v2_only_torrents_are_read_and_hostile_ones_refused_clearly() {
    use sha2::Digest as _;
    let leaf = |len: i64, root: Vec<u8>| {
        d(vec![(
            "",
            d(vec![("length", B::I(len)), ("pieces root", B::S(root))]),
        )])
    };
    // a file of one piece, an empty one, one of three pieces (its layer given), in folders
    let big_root = {
        // the layer of 3 pieces of one leaf: leaves padded to 4 with zeros
        let layer: Vec<[u8; 32]> = (0..3u8).map(|i| [i + 10; 32]).collect();
        let pair = |a: &[u8], b: &[u8]| -> [u8; 32] {
            let mut h = sha2::Sha256::new();
            h.update(a);
            h.update(b);
            h.finalize().into()
        };
        let l = pair(&layer[0], &layer[1]);
        let r = pair(&layer[2], &[0; 32]);
        (pair(&l, &r), layer.concat())
    };
    let tree = d(vec![
        ("a.txt", leaf(10, vec![1; 32])),
        (
            "sub",
            d(vec![
                ("big.bin", leaf(3 * PL - 5, big_root.0.to_vec())),
                ("empty", d(vec![("", d(vec![("length", B::I(0))]))])),
            ]),
        ),
    ]);
    let info = d(vec![
        ("file tree", tree.clone()),
        ("meta version", B::I(2)),
        ("name", s("v2")),
        ("piece length", B::I(PL)),
    ]);
    let with_layers =
        |info: B, layers: B| d(vec![("info", info), ("piece layers", layers)]).bytes();
    // a layer for a root no file has is ignored
    let bytes = with_layers(info.clone(), B::D(vec![(vec![9; 32], B::S(vec![0; 64]))]));
    let m = Metainfo::from_bytes(&bytes).unwrap();
    assert_eq!(m.version(), ratorrent::metainfo::MetaVersion::V2);
    let v2: [u8; 32] = sha2::Sha256::digest(info.bytes()).into();
    assert_eq!(m.info_hash_v2, Some(v2));
    assert_eq!(m.info_hash, InfoHash::truncated(&v2));
    assert!(m.piece_hashes.is_empty());
    // a.txt, its padding, sub/big.bin, its padding (tail padding), sub/empty
    let shape: Vec<(String, u64, u64, bool)> = m
        .files
        .iter()
        .map(|f| {
            (
                f.path.to_string_lossy().into_owned(),
                f.offset,
                f.length,
                f.pad,
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("v2/a.txt".into(), 0, 10, false),
            (format!("v2/.pad/{}", PL - 10), 10, PL as u64 - 10, true),
            ("v2/sub/big.bin".into(), PL as u64, 3 * PL as u64 - 5, false),
            ("v2/.pad/5".into(), 4 * PL as u64 - 5, 5, true),
            ("v2/sub/empty".into(), 4 * PL as u64, 0, false),
        ]
    );
    assert_eq!(m.piece_count(), 4);
    let v = m.v2.as_ref().unwrap();
    assert!(!v.complete(), "big.bin's layer is missing: peers send it");
    let text = m.describe();
    assert!(
        text.contains("Info hash v1:  none (a v2-only torrent)"),
        "{text}"
    );
    assert!(
        text.contains("Piece layers:  missing for 1 file(s)"),
        "{text}"
    );
    // its layer given: complete
    let good = with_layers(
        info.clone(),
        B::D(vec![(big_root.0.to_vec(), B::S(big_root.1.clone()))]),
    );
    let m = Metainfo::from_bytes(&good).unwrap();
    assert!(m.v2.as_ref().unwrap().complete());
    // hostile: a layer of the wrong length, an oversized one, one that does not hash
    for (layer, why) in [
        (big_root.1[..64].to_vec(), "is 64 bytes, but"),
        (
            [big_root.1.clone(), vec![0; 32]].concat(),
            "is 128 bytes, but",
        ),
        (vec![7; 96], "does not hash to its 'pieces root'"),
    ] {
        let bad = with_layers(info.clone(), B::D(vec![(big_root.0.to_vec(), B::S(layer))]));
        let e = Metainfo::from_bytes(&bad).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid v2 torrent: 'piece layers': the layer of 'sub/big.bin'"),
            "{e}"
        );
        assert!(e.contains(why), "{e}");
    }
    // hostile: a '..' (or '.') in the file tree is refused, never resolved
    for name in ["..", "."] {
        let tree = d(vec![(name, d(vec![("x", leaf(10, vec![1; 32]))]))]);
        let info = d(vec![
            ("file tree", tree),
            ("meta version", B::I(2)),
            ("name", s("v2")),
            ("piece length", B::I(PL)),
        ]);
        let e = parse(info).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "invalid v2 torrent: v2 'file tree' entry '{name}': a '.' or '..' name (it \
                 would leave its folder): refused"
            )
        );
    }
    // a piece length v2 cannot use, and a tree without data
    let e = parse(d(vec![
        ("file tree", tree.clone()),
        ("meta version", B::I(2)),
        ("name", s("v2")),
        ("piece length", B::I(PL + 1)),
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("power of two of at least 16 KiB"), "{e}");
    let e = parse(d(vec![
        (
            "file tree",
            d(vec![("e", d(vec![("", d(vec![("length", B::I(0))]))]))]),
        ),
        ("meta version", B::I(2)),
        ("name", s("v2")),
        ("piece length", B::I(PL)),
    ]))
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "invalid v2 torrent: the v2 'file tree' holds no data (0 bytes)"
    );
    // a v1 torrent: no v2 hash
    let m = parse(single_info("n", 10)).unwrap();
    assert_eq!(m.info_hash_v2, None);
    // meta version 2 with v1 fields (hybrid): SHA-256 over the same bytes
    let leaf = d(vec![
        ("length", B::I(10)),
        ("pieces root", B::S(vec![1; 32])),
    ]);
    let info = single_info("n", 10)
        .push("meta version", B::I(2))
        .push("file tree", d(vec![("n", d(vec![("", leaf)]))]));
    let m = parse(info.clone()).unwrap();
    let want: [u8; 32] = sha2::Sha256::digest(info.bytes()).into();
    assert_eq!(m.info_hash_v2, Some(want));
    // meta version 2 without a file tree: neither v1 nor a hybrid (issue 16)
    let err = parse(single_info("n", 10).push("meta version", B::I(2))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid hybrid torrent: 'meta version' is 2 but there is no 'file tree' dictionary"
    );
}

// ---------------------------------------------------------------------------------------
// zero-length files, padding files

#[test]
fn zero_length_files_anywhere() {
    let m = parse(multi_info(
        "s",
        &[
            (&["z0"], 0),
            (&["a"], 100),
            (&["z1"], 0),
            (&["b"], 200),
            (&["z2"], 0),
        ],
    ))
    .unwrap();
    assert_invariants(&m);
    let got: Vec<(u64, u64)> = m.files.iter().map(|f| (f.offset, f.length)).collect();
    assert_eq!(got, vec![(0, 0), (0, 100), (100, 0), (100, 200), (300, 0)]);
    assert!(m.files.iter().all(|f| !f.pad));
    assert_eq!(m.total_length, 300);
    assert_eq!(m.payload_size(), 300);
}

#[test]
fn padding_files_at_any_position() {
    let m = parse(multi_info_entries(
        "s",
        vec![
            pad_entry(&[".pad", "100"], 100),
            file_entry(&["a"], 16284),
            pad_entry(&[".pad", "50"], 50),
            pad_entry(&[".pad", "50"], 50),
            file_entry(&["b"], 10),
            pad_entry(&[".pad", "7"], 7),
        ],
    ))
    .unwrap();
    assert_invariants(&m);
    let pads: Vec<bool> = m.files.iter().map(|f| f.pad).collect();
    assert_eq!(pads, vec![true, false, true, true, false, true]);
    assert_eq!(m.total_length, 100 + 16284 + 50 + 50 + 10 + 7);
    assert_eq!(m.payload_size(), 16284 + 10);
    assert_eq!(m.files[4].offset, 100 + 16284 + 100);
    // legacy conventions without `attr`
    let m = parse(multi_info(
        "s",
        &[
            (&["a"], 10),
            (&[".pad", "6"], 6),
            (
                &["_____padding_file_0_if you see this file, please update"],
                4,
            ),
            (&["sub", "_____padding_file_1"], 4),
            (&["b"], 10),
        ],
    ))
    .unwrap();
    let pads: Vec<bool> = m.files.iter().map(|f| f.pad).collect();
    assert_eq!(pads, vec![false, true, true, true, false]);
    // a real file named `.pad` (no folder) is not a pad
    let m = parse(multi_info("s", &[(&[".pad"], 10)])).unwrap();
    assert!(!m.files[0].pad);
    // `attr` with other flags (x = executable, h = hidden) is not a pad
    let entry = file_entry(&["run.sh"], 10).set("attr", s("x"));
    let m = parse(multi_info_entries("s", vec![entry])).unwrap();
    assert!(!m.files[0].pad);
    // pads' paths are sanitised like the others (they never reach the disk anyway)
    let m = parse(multi_info_entries(
        "s",
        vec![
            file_entry(&["a"], 10),
            pad_entry(&["..", "x"], 6),
            pad_entry(&[".."], 6),
        ],
    ))
    .unwrap();
    assert_invariants(&m);
    assert_eq!(m.files[1].path, Path::new("s/x"));
    assert_eq!(m.files[2].path, Path::new("s/.pad/6"));
}

// ---------------------------------------------------------------------------------------
// odd-list-fields: url-list, announce-list

fn with_top(pairs: Vec<(&str, B)>) -> Metainfo {
    let mut top = d(pairs);
    top = top.push("info", single_info("n", 10));
    Metainfo::from_bytes(&top.bytes()).unwrap()
}

#[test]
fn url_list_forms() {
    assert_eq!(
        with_top(vec![("url-list", s("http://127.0.0.1/f/"))]).web_seeds,
        vec!["http://127.0.0.1/f/"]
    );
    assert_eq!(
        with_top(vec![(
            "url-list",
            B::L(vec![
                s("http://127.0.0.1/a/"),
                B::I(3),
                s(""),
                s("http://127.0.0.1/b/"),
                s("http://127.0.0.1/a/"),
                B::L(vec![]),
            ])
        )])
        .web_seeds,
        vec!["http://127.0.0.1/a/", "http://127.0.0.1/b/"]
    );
    assert!(with_top(vec![]).web_seeds.is_empty());
    assert!(with_top(vec![("url-list", s(""))]).web_seeds.is_empty());
    assert!(with_top(vec![("url-list", B::I(1))]).web_seeds.is_empty());
}

#[test]
fn tracker_tiers() {
    let a = "http://127.0.0.1:1/announce";
    let b = "udp://127.0.0.1:2/announce";
    let c = "http://127.0.0.2:3/announce";
    // announce only
    assert_eq!(with_top(vec![("announce", s(a))]).trackers, vec![vec![a]]);
    // announce-list wins over announce; duplicates removed across tiers
    let m = with_top(vec![
        ("announce", s(c)),
        (
            "announce-list",
            B::L(vec![
                B::L(vec![s(a), s(b), s(a)]),
                B::L(vec![]),
                B::L(vec![s(b), s(c)]),
                s(" http://127.0.0.3/x "),
            ]),
        ),
    ]);
    assert_eq!(
        m.trackers,
        vec![vec![a, b], vec![c], vec!["http://127.0.0.3/x"]]
    );
    // empty announce-list falls back to announce
    for empty in [
        B::L(vec![]),
        B::L(vec![B::L(vec![])]),
        B::L(vec![B::L(vec![s("")])]),
        B::I(1),
    ] {
        let m = with_top(vec![("announce", s(a)), ("announce-list", empty)]);
        assert_eq!(m.trackers, vec![vec![a]]);
    }
    assert!(with_top(vec![]).trackers.is_empty());
    assert!(with_top(vec![("announce", s(""))]).trackers.is_empty());
}

#[test]
fn optional_fields() {
    let mut top = d(vec![
        ("comment", B::S(vec![0xff, b'x'])),
        ("comment.utf-8", s("héllo")),
        ("created by", s("gen 1.0")),
        ("creation date", B::I(-5)),
    ]);
    top = top.push("info", single_info("n", 10).push("private", B::I(1)));
    let m = Metainfo::from_bytes(&top.bytes()).unwrap();
    assert_eq!(m.comment.as_deref(), Some("héllo"));
    assert_eq!(m.created_by.as_deref(), Some("gen 1.0"));
    assert_eq!(m.creation_date, Some(-5));
    assert!(m.private);
    assert!(m.describe().contains("Private:       yes"));
    let m = with_top(vec![("comment", B::S(vec![0xff, b'x']))]);
    assert_eq!(m.comment.as_deref(), Some("\u{fffd}x"));
    for not_private in [B::I(0), B::I(2), s("1")] {
        let m = parse(single_info("n", 10).push("private", not_private)).unwrap();
        assert!(!m.private);
    }
}

#[test]
fn from_file_refuses_oversized_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.torrent");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(64 * 1024 * 1024 + 1).unwrap(); // sparse
    let err = Metainfo::from_file(&big).unwrap_err();
    assert!(matches!(err, MetainfoError::FileTooLarge { .. }), "{err}");
    let err = Metainfo::from_file(&dir.path().join("missing.torrent")).unwrap_err();
    assert!(matches!(err, MetainfoError::Io { .. }), "{err}");
    assert!(err.to_string().starts_with("cannot read "));
}

// ---------------------------------------------------------------------------------------
// Property-style: mutations and hostile generated file lists never panic, and whatever is
// accepted stays inside the download directory.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn mutate(rng: &mut StdRng, data: &[u8]) -> Vec<u8> {
    let mut m = data.to_vec();
    for _ in 0..rng.random_range(1..4) {
        if m.is_empty() {
            break;
        }
        let i = rng.random_range(0..m.len());
        match rng.random_range(0..7) {
            0 => m[i] = rng.random(),
            1 => m.truncate(i),
            2 => m.insert(i, rng.random()),
            3 => {
                m.remove(i);
            }
            4 => {
                let j = rng.random_range(i..m.len().min(i + 16) + 1).min(m.len());
                let chunk = m[i..j].to_vec();
                let k = rng.random_range(0..=m.len());
                m.splice(k..k, chunk);
            }
            5 => {
                m[i] = *b"0123456789:-ield./\\"
                    .get(rng.random_range(0..19))
                    .unwrap()
            }
            _ => {
                // swap a string's bytes for a hostile one of the same length
                let hostile: &[u8] =
                    [&b".."[..], b"/", b"\\", b"\0", b"C:", b"."][rng.random_range(0..6)];
                let end = (i + hostile.len()).min(m.len());
                m[i..end].copy_from_slice(&hostile[..end - i]);
            }
        }
    }
    m
}

#[test]
fn mutated_torrents_never_panic_and_accepted_paths_stay_inside() {
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "torrent"))
        .filter(|p| std::fs::metadata(p).unwrap().len() < 4096)
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    seeds.push(torrent(multi_info(
        "s",
        &[(&["a", "b.bin"], 100), (&["a", "c.bin"], 50), (&["d"], 70)],
    )));
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..20_000 {
        let seed = &seeds[round % seeds.len()];
        let data = mutate(&mut rng, seed);
        match Metainfo::from_bytes(&data) {
            Ok(m) => {
                accepted += 1;
                assert_invariants(&m);
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(accepted > 100 && refused > 100, "{accepted} / {refused}");
}

#[test]
fn hostile_generated_file_lists_stay_inside() {
    const ALPHABET: &[&str] = &[
        "..",
        ".",
        "",
        "/",
        "\\",
        "a",
        "b",
        "C:",
        "c:x",
        "a\0b",
        "...",
        " ",
        ". ",
        "x/..",
        "/etc",
        "..\\..",
        "Icon\r",
        "\u{1b}[2J",
        "_____padding_file_",
        ".pad",
        "é",
        "~",
        "$HOME",
        "con",
        "a.b",
    ];
    let mut rng = StdRng::seed_from_u64(42);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..5_000 {
        let pick = |rng: &mut StdRng| -> String {
            (0..rng.random_range(1..3))
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
                .collect()
        };
        let name = pick(&mut rng);
        let files: Vec<(Vec<String>, i64)> = (0..rng.random_range(1..5))
            .map(|_| {
                let comps = (0..rng.random_range(0..4))
                    .map(|_| pick(&mut rng))
                    .collect();
                (comps, rng.random_range(0..3000))
            })
            .collect();
        let entries: Vec<B> = files
            .iter()
            .map(|(c, l)| {
                let refs: Vec<&str> = c.iter().map(String::as_str).collect();
                let e = file_entry(&refs, *l);
                if rng.random_range(0..5) == 0 {
                    e.set("attr", s("p"))
                } else {
                    e
                }
            })
            .collect();
        let info = if rng.random_range(0..4) == 0 {
            single_info(&name, rng.random_range(1..3000))
        } else {
            multi_info_entries(&name, entries)
        };
        match parse(info) {
            Ok(m) => {
                accepted += 1;
                assert_invariants(&m);
            }
            // never for a name: only a real file without `path` components, or no data
            Err(MetainfoError::Missing { field }) if field.ends_with(".path") => refused += 1,
            Err(MetainfoError::EmptyPayload) => refused += 1,
            Err(e) => panic!("refused for {e}"),
        }
    }
    assert!(accepted > 2_000 && refused > 100, "{accepted} / {refused}");
}

// ---------------------------------------------------------------------------------------
// Builder

fn write(path: &Path, len: usize, seed: u8) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    std::fs::write(path, data).unwrap();
}

/// SHA-1 of each `pl`-byte piece of `data`.
fn piece_hashes(data: &[u8], pl: usize) -> Vec<[u8; 20]> {
    data.chunks(pl).map(|c| Sha1::digest(c).into()).collect()
}

#[test]
fn builder_round_trip_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("album");
    // created out of order; the torrent lists them sorted by path
    let layout: &[(&str, usize)] = &[
        ("z.bin", 40_000),
        ("a/2.bin", 16_384),
        ("a/1.bin", 1),
        ("empty.txt", 0),
        ("b/c/deep.bin", 70_001),
        (".hidden", 300),
    ];
    for (i, (p, len)) in layout.iter().enumerate() {
        write(&root.join(p), *len, i as u8);
    }
    std::fs::create_dir_all(root.join("empty-dir")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();

    let bytes = TorrentBuilder::new(&root)
        .piece_length(16 * 1024)
        .announce("http://127.0.0.1:6969/announce")
        .announce_tier(vec![
            "udp://127.0.0.1:6970".into(),
            "http://127.0.0.1:6971/a".into(),
        ])
        .web_seed("http://127.0.0.1:8080/files/")
        .private(true)
        .comment(Some("test".into()))
        .creation_date(Some(1_700_000_000))
        .build()
        .unwrap();
    let m = Metainfo::from_bytes(&bytes).unwrap();
    assert_invariants(&m);
    assert_eq!(m.name, "album");
    assert!(m.multi_file);
    assert!(m.private);
    assert_eq!(m.comment.as_deref(), Some("test"));
    assert_eq!(m.creation_date, Some(1_700_000_000));
    assert!(m.created_by.as_deref().unwrap().starts_with("ratorrent/"));
    assert_eq!(
        m.trackers,
        vec![
            vec!["http://127.0.0.1:6969/announce"],
            vec!["udp://127.0.0.1:6970", "http://127.0.0.1:6971/a"]
        ]
    );
    assert_eq!(m.web_seeds, vec!["http://127.0.0.1:8080/files/"]);

    let mut sorted: Vec<&(&str, usize)> = layout.iter().collect();
    sorted.sort_by_key(|(p, _)| p.split('/').collect::<Vec<_>>());
    let got: Vec<(String, u64)> = m
        .files
        .iter()
        .map(|f| (f.display_path.join("/"), f.length))
        .collect();
    let want: Vec<(String, u64)> = sorted
        .iter()
        .map(|(p, l)| (p.to_string(), *l as u64))
        .collect();
    assert_eq!(got, want);
    for f in &m.files {
        assert_eq!(f.path, Path::new("album").join(f.display_path.join("/")));
    }

    // piece hashes over the concatenation, computed independently
    let mut payload = Vec::new();
    for (p, _) in &sorted {
        payload.extend(std::fs::read(root.join(p)).unwrap());
    }
    assert_eq!(m.total_length, payload.len() as u64);
    assert_eq!(m.piece_hashes, piece_hashes(&payload, 16 * 1024));

    // the info hash is SHA-1 of the info bytes, which sit verbatim in the file
    assert_eq!(m.info_hash.0, <[u8; 20]>::from(Sha1::digest(&m.info_bytes)));
    assert!(
        bytes
            .windows(m.info_bytes.len())
            .any(|w| w == m.info_bytes.as_slice())
    );
    // canonical: bendy's strict decoder (sorted, unique keys) reads every token
    let tokens = bendy::decoding::Decoder::new(&bytes)
        .with_max_depth(16)
        .tokens();
    let mut count = 0;
    for t in tokens {
        if let Err(e) = t {
            panic!("bendy refuses the output: {e}");
        }
        count += 1;
    }
    assert!(count > 20);
    // and refuses an unsorted one, which is why the parser does not use it
    let unsorted = d(vec![("b", B::I(1)), ("a", B::I(2))]).bytes();
    assert!(
        bendy::decoding::Decoder::new(&unsorted)
            .tokens()
            .any(|t| t.is_err())
    );
}

#[test]
fn builder_round_trip_single_file_and_default_piece_length() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.iso");
    write(&file, 100_000, 9);
    let bytes = TorrentBuilder::new(&file)
        .creation_date(None)
        .created_by(None)
        .build()
        .unwrap();
    let m = Metainfo::from_bytes(&bytes).unwrap();
    assert_invariants(&m);
    assert!(!m.multi_file);
    assert_eq!(m.name, "one.iso");
    assert_eq!(m.files[0].path, Path::new("one.iso"));
    assert_eq!(m.total_length, 100_000);
    assert_eq!(m.piece_length, 16 * 1024);
    assert!(m.trackers.is_empty() && !m.private && m.creation_date.is_none());
    assert_eq!(m.created_by, None);
    let data = std::fs::read(&file).unwrap();
    assert_eq!(m.piece_hashes, piece_hashes(&data, 16 * 1024));
    // deterministic
    let again = TorrentBuilder::new(&file)
        .creation_date(None)
        .created_by(None)
        .build()
        .unwrap();
    assert_eq!(bytes, again);
}

#[test]
fn builder_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    write(&empty.join("zero"), 0, 0);
    assert!(matches!(
        TorrentBuilder::new(&empty).build(),
        Err(CreateError::Empty { .. })
    ));
    let file = dir.path().join("f");
    write(&file, 10, 0);
    for bad in [0u32, 1000, 16 * 1024 + 1, 8 * 1024, 1024 * 1024 * 1024] {
        assert!(matches!(
            TorrentBuilder::new(&file).piece_length(bad).build(),
            Err(CreateError::PieceLength(b)) if b == bad
        ));
    }
    assert!(matches!(
        TorrentBuilder::new(dir.path().join("missing")).build(),
        Err(CreateError::Io { .. })
    ));
    // names a downloader would refuse or rename
    let odd = dir.path().join("odd");
    write(&odd.join("Icon\r"), 10, 0);
    let err = TorrentBuilder::new(&odd).build().unwrap_err();
    assert!(
        matches!(
            err,
            CreateError::UnsafeName {
                problem: NameProblem::Renamed,
                ..
            }
        ),
        "{err}"
    );
    // two names that differ only by letter case: a downloader renames one
    let case = dir.path().join("case");
    write(&case.join("sub").join("A.txt"), 10, 0);
    write(&case.join("sub").join("a.txt"), 10, 0);
    let err = TorrentBuilder::new(&case).build().unwrap_err();
    assert!(
        matches!(
            &err,
            CreateError::UnsafeName {
                problem: NameProblem::CaseCollision,
                path,
            } if path.ends_with("sub/a.txt")
        ),
        "{err}"
    );
    let case2 = dir.path().join("case2");
    write(&case2.join("X").join("1"), 10, 0);
    write(&case2.join("x"), 10, 0);
    let err = TorrentBuilder::new(&case2).build().unwrap_err();
    assert!(err.to_string().contains("only by letter case"), "{err}");
    let odd2 = dir.path().join("odd2");
    write(&odd2.join("a\\b"), 10, 0);
    let err = TorrentBuilder::new(&odd2).build().unwrap_err();
    assert!(
        matches!(
            err,
            CreateError::UnsafeName {
                problem: NameProblem::Unsafe(UnsafeComponent::Separator),
                ..
            }
        ),
        "{err}"
    );
}

/// Found while fuzzing (issue 9): chained symlink entries (`l0 → l1 → ... → d`) and many
/// links whose `symlink path` goes through the chain (`l0/f`) cost time quadratic in the
/// number of files (1000 + 1000: 3.2 s in a debug build, 4000 + 4000 minutes). Now at most
/// `MAX_SYMLINK_HOPS` (40, Linux's limit) links are followed per target.
#[test]
fn chained_symlinks_cost_linear_time_and_stop_after_max_hops() {
    use ratorrent::metainfo::MAX_SYMLINK_HOPS;
    let link = |path: &str, target: &[&str]| {
        d(vec![
            ("attr", s("l")),
            ("length", B::I(0)),
            ("path", path_list(&[path])),
            ("symlink path", path_list(target)),
        ])
    };
    let n = 3000;
    let names: Vec<String> = (0..n).map(|i| format!("l{i}")).collect();
    let mut entries = vec![file_entry(&["d", "f"], 100)];
    for i in 0..n {
        let next = if i + 1 < n {
            names[i + 1].as_str()
        } else {
            "d"
        };
        entries.push(link(&names[i], &[next]));
    }
    // through exactly MAX_SYMLINK_HOPS links, one more, and the whole chain
    let k_ok = n - MAX_SYMLINK_HOPS;
    entries.push(link("ok", &[&names[k_ok], "f"]));
    entries.push(link("too_far", &[&names[k_ok - 1], "f"]));
    for j in 0..n {
        entries.push(link(&format!("t{j}"), &["l0", "f"]));
    }
    let info = multi_info_entries("s", entries);
    let started = std::time::Instant::now();
    let m = parse(info).unwrap();
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    let target = |name: &str| {
        m.files
            .iter()
            .find(|f| f.path == Path::new("s").join(name))
            .unwrap()
            .symlink_target
            .clone()
    };
    // the target is kept as written (it resolves to s/d/f)
    assert_eq!(
        target("ok"),
        Some(PathBuf::from(format!("s/{}/f", names[k_ok])))
    );
    assert_eq!(target("too_far"), None);
    assert_eq!(target("t0"), None);
    // each link of the chain points at the next one directly
    assert_eq!(target("l7"), Some(PathBuf::from("s/l8")));
    assert_eq!(target(&names[n - 1]), Some(PathBuf::from("s/d")));
}
