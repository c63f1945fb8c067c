//! uTP (BEP 29) against real libtorrent peers that can only use uTP (`lt_peer.py
//! --transport utp`: TCP off both ways): ratorrent downloads from one byte-exact, seeds to
//! one that dials in (incoming uTP accepted), and, with uTP and TCP on, falls back to TCP
//! for a peer without uTP. MSE/PE runs over uTP as over TCP: a uTP-only libtorrent that
//! forces encryption is downloaded from and seeded to (it dials in) over RC4.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    Encryption, LeechArgs, LtPeer, SeedArgs, TestTracker, compare_trees, free_port, free_port_on,
    make_torrent, temp_dir,
};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

const UTP_ONLY: &str = "[peer]\ntransports = [\"utp\"]\n";

fn utp_only_lt() -> Vec<String> {
    vec!["--transport".into(), "utp".into(), "--report-peers".into()]
}

#[test]
fn downloads_hundreds_of_mib_from_a_utp_only_libtorrent_seeder() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let size = 300u64 << 20;
    payload::write_tree(&src, &[FileSpec::new("big.bin", size + 12_345)], 0x17b).unwrap();
    let torrent = dir.path().join("big.torrent");
    make_torrent(
        &src.join("big.bin"),
        &torrent,
        &tracker.url(),
        Some(1 << 20),
    );
    let mut sa = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    sa.seed_mode = true;
    sa.extra = utp_only_lt();
    let mut seeder = LtPeer::seed(&sa);

    let dst = dir.path().join("dst");
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        dst.to_str().unwrap(),
        free_port().to_string(),
    );
    let start = Instant::now();
    let mut rat = Rat::spawn(&["download", t, "-o", o, "--port", &p], UTP_ONLY);
    let st = rat.wait(Duration::from_secs(240)).unwrap();
    let took = start.elapsed();
    assert!(st.success(), "{st}\n{}\n{}", rat.output(), seeder.stderr());
    common::compare_files(&src.join("big.bin"), &dst.join("big.bin")).unwrap();
    let line = seeder
        .wait_line("PEER", Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(line.ends_with(" utp"), "the seeder saw {line:?}");
    eprintln!(
        "300 MiB over uTP from libtorrent in {took:.1?} ({:.1} MiB/s, debug build)",
        300.0 / took.as_secs_f64()
    );
}

