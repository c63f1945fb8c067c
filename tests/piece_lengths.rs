//! Piece lengths from 16 KiB to 512 MiB (issue 16 item 4), through the real binary: `info`
//! accepts them (and refuses more, with the reason); ratorrent downloads from a libtorrent
//! seeder at 16 KiB, an odd length and libtorrent's largest (512 MiB less a block), and
//! from ratorrent at 512 MiB; and a single piece of 96 MiB (in a torrent of libtorrent's
//! largest piece length) is downloaded from libtorrent and then
//! seeded to a libtorrent leecher with ratorrent's anonymous memory far below the piece:
//! blocks are hashed as they arrive and written, checks read in bounded steps, a piece is
//! never held in memory.

mod common;
mod path_support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use common::procmem::MemSampler;
use common::rat::Rat;
use common::{LeechArgs, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, temp_dir};
use path_support::{Entry, Shape, comps};
use ratorrent::metainfo::{InfoHash, Metainfo};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
const MIB: u64 = 1 << 20;
/// libtorrent's largest piece length (its `large_piece_size` test torrent): 512 MiB less
/// one 16 KiB block.
const LT_MAX_PIECE: u32 = (512 << 20) - (16 << 10);

/// A torrent of `shape` (real piece hashes) written to `dir/p.torrent`, and its payload
/// laid out under `dir/src`; returns the .torrent path and the info hash.
fn write(dir: &Path, shape: &Shape, announce: &str) -> (std::path::PathBuf, InfoHash) {
    let built = shape.build(announce);
    let torrent = dir.join("p.torrent");
    std::fs::write(&torrent, &built.torrent).unwrap();
    let m = Metainfo::from_bytes(&built.torrent).unwrap();
    let files: Vec<(String, u64, bool)> = m
        .files
        .iter()
        .map(|f| (f.path.to_str().unwrap().to_owned(), f.length, f.pad))
        .collect();
    path_support::lay_out(&dir.join("src"), &built.payload, &files);
    (torrent, m.info_hash)
}

/// `ratorrent info` of a single-file torrent of 10,000 bytes with piece length `pl`.
fn info(dir: &Path, pl: u32) -> std::process::Output {
    let torrent = dir.join("info.torrent");
    std::fs::write(
        &torrent,
        single("x.bin", 10_000, pl).build("http://t/a").torrent,
    )
    .unwrap();
    common::rat::command(dir)
        .arg("info")
        .arg(&torrent)
        .output()
        .unwrap()
}

fn single(name: &str, length: u64, piece_length: u32) -> Shape {
    Shape {
        name: name.as_bytes().to_vec(),
        single: Some(length),
        entries: Vec::new(),
        piece_length,
    }
}

