//! Seeding beyond every queue and window: 256 MiB and more, from one `ratorrent download
//! --seed` to one leecher over one connection (libtorrent, or a second ratorrent), byte-exact.
//!
//! 256 MiB is 16,384 blocks of 16 KiB: far more than any request queue (ratorrent advertises
//! `reqq` 2,000 = 31.25 MiB), any pipeline, socket buffer or disk queue, so a counter that
//! leaks, a window that never reopens or a queue that never drains stalls the transfer. The
//! leecher waits are stall-detecting: no progress for 30 s fails at once, saying where.
//! Payloads live on tmpfs (`/dev/shm`) and are removed afterwards; the tests run one at a
//! time (two cores).

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::scenario::{
    rat_tail, scratch_dir, serial, spawn_rat_on_free_port, start_rat_seeder, stop_seeder,
    wait_lt_done, wait_rat_done,
};
use common::{
    Event, LeechArgs, LtPeer, TestTracker, compare_files, compare_trees, free_port_on, make_torrent,
};
use ratorrent::metainfo::InfoHash;

const MIB: u64 = 1024 * 1024;
/// Size of the single-file payloads.
const SIZE: u64 = 256 * MIB;
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// Whole-transfer deadline.
const TIMEOUT: Duration = Duration::from_secs(120);
/// No progress for this long is a stall.
const STALL: Duration = Duration::from_secs(30);

/// After a complete upload: the seeder is still up, exits 0 on SIGTERM, and its `stopped`
/// announce counts at least the payload as uploaded.
fn finish_seeder(tracker: &TestTracker, seeder: &mut Rat, ih: InfoHash, port: u16, total: u64) {
    stop_seeder(seeder).unwrap_or_else(|e| panic!("{e}"));
    let stopped = tracker
        .wait_for_announce(Duration::from_secs(5), |a| {
            a.info_hash == ih && a.addr.port() == port && a.event == Event::Stopped
        })
        .unwrap_or_else(|e| {
            panic!(
                "no `stopped` announce after SIGTERM: {e}\n{}",
                rat_tail(seeder)
            )
        });
    assert!(
        stopped.uploaded >= Some(total),
        "the `stopped` announce reports uploaded={:?}, less than the {total} bytes served",
        stopped.uploaded
    );
}

