//! Hybrid torrents (BEP 52 v2 beside v1) whose v2 side disagrees with the v1 side are
//! refused with the reason (issue 16 item 5), through the real binary. Valid hybrids are
//! made by python3-libtorrent (a multi-file one with an empty file, padding and piece
//! layers, and a single-file one), then mutated one field at a time: the file list, each
//! length, the paths, the padding, the `file tree` shape, the pieces roots, the piece
//! layers' sizes and hashes, the piece length. Valid hybrids still load, and one downloads
//! from a libtorrent seeder.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::rat::Rat;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, temp_dir};

const SEEDER_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 0, 2);

/// Writes `src/multi/{a.bin, b/c.bin (empty), b/d.bin, e.bin}` and `src/single.bin`, their
/// hybrid torrents (16 KiB pieces) `m_base.torrent` and `s_base.torrent`, and one mutated
/// torrent per case below, into the folder given as the first argument.
const MAKE_HYBRIDS: &str = r#"
import libtorrent as lt, os, sys, copy
out = sys.argv[1]
src = os.path.join(out, "src")
tracker = sys.argv[2]
def data(rel, n, seed):
    p = os.path.join(src, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(bytes((i * 7 + seed) % 251 for i in range(n)))
for rel, n, seed in [("multi/a.bin", 100000, 1), ("multi/b/c.bin", 0, 2),
                     ("multi/b/d.bin", 70000, 3), ("multi/e.bin", 5000, 4),
                     ("single.bin", 50000, 5)]:
    data(rel, n, seed)
def make(rel, pl, flags=0):
    fs = lt.file_storage()
    lt.add_files(fs, os.path.join(src, rel))
    ct = lt.create_torrent(fs, pl, flags=flags)
    ct.add_tracker(tracker)
    lt.set_piece_hashes(ct, src)
    return ct.generate()
def save(name, t):
    with open(os.path.join(out, name + ".torrent"), "wb") as f:
        f.write(lt.bencode(t))
M = make("multi", 16384)
S = make("single.bin", 16384)
save("m_base", M)
save("s_base", S)
def case(name, base, change):
    t = copy.deepcopy(base)
    change(t)
    save(name, t)
info = lambda t: t[b"info"]
tree = lambda t: t[b"info"][b"file tree"]
def leaf(t, *path):
    d = tree(t)
    for k in path:
        d = d[k]
    return d[b""]
a_root = M[b"info"][b"file tree"][b"a.bin"][b""][b"pieces root"]
v1 = lambda t: t[b"info"][b"files"]
def rename(d, old, new):
    d[new] = d.pop(old)
# valid variants
case("ok_no_layers", M, lambda t: t.pop(b"piece layers"))
case("ok_unknown_layer", M, lambda t: t[b"piece layers"].__setitem__(b"\x01" * 32, b"\x00" * 32))
case("ok_exec_attr", M, lambda t: leaf(t, b"e.bin").__setitem__(b"attr", b"x"))
# the file list
case("v2_renamed", M, lambda t: rename(tree(t), b"a.bin", b"z.bin"))
case("v2_renamed_in_folder", M, lambda t: rename(tree(t)[b"b"], b"d.bin", b"dd.bin"))
case("v2_extra_file", M, lambda t: tree(t).__setitem__(b"f.bin", {b"": {b"length": 10, b"pieces root": b"\x07" * 32}}))
case("v2_extra_empty_file", M, lambda t: tree(t).__setitem__(b"f.bin", {b"": {b"length": 0}}))
case("v2_missing_file", M, lambda t: tree(t).pop(b"e.bin"))
case("v2_missing_empty_file", M, lambda t: tree(t)[b"b"].pop(b"c.bin"))
case("v1_renamed", M, lambda t: v1(t)[3].__setitem__(b"path", [b"b", b"x.bin"]))
case("s_v2_renamed", S, lambda t: rename(tree(t), b"single.bin", b"/ingle.bin"))
case("s_v2_two_files", S, lambda t: tree(t).__setitem__(b"zz.bin", {b"": {b"length": 1, b"pieces root": b"\x07" * 32}}))
# the lengths
case("v2_length", M, lambda t: leaf(t, b"b", b"d.bin").__setitem__(b"length", 70001))
case("v2_empty_not_empty", M, lambda t: leaf(t, b"b", b"c.bin").update({b"length": 5, b"pieces root": b"\x07" * 32}))
def longer_e(t):
    v1(t)[5][b"length"] += 1
    v1(t)[6][b"length"] -= 1
case("v1_length", M, longer_e)
case("s_v2_length", S, lambda t: leaf(t, b"single.bin").__setitem__(b"length", 49999))
# the padding (the v1 total and piece count unchanged: only the layout moves)
def shift_pad(t):
    v1(t)[1][b"length"] -= 1
    v1(t)[6][b"length"] += 1
case("v1_pad_short", M, shift_pad)
# the file tree's shape and the roots
case("v2_no_leaf", M, lambda t: tree(t).__setitem__(b"e.bin", dict(tree(t)[b"e.bin"][b""])))
case("v2_leaf_and_folder", M, lambda t: tree(t)[b"e.bin"].__setitem__(b"x", {b"": {b"length": 0}}))
case("v2_leaf_not_dict", M, lambda t: tree(t)[b"e.bin"].__setitem__(b"", 5000))
case("v2_empty_folder", M, lambda t: tree(t).__setitem__(b"empty", {}))
case("v2_empty_name", M, lambda t: tree(t).__setitem__(b"", {b"": {b"length": 0}}))
case("v2_pad_attr", M, lambda t: leaf(t, b"e.bin").__setitem__(b"attr", b"p"))
case("v2_no_length", M, lambda t: leaf(t, b"e.bin").pop(b"length"))
case("v2_negative_length", M, lambda t: leaf(t, b"e.bin").__setitem__(b"length", -5000))
case("v2_no_root", M, lambda t: leaf(t, b"e.bin").pop(b"pieces root"))
case("v2_short_root", M, lambda t: leaf(t, b"e.bin").__setitem__(b"pieces root", b"\x07" * 31))
case("v2_zero_root", M, lambda t: leaf(t, b"e.bin").__setitem__(b"pieces root", b"\x00" * 32))
case("v2_no_file_tree", M, lambda t: info(t).pop(b"file tree"))
# the piece layers
case("layer_short", M, lambda t: t[b"piece layers"].__setitem__(a_root, t[b"piece layers"][a_root][:-32]))
case("layer_long", M, lambda t: t[b"piece layers"].__setitem__(a_root, t[b"piece layers"][a_root] + b"\x00" * 32))
case("layer_hash", M, lambda t: t[b"piece layers"].__setitem__(a_root, b"\xff" + t[b"piece layers"][a_root][1:]))
case("layer_not_string", M, lambda t: t[b"piece layers"].__setitem__(a_root, 5))
case("layers_not_dict", M, lambda t: t.__setitem__(b"piece layers", [b"x"]))
# the piece length: 16385 bytes (the v1 side still needs 4 pieces for 50000 bytes)
case("piece_length", S, lambda t: info(t).__setitem__(b"piece length", 16385))
"#;

/// Runs [`MAKE_HYBRIDS`] into `dir`.
fn make_hybrids(dir: &Path, tracker: &str) {
    common::require_libtorrent();
    let out = Command::new(common::lt::PYTHON)
        .args(["-c", MAKE_HYBRIDS])
        .arg(dir)
        .arg(tracker)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "making hybrids: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ratorrent info FILE`: success and the whole output.
fn info(home: &Path, file: &Path) -> (bool, String) {
    let out = common::rat::command(home)
        .arg("info")
        .arg(file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn hybrids_whose_v2_side_disagrees_are_refused_with_the_reason() {
    let dir = temp_dir();
    make_hybrids(dir.path(), "http://127.0.0.1:1/announce");
    let t = |name: &str| -> PathBuf { dir.path().join(format!("{name}.torrent")) };
    for ok in [
        "m_base",
        "s_base",
        "ok_no_layers",
        "ok_unknown_layer",
        "ok_exec_attr",
    ] {
        let (success, text) = info(dir.path(), &t(ok));
        assert!(success, "{ok} is valid:\n{text}");
        assert!(text.contains("Info hash v2:  "), "{ok}:\n{text}");
    }
    let refused = [
        (
            "v2_renamed",
            "file 0 is 'a.bin' on the v1 side but 'b/c.bin' on the v2 side",
        ),
        (
            "v2_renamed_in_folder",
            "file 2 is 'b/d.bin' on the v1 side but 'b/dd.bin' on the v2 side",
        ),
        (
            "v2_extra_file",
            "the v1 side lists 4 files but the v2 side 5",
        ),
        (
            "v2_extra_empty_file",
            "the v1 side lists 4 files but the v2 side 5",
        ),
        (
            "v2_missing_file",
            "the v1 side lists 4 files but the v2 side 3",
        ),
        (
            "v2_missing_empty_file",
            "the v1 side lists 4 files but the v2 side 3",
        ),
        (
            "v1_renamed",
            "file 2 is 'b/x.bin' on the v1 side but 'b/d.bin' on the v2 side",
        ),
        (
            "s_v2_renamed",
            "file 0 is 'single.bin' on the v1 side but '/ingle.bin' on the v2 side",
        ),
        (
            "s_v2_two_files",
            "the v1 side lists 1 files but the v2 side 2",
        ),
        (
            "v2_length",
            "'b/d.bin' is 70000 bytes on the v1 side but 70001 on the v2 side",
        ),
        (
            "v2_empty_not_empty",
            "'b/c.bin' is 0 bytes on the v1 side but 5 on the v2 side",
        ),
        (
            "v1_length",
            "'e.bin' is 5001 bytes on the v1 side but 5000 on the v2 side",
        ),
        (
            "s_v2_length",
            "'single.bin' is 50000 bytes on the v1 side but 49999 on the v2 side",
        ),
        (
            "v1_pad_short",
            "'b/d.bin' starts at byte 114687 on the v1 side, not on a piece boundary",
        ),
        (
            "v2_no_leaf",
            "v2 'file tree' entry 'e.bin/length': not a dictionary",
        ),
        (
            "v2_leaf_and_folder",
            "v2 'file tree' entry 'e.bin': a file ('' key) that is also a folder",
        ),
        (
            "v2_leaf_not_dict",
            "v2 'file tree' entry 'e.bin': its '' entry is not a dictionary",
        ),
        (
            "v2_empty_folder",
            "v2 'file tree' entry 'empty': an empty folder",
        ),
        ("v2_empty_name", "v2 'file tree' entry '': an empty name"),
        (
            "v2_pad_attr",
            "v2 'file tree' entry 'e.bin': a padding file (attr p) on the v2 side",
        ),
        ("v2_no_length", "v2 'file tree' entry 'e.bin': no 'length'"),
        (
            "v2_negative_length",
            "v2 'file tree' entry 'e.bin': a negative 'length'",
        ),
        (
            "v2_no_root",
            "v2 'file tree' entry 'e.bin': no 'pieces root' for a non-empty file",
        ),
        (
            "v2_short_root",
            "v2 'file tree' entry 'e.bin': a 'pieces root' that is not 32 bytes",
        ),
        (
            "v2_zero_root",
            "v2 'file tree' entry 'e.bin': a 'pieces root' of zeros",
        ),
        (
            "v2_no_file_tree",
            "'meta version' is 2 but there is no 'file tree' dictionary",
        ),
        (
            "layer_short",
            "'piece layers': the layer of 'a.bin' is 192 bytes, but its 100000 bytes in pieces of 16384 need \
             224 (7 hashes of 32 bytes)",
        ),
        (
            "layer_long",
            "'piece layers': the layer of 'a.bin' is 256 bytes",
        ),
        (
            "layer_hash",
            "'piece layers': the layer of 'a.bin' does not hash to its 'pieces root'",
        ),
        (
            "layer_not_string",
            "'piece layers': the layer of 'a.bin' is not a string",
        ),
        ("layers_not_dict", "'piece layers': not a dictionary"),
        (
            "piece_length",
            "the v2 side needs a piece length that is a power of two of at least 16 KiB, \
             not 16385",
        ),
    ];
    for (name, why) in refused {
        let (success, text) = info(dir.path(), &t(name));
        assert!(!success, "{name} must be refused:\n{text}");
        assert!(
            text.contains(&format!(
                "not a valid torrent: invalid hybrid torrent: {why}"
            )),
            "{name}: {why:?} not in\n{text}"
        );
    }
    // libtorrent's own two cases
    let lt = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/libtorrent");
    for (file, why) in [
        (
            "v2_mismatching_metadata.torrent",
            "file 0 is 'test1MB' on the v1 side but '/est1MB' on the v2 side",
        ),
        (
            "v2_invalid_file.torrent",
            "v2 'file tree' entry 'test64K/length': not a dictionary",
        ),
    ] {
        let (success, text) = info(dir.path(), &lt.join(file));
        assert!(!success && text.contains(why), "{file}:\n{text}");
    }
}

/// A valid hybrid made by libtorrent downloads from a libtorrent seeder, byte-exact.
#[test]
fn a_valid_hybrid_downloads_from_libtorrent() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    make_hybrids(dir.path(), &tracker.url());
    let torrent = dir.path().join("m_base.torrent");
    let src = dir.path().join("src");
    let _seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));
    let dst = dir.path().join("dst");
    let mut rat = Rat::download(&torrent, &dst, free_port(), &[]);
    let st = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(st.success(), "{st}\n{}", rat.output());
    common::compare_trees(&src.join("multi"), &dst.join("multi")).unwrap();
}