#[test]
fn info_accepts_16_kib_to_512_mib_and_refuses_more() {
    let dir = temp_dir();
    for (pl, shown) in [
        (16 << 10, "Pieces:        1 x 16.0 KiB (16384 bytes)"),
        (16 << 10 | 1, "Pieces:        1 x 16.0 KiB (16385 bytes)"),
        (256 << 20, "Pieces:        1 x 256 MiB (268435456 bytes)"),
        (LT_MAX_PIECE, "Pieces:        1 x 512 MiB (536854528 bytes)"),
        (512 << 20, "Pieces:        1 x 512 MiB (536870912 bytes)"),
    ] {
        let out = info(dir.path(), pl);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{pl}: {out:?}");
        assert!(stdout.contains(shown), "{pl}: {shown:?} not in\n{stdout}");
    }
    let lt = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/libtorrent");
    let out = common::rat::command(dir.path())
        .arg("info")
        .arg(lt.join("large_piece_size.torrent"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for pl in [(512 << 20) + 1, 1 << 30] {
        let out = info(dir.path(), pl);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{pl}");
        assert!(
            stderr.contains(&format!(
                "invalid 'piece length': {pl} bytes (must be between 1 and 536870912)"
            )),
            "{pl}: {stderr}"
        );
    }
}

/// Three files of 5 MiB in all, in pieces of `pl` bytes.
fn album(pl: u32) -> Shape {
    Shape {
        name: b"album".to_vec(),
        single: None,
        entries: vec![
            Entry::File(comps(&["a.bin"]), 2 * MIB + 5),
            Entry::File(comps(&["sub", "b.bin"]), 40_000),
            Entry::File(comps(&["c.bin"]), 3 * MIB),
        ],
        piece_length: pl,
    }
}

#[test]
fn downloads_from_libtorrent_at_16_kib_an_odd_length_and_the_largest() {
    for pl in [16 << 10, (1 << 20) + (16 << 10), LT_MAX_PIECE] {
        let tracker = TestTracker::start();
        let dir = temp_dir();
        let (torrent, _) = write(dir.path(), &album(pl), &tracker.url());
        let _seeder = LtPeer::seed(&SeedArgs::new(
            &torrent,
            &dir.path().join("src"),
            SEEDER_IP,
            free_port_on(SEEDER_IP),
        ));
        let dst = dir.path().join("dst");
        let mut rat = Rat::download(&torrent, &dst, free_port(), &[]);
        let st = rat.wait(Duration::from_secs(120)).unwrap();
        assert!(st.success(), "piece length {pl}: {st}\n{}", rat.output());
        common::compare_trees(&dir.path().join("src/album"), &dst.join("album"))
            .unwrap_or_else(|e| panic!("piece length {pl}: {e}"));
    }
}

/// Exactly 512 MiB, which libtorrent 2.0.8 parses but will not run ("invalid piece size"):
/// ratorrent seeds it to ratorrent.
#[test]
fn downloads_512_mib_pieces_from_ratorrent() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let (torrent, ih) = write(dir.path(), &album(512 << 20), &tracker.url());
    let port = free_port();
    let seeder = Rat::download(&torrent, &dir.path().join("src"), port, &["--seed"]);
    tracker
        .wait_for_announce(Duration::from_secs(60), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    let dst = dir.path().join("dst");
    let mut rat = Rat::download(&torrent, &dst, free_port(), &[]);
    let st = rat.wait(Duration::from_secs(120)).unwrap();
    assert!(st.success(), "{st}\n{}\n{}", rat.output(), seeder.output());
    common::compare_trees(&dir.path().join("src/album"), &dst.join("album")).unwrap();
}

/// Above this, ratorrent would be holding a large share of the 96 MiB piece in memory.
const ANON_LIMIT_MIB: f64 = 32.0;

#[test]
fn a_96_mib_piece_is_downloaded_and_seeded_without_holding_it_in_memory() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let shape = single("huge.bin", 96 * MIB, LT_MAX_PIECE);
    let (torrent, ih) = write(dir.path(), &shape, &tracker.url());
    let src = dir.path().join("src");
    let seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));

    // download the one piece from libtorrent, then keep seeding it
    let dst = dir.path().join("dst");
    let port = free_port();
    let mut rat = Rat::download(&torrent, &dst, port, &["--seed"]);
    let mut mem = MemSampler::start(rat.pid());
    rat.wait_stdout("complete:", Duration::from_secs(180))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let down = mem.stop();
    common::compare_files(&src.join("huge.bin"), &dst.join("huge.bin")).unwrap();
    assert!(
        down.peak_anon_mib() < ANON_LIMIT_MIB,
        "downloading a 96 MiB piece: {down}"
    );
    drop(seeder);

    // a libtorrent leecher gets it from ratorrent (ratorrent's only source now)
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let mut mem = MemSampler::start(rat.pid());
    let got = dir.path().join("got");
    let mut leecher = LtPeer::leech(&LeechArgs {
        timeout_s: 150,
        ..LeechArgs::new(&torrent, &got, LEECHER_IP, free_port_on(LEECHER_IP))
    });
    leecher
        .wait_done(Duration::from_secs(160))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let up = mem.stop();
    common::compare_files(&src.join("huge.bin"), &got.join("huge.bin")).unwrap();
    assert!(
        up.peak_anon_mib() < ANON_LIMIT_MIB,
        "seeding a 96 MiB piece: {up}"
    );
    println!("download: {down}\nupload: {up}");
    let _ = rat.terminate();
}