/// A 256 MiB file (256 KiB pieces: 1,024 pieces, 16,384 blocks) to one libtorrent leecher.
#[test]
fn seeds_256_mib_single_file_to_libtorrent() {
    let _serial = serial();
    let t0 = Instant::now();
    let tracker = TestTracker::start();
    let dir = scratch_dir();
    let src = dir.path().join("src");
    payload::write_file(&src.join("big.bin"), SIZE, 0x0256_0001).expect("write payload");
    let torrent = dir.path().join("big.torrent");
    let ih = make_torrent(
        &src.join("big.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let (mut seeder, port) = start_rat_seeder(&tracker, &torrent, &src, ih, "");

    let dst = dir.path().join("dst");
    let mut args = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    args.timeout_s = 150;
    let mut leecher = LtPeer::leech(&args);
    let took = wait_lt_done(&mut leecher, SIZE, TIMEOUT, Some(STALL))
        .unwrap_or_else(|e| panic!("256 MiB to libtorrent: {e}\n{}", rat_tail(&seeder)));
    compare_files(&src.join("big.bin"), &dst.join("big.bin")).unwrap_or_else(|e| panic!("{e}"));
    finish_seeder(&tracker, &mut seeder, ih, port, SIZE);
    eprintln!(
        "256 MiB to libtorrent in {:.1} s ({:.0} MiB/s); test {:.1} s",
        took.as_secs_f64(),
        SIZE as f64 / MIB as f64 / took.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}

/// A 256 MiB file (1 MiB pieces) to a second ratorrent (`ratorrent download`, exits 0 once
/// every piece is verified).
#[test]
fn seeds_256_mib_single_file_to_ratorrent() {
    let _serial = serial();
    let t0 = Instant::now();
    let tracker = TestTracker::start();
    let dir = scratch_dir();
    let src = dir.path().join("src");
    payload::write_file(&src.join("big.bin"), SIZE, 0x0256_0002).expect("write payload");
    let torrent = dir.path().join("big.torrent");
    let ih = make_torrent(
        &src.join("big.bin"),
        &torrent,
        &tracker.url(),
        Some(MIB as u32),
    );
    let (mut seeder, port) = start_rat_seeder(&tracker, &torrent, &src, ih, "");

    let dst = dir.path().join("dst");
    let launched = Instant::now();
    let (mut leecher, _) =
        spawn_rat_on_free_port(|p| Rat::download(&torrent, &dst, p, &["--timeout", "150"]));
    wait_rat_done(&mut leecher, TIMEOUT, Some(STALL)).unwrap_or_else(|e| {
        panic!(
            "256 MiB to ratorrent: {e}\n=== the SEEDER ===\n{}",
            rat_tail(&seeder)
        )
    });
    // from launch: the port probe may already have waited while it downloaded
    let took = launched.elapsed();
    compare_files(&src.join("big.bin"), &dst.join("big.bin")).unwrap_or_else(|e| panic!("{e}"));
    finish_seeder(&tracker, &mut seeder, ih, port, SIZE);
    eprintln!(
        "256 MiB to ratorrent in {:.1} s ({:.0} MiB/s); test {:.1} s",
        took.as_secs_f64(),
        SIZE as f64 / MIB as f64 / took.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}

/// A multi-file layout of at least 256 MiB: the edge cases of [`payload::multi_file_layout`]
/// (empty, 1-byte, block ± 1 files, nested folders), four large files of odd lengths (pieces
/// straddle file boundaries) and 160 small files of 1-64 KiB (many per piece).
fn large_multi_layout() -> Vec<FileSpec> {
    let mut v = payload::multi_file_layout(56 * MIB);
    for i in 0..4u64 {
        v.push(FileSpec::new(
            format!("bulk/part-{i}.bin"),
            50 * MIB + 12_345 * (i + 1),
        ));
    }
    for i in 0..160u64 {
        v.push(FileSpec::new(
            format!("small/{:02}/f{i:03}.dat", i % 16),
            1 + (i * 7_919) % (64 * 1024),
        ));
    }
    v
}

/// A multi-file payload of ≥ 256 MiB (1 MiB pieces) to one libtorrent leecher.
#[test]
fn seeds_256_mib_multi_file_to_libtorrent() {
    let _serial = serial();
    let t0 = Instant::now();
    let tracker = TestTracker::start();
    let dir = scratch_dir();
    let src = dir.path().join("src");
    let layout = large_multi_layout();
    let total = payload::total_len(&layout);
    assert!(total >= SIZE, "layout is {total} bytes, want ≥ 256 MiB");
    payload::write_tree(&src.join("tree"), &layout, 0x0256_0003).expect("write payload");
    let torrent = dir.path().join("tree.torrent");
    let ih = make_torrent(
        &src.join("tree"),
        &torrent,
        &tracker.url(),
        Some(MIB as u32),
    );
    let (mut seeder, port) = start_rat_seeder(&tracker, &torrent, &src, ih, "");

    let dst = dir.path().join("dst");
    let mut args = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    args.timeout_s = 150;
    let mut leecher = LtPeer::leech(&args);
    let took = wait_lt_done(&mut leecher, total, TIMEOUT, Some(STALL)).unwrap_or_else(|e| {
        panic!(
            "{} files, {total} bytes to libtorrent: {e}\n{}",
            layout.len(),
            rat_tail(&seeder)
        )
    });
    compare_trees(&src.join("tree"), &dst.join("tree")).unwrap_or_else(|e| panic!("{e}"));
    finish_seeder(&tracker, &mut seeder, ih, port, total);
    eprintln!(
        "{} files, {:.1} MiB to libtorrent in {:.1} s; test {:.1} s",
        layout.len(),
        total as f64 / MIB as f64,
        took.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}
