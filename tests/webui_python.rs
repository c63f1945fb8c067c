//! The Web API through the PyPI package `qbittorrent-api` (the library many seedbox tools
//! are built on): `tests/support/qbt_api_flows.py` runs its core flows against ratorrent's
//! TUI process downloading from real libtorrent seeders on loopback. Needs
//! `pip install qbittorrent-api` for `python3` (CI installs it).

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use common::payload::{self, FileSpec};
use common::qbt::RatWeb;
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent};

fn python_with_qbittorrent_api() -> String {
    for py in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(py)
            .args(["-c", "import qbittorrentapi"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return py.to_owned();
        }
    }
    panic!(
        "the Python package qbittorrent-api is missing: pip install qbittorrent-api \
         (for the python3 in PATH)"
    );
}

#[test]
fn qbittorrent_api_package_core_flows() {
    let python = python_with_qbittorrent_api();
    common::require_libtorrent();
    let tracker = TestTracker::start();
    let dir = common::temp_dir();
    let src = dir.path().join("src");
    let album = src.join("Album");
    payload::write_tree(
        &album,
        &[
            FileSpec::new("01.flac", 1 << 20),
            FileSpec::new("02.flac", (1 << 20) + 777),
            FileSpec::new("cover.jpg", 30_000),
        ],
        0x61,
    )
    .unwrap();
    let book = src.join("Book.epub");
    payload::write_file(&book, 700_000, 0x62).unwrap();
    let album_t = dir.path().join("album.torrent");
    let book_t = dir.path().join("book.torrent");
    let album_hash = make_torrent(&album, &album_t, &tracker.url(), Some(32 << 10)).to_hex();
    let book_hash = make_torrent(&book, &book_t, &tracker.url(), Some(32 << 10)).to_hex();
    let seed = |t: &Path, ip: Ipv4Addr| LtPeer::seed(&SeedArgs::new(t, &src, ip, free_port_on(ip)));
    let _seeders = [
        seed(&album_t, Ipv4Addr::new(127, 0, 0, 4)),
        seed(&book_t, Ipv4Addr::new(127, 0, 0, 5)),
    ];
    let magnet = format!(
        "magnet:?xt=urn:btih:{album_hash}&dn=Album&tr={}",
        form_urlencoded::byte_serialize(tracker.url().as_bytes()).collect::<String>()
    );
    let rat = RatWeb::start("python", "lidarr", "py-pass", "");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/qbt_api_flows.py");
    let out = Command::new(&python)
        .arg(&script)
        .args([
            rat.base.as_str(),
            "lidarr",
            "py-pass",
            &magnet,
            &album_hash,
            &book_t.display().to_string(),
            &book_hash,
            &rat.dl.display().to_string(),
        ])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("ALL OK"),
        "qbt_api_flows.py failed:\n{stdout}\n{stderr}\nscreen:\n{}",
        rat.pane.capture()
    );
    eprintln!("{stdout}");
}