#[test]
fn seeds_to_a_utp_only_libtorrent_leecher_that_dials_in() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = payload::multi_file_layout(48 << 20);
    payload::write_tree(&src.join("payload"), &layout, 0x5eed).unwrap();
    let torrent = dir.path().join("p.torrent");
    let ih = make_torrent(
        &src.join("payload"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let port = free_port();
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        src.to_str().unwrap(),
        port.to_string(),
    );
    // the default transports: uTP and TCP; the leecher can only dial uTP
    let mut rat = Rat::spawn(&["download", t, "-o", o, "--port", &p, "--seed"], "");
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let dst = dir.path().join("dst");
    let mut la = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    la.extra = utp_only_lt();
    la.timeout_s = 120;
    let mut leecher = LtPeer::leech(&la);
    let line = leecher
        .wait_line("PEER", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    assert!(
        line.starts_with(&format!("PEER 127.0.0.1:{port} ")) && line.ends_with(" utp"),
        "the leecher reached us over uTP: {line:?}"
    );
    leecher
        .wait_done(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    compare_trees(&src.join("payload"), &dst.join("payload")).unwrap();
    assert!(
        rat.terminate().is_some_and(|s| s.success()),
        "{}",
        rat.output()
    );
    // the run's totals at exit: 48 MiB went up (and nothing came down: ratio over the size)
    let out = rat.stdout();
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("seeded: uploaded 4") && last.contains(" MiB  ratio "),
        "{out}"
    );
}

#[test]
fn with_both_transports_a_tcp_only_peer_is_reached_over_tcp() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("f.bin", 3 << 20)], 0x7c9).unwrap();
    let torrent = dir.path().join("f.torrent");
    make_torrent(&src.join("f.bin"), &torrent, &tracker.url(), None);
    let mut sa = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    sa.extra = vec!["--report-peers".into()];
    let mut seeder = LtPeer::seed(&sa);
    let dst = dir.path().join("dst");
    let start = Instant::now();
    // 1 MiB/s: the seeder prints its PEER line once a second, while we are connected
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        dst.to_str().unwrap(),
        free_port().to_string(),
    );
    let mut rat = Rat::spawn(
        &["download", t, "-o", o, "--port", &p],
        "download_rate_limit = \"1M\"\n",
    );
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}", rat.output());
    common::compare_files(&src.join("f.bin"), &dst.join("f.bin")).unwrap();
    // however short the transfer, the last line gives its average rate
    let out = rat.stdout();
    assert!(
        out.lines().any(
            |l| l.starts_with("complete: f.bin (3.00 MiB) in ") && l.ends_with("/s on average")
        ),
        "{out}"
    );
    let line = seeder.wait_line("PEER", Duration::from_secs(5)).unwrap();
    assert!(line.ends_with(" tcp"), "{line:?}");
    // uTP had a second to answer before TCP was tried beside it
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_download_rate_limit_holds_over_utp() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("r.bin", 12 << 20)], 0x4a7e).unwrap();
    let torrent = dir.path().join("r.torrent");
    make_torrent(&src.join("r.bin"), &torrent, &tracker.url(), None);
    let mut sa = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    sa.extra = utp_only_lt();
    let mut seeder = LtPeer::seed(&sa);
    let dst = dir.path().join("dst");
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        dst.to_str().unwrap(),
        free_port().to_string(),
    );
    let start = Instant::now();
    // 2 MiB/s: the reader holds back, the receive window shuts, the sender waits
    let mut rat = Rat::spawn(
        &["download", t, "-o", o, "--port", &p],
        "download_rate_limit = \"2M\"\n[peer]\ntransports = [\"utp\"]\n",
    );
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    let took = start.elapsed();
    assert!(st.success(), "{st}\n{}", rat.output());
    common::compare_files(&src.join("r.bin"), &dst.join("r.bin")).unwrap();
    let line = seeder.wait_line("PEER", Duration::from_secs(5)).unwrap();
    assert!(line.ends_with(" utp"), "{line:?}");
    // 12 MiB at 2 MiB/s, less a quarter second's burst and what the window held
    assert!(
        took >= Duration::from_secs(5),
        "too fast for the limit: {took:?}"
    );
    eprintln!("12 MiB at a 2 MiB/s limit over uTP: {took:.1?}");
}

/// uTP only, RC4 only (`[peer] encryption = "require"`).
const UTP_RC4: &str = "[peer]\ntransports = [\"utp\"]\nencryption = \"require\"\n";

/// The `CRYPTO` line libtorrent printed for the peer at `addr_prefix` (`PEER` comes first).
fn crypto_of(peer: &mut LtPeer, addr_prefix: &str) -> String {
    loop {
        let l = peer
            .wait_line("CRYPTO", Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        if l.starts_with(&format!("CRYPTO {addr_prefix}")) {
            return l;
        }
    }
}

#[test]
fn downloads_over_rc4_from_a_utp_only_libtorrent_seeder_that_forces_encryption() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("e.bin", (4 << 20) + 777)], 0xe7c).unwrap();
    let torrent = dir.path().join("e.torrent");
    make_torrent(
        &src.join("e.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let mut sa = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    sa.seed_mode = true;
    sa.encryption = Encryption::Forced;
    sa.extra = utp_only_lt();
    let mut seeder = LtPeer::seed(&sa);
    let dst = dir.path().join("dst");
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        dst.to_str().unwrap(),
        free_port().to_string(),
    );
    let mut rat = Rat::spawn(&["download", t, "-o", o, "--port", &p], UTP_RC4);
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}\n{}", rat.output(), seeder.stderr());
    common::compare_files(&src.join("e.bin"), &dst.join("e.bin")).unwrap();
    // libtorrent's own word: a uTP connection, RC4 on it
    let line = seeder.wait_line("PEER", Duration::from_secs(5)).unwrap();
    assert!(line.ends_with(" utp"), "the seeder saw {line:?}");
    let addr = line.split(' ').nth(1).unwrap().to_owned();
    let crypto = crypto_of(&mut seeder, &addr);
    assert_eq!(crypto, format!("CRYPTO {addr} rc4"));
}

