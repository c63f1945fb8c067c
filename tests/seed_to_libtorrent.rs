//! ratorrent seeds to a real libtorrent leecher, and ratorrent downloads from ratorrent.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    Event, LeechArgs, LtPeer, TestTracker, compare_trees, free_port, free_port_on, make_torrent,
    temp_dir,
};

const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// Start `ratorrent download --seed` on complete data and wait until the tracker has its
/// `left=0` announce (it verified the data first).
fn start_seeder(
    tracker: &TestTracker,
    torrent: &std::path::Path,
    data_dir: &std::path::Path,
    ih: ratorrent::metainfo::InfoHash,
) -> (Rat, u16) {
    let port = free_port();
    let rat = Rat::download(torrent, data_dir, port, &["--seed"]);
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    (rat, port)
}

#[test]
fn ratorrent_seeds_multi_file_torrent_to_libtorrent() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = payload::multi_file_layout(3 << 20);
    payload::write_tree(&src.join("payload"), &layout, 0xabc).unwrap();
    let torrent = dir.path().join("p.torrent");
    let ih = make_torrent(
        &src.join("payload"),
        &torrent,
        &tracker.url(),
        Some(32 * 1024),
    );
    let (mut seeder, port) = start_seeder(&tracker, &torrent, &src, ih);

    let dst = dir.path().join("dst");
    let mut leecher = LtPeer::leech(&LeechArgs::new(
        &torrent,
        &dst,
        LEECHER_IP,
        free_port_on(LEECHER_IP),
    ));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    compare_trees(&src.join("payload"), &dst.join("payload")).unwrap();

    // a clean stop sends `stopped` and reports what was uploaded
    let st = seeder.terminate().expect("exit status");
    assert!(
        st.success(),
        "seeding ratorrent exits 0 on SIGTERM: {st}\n{}",
        seeder.output()
    );
    let stopped = tracker
        .wait_for_announce(Duration::from_secs(5), |a| {
            a.info_hash == ih && a.addr.port() == port && a.event == Event::Stopped
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    assert!(
        stopped.uploaded >= Some(payload::total_len(&layout)),
        "uploaded counter covers the payload: {:?}",
        stopped.uploaded
    );
}

#[test]
fn ratorrent_downloads_from_ratorrent() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = [FileSpec::new("one.bin", 5 * 1024 * 1024 + 77)];
    payload::write_tree(&src, &layout, 0x77).unwrap();
    let torrent = dir.path().join("one.torrent");
    let ih = make_torrent(
        &src.join("one.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let (_seeder, _) = start_seeder(&tracker, &torrent, &src, ih);

    let dst = dir.path().join("dst");
    let mut leecher = Rat::download(&torrent, &dst, free_port(), &[]);
    let st = leecher.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}", leecher.output());
    common::compare_files(&src.join("one.bin"), &dst.join("one.bin")).unwrap();
}

#[test]
fn seeding_ratorrent_dials_leechers_the_tracker_lists() {
    // the leecher announces first, then never again (long interval): only our dialling it
    // can start the transfer
    let tracker = TestTracker::start();
    tracker.set_interval(3600);
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(
        &src,
        &[FileSpec::new("late.bin", 2 * 1024 * 1024 + 5)],
        0x1a7e,
    )
    .unwrap();
    let torrent = dir.path().join("late.torrent");
    let ih = make_torrent(
        &src.join("late.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let dst = dir.path().join("dst");
    let leecher_addr = free_port_on(LEECHER_IP);
    let mut leecher = LtPeer::leech(&LeechArgs::new(&torrent, &dst, LEECHER_IP, leecher_addr));
    tracker
        .wait_for_announce(Duration::from_secs(10), |a| {
            a.info_hash == ih && a.addr.port() == leecher_addr
        })
        .unwrap();
    let (seeder, _) = start_seeder(&tracker, &torrent, &src, ih);
    leecher
        .wait_done(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    common::compare_files(&src.join("late.bin"), &dst.join("late.bin")).unwrap();
}
