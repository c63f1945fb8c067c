//! ratorrent downloads from a real libtorrent seeder (Debian's python3-libtorrent) found
//! through a tracker on loopback, and the bytes match.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    Event, LtPeer, SeedArgs, TestTracker, compare_trees, free_port, free_port_on, make_torrent,
    temp_dir,
};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn download_from_libtorrent(layout: &[FileSpec], piece_length: u32) {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let dst = dir.path().join("dst");
    payload::write_tree(&src.join("payload"), layout, 0xfeed).expect("payload");
    let torrent = dir.path().join("payload.torrent");
    let data = if layout.len() == 1 {
        src.join("payload").join(&layout[0].path)
    } else {
        src.join("payload")
    };
    let seed_dir = data.parent().unwrap().to_path_buf();
    let ih = make_torrent(&data, &torrent, &tracker.url(), Some(piece_length));
    let _seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &seed_dir,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));

    let port = free_port();
    // some trackers list the asker itself: dialling it must be recognised and not repeated
    // (we listen on every address, so 127.0.0.5 reaches us while the tracker sees 127.0.0.1)
    tracker.add_peer(
        ih,
        std::net::SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 5), port),
        Some(0),
    );
    let mut rat = Rat::download(&torrent, &dst, port, &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(
        status.success(),
        "ratorrent exited with {status}\n{}",
        rat.output()
    );
    let name = data.file_name().unwrap();
    if layout.len() == 1 {
        common::compare_files(&data, &dst.join(name)).unwrap();
    } else {
        compare_trees(&data, &dst.join(name)).unwrap();
    }
    assert!(rat.stdout().contains("complete:"), "{}", rat.output());
    assert_eq!(
        rat.stderr().matches("that address is ourselves").count(),
        1,
        "self-connection detected once and never retried\n{}",
        rat.output()
    );

    // the tracker heard started, completed and stopped from ratorrent (port = ours)
    let ours = |ev: Event| {
        move |a: &common::Announce| a.info_hash == ih && a.addr.port() == port && a.event == ev
    };
    for ev in [Event::Started, Event::Completed, Event::Stopped] {
        tracker
            .wait_for_announce(Duration::from_secs(5), ours(ev.clone()))
            .unwrap_or_else(|e| panic!("{e}\n{}\n{}", tracker.describe(), rat.output()));
    }
    let stopped = tracker
        .wait_for_announce(Duration::from_secs(1), ours(Event::Stopped))
        .unwrap();
    assert_eq!(stopped.left, Some(0), "left=0 once complete");
    assert!(stopped.downloaded >= Some(payload::total_len(layout)));
}

#[test]
fn single_file_from_libtorrent_seeder() {
    // odd size: the last piece and its last block are short
    download_from_libtorrent(
        &[FileSpec::new("single.bin", 3 * 1024 * 1024 + 12_345)],
        64 * 1024,
    );
}

#[test]
fn multi_file_from_libtorrent_seeder() {
    // empty files, tiny files, files spanning pieces, nested folders
    download_from_libtorrent(&payload::multi_file_layout(4 << 20), 32 * 1024);
}

#[test]
fn download_peer_reaches_a_seeder_of_a_torrent_without_tracker() {
    // no tracker, DHT off, no LSD: `--peer` is the only way to the swarm
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("lone.bin", 5 << 20)], 0x10e).unwrap();
    let torrent = dir.path().join("lone.torrent");
    make_torrent(&src.join("lone.bin"), &torrent, "", Some(64 * 1024));
    let seeder_port = free_port_on(SEEDER_IP);
    // (a tracker-less seeder without DHT or LSD prints no READY: we dial it until it answers)
    let _seeder = LtPeer::spawn_seed(&SeedArgs::new(&torrent, &src, SEEDER_IP, seeder_port));
    let dst = dir.path().join("dst");
    let peer = format!("{SEEDER_IP}:{seeder_port}");
    let mut rat = Rat::download(&torrent, &dst, free_port(), &["--peer", &peer]);
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}", rat.output());
    compare_trees(&src, &dst).unwrap();
    // a peer where nothing listens: said once after 10 s, then the timeout ends the run
    let mut gone = Rat::download(
        &torrent,
        &dir.path().join("gone"),
        free_port(),
        &["--peer", "127.0.0.9:9", "--timeout", "14"],
    );
    let st = gone.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(st.code(), Some(1), "{}", gone.output());
    assert!(
        gone.stderr().contains(
            "no connection to 127.0.0.9:9 after 10 s: is a BitTorrent client listening there?"
        ),
        "{}",
        gone.output()
    );
    // a peer that is not an address is refused before anything starts
    let mut bad = Rat::download(
        &torrent,
        &dir.path().join("bad"),
        free_port(),
        &["--peer", "seedbox"],
    );
    let st = bad.wait(Duration::from_secs(10)).unwrap();
    assert_eq!(st.code(), Some(2), "{}", bad.output());
    assert!(bad.stderr().contains("--peer"), "{}", bad.output());
}