#[test]
fn seeds_over_rc4_to_a_utp_only_libtorrent_leecher_that_forces_encryption_and_dials_in() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("s.bin", (3 << 20) + 99)], 0x5e7).unwrap();
    let torrent = dir.path().join("s.torrent");
    let ih = make_torrent(
        &src.join("s.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let port = free_port();
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        src.to_str().unwrap(),
        port.to_string(),
    );
    // both transports; the leecher can only dial uTP, and only with MSE. Upload held to
    // 1 MiB/s: the 3 MiB take seconds, so the leecher reports the connection (its PEER
    // line comes once a second) before the transfer ends
    let mut rat = Rat::spawn(
        &["download", t, "-o", o, "--port", &p, "--seed"],
        "upload_rate_limit = \"1M\"\n[peer]\nencryption = \"require\"\n",
    );
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let dst = dir.path().join("dst");
    let mut la = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    la.encryption = Encryption::Forced;
    la.extra = utp_only_lt();
    la.timeout_s = 60;
    let mut leecher = LtPeer::leech(&la);
    let us = format!("127.0.0.1:{port}");
    let line = leecher
        .wait_line("PEER", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    assert!(
        line.starts_with(&format!("PEER {us} ")) && line.ends_with(" utp"),
        "the leecher reached us over uTP: {line:?}"
    );
    assert_eq!(crypto_of(&mut leecher, &us), format!("CRYPTO {us} rc4"));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    common::compare_files(&src.join("s.bin"), &dst.join("s.bin")).unwrap();
    assert!(
        rat.terminate().is_some_and(|s| s.success()),
        "{}",
        rat.output()
    );
}

#[test]
fn a_utp_peer_that_vanishes_and_dials_again_from_the_same_port_is_taken_at_once() {
    // a peer whose process died (or that dropped the connection, as qBittorrent did when
    // our uTP refused its selective ACKs) leaves a uTP connection that looks alive to us for
    // a minute: nothing tells UDP it is gone. The same peer dialling again from the same
    // port proves it: the new connection replaces the old one at once, instead of being
    // refused as "already connected" until the old one times out.
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("p.bin", 6 << 20)], 0xdead).unwrap();
    let torrent = dir.path().join("p.torrent");
    let ih = make_torrent(
        &src.join("p.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let port = free_port();
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        src.to_str().unwrap(),
        port.to_string(),
    );
    // slow enough that the first leecher is mid-download when it dies
    let rat = Rat::spawn_logging(
        &["download", t, "-o", o, "--port", &p, "--seed"],
        "upload_rate_limit = \"512K\"\n",
        "info,ratorrent::engine::torrent::swarm=debug",
    );
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let leecher_port = free_port_on(LEECHER_IP);
    let leech = |dst: &str| {
        let mut la = LeechArgs::new(&torrent, &dir.path().join(dst), LEECHER_IP, leecher_port);
        la.extra = utp_only_lt();
        la.connect = vec![std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, port))];
        la.timeout_s = 120;
        LtPeer::leech(&la)
    };
    let mut first = leech("dst1");
    first
        .wait_line("PEER", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    // SIGKILL: no FIN, no RESET; our end of the connection stays
    unsafe {
        libc::kill(first.pid() as libc::pid_t, libc::SIGKILL);
    }
    let _ = first.wait_exit(Duration::from_secs(5));
    let start = Instant::now();
    let mut second = leech("dst2");
    // our dead connection would hold the place for a minute (six retransmission timeouts)
    second
        .wait_done(Duration::from_secs(40))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", second.stderr(), rat.output()));
    common::compare_files(&src.join("p.bin"), &dir.path().join("dst2/p.bin")).unwrap();
    let out = rat.output();
    assert!(
        out.contains("peer reconnected from the same endpoint"),
        "the old connection was replaced, not waited out ({:.1?}):\n{out}",
        start.elapsed()
    );
    assert!(!out.contains("already connected"), "{out}");
}
