//! MSE/PE encryption against the real clients (issue 19): seeders that require encryption
//! (libtorrent `forced`, qBittorrent `Session\Encryption=1`, Transmission `encryption = 2`)
//! reached by `ratorrent download` with the default `prefer` and with `require`; with
//! `require` every byte between the two passes a recording TCP relay and the BitTorrent
//! handshake string never crosses it in either direction. `disable` still reaches plaintext
//! peers, `prefer` dials again in plaintext when a peer refuses MSE, `require` never does,
//! and a magnet link still fetching its metadata answers an incoming MSE handshake.
//!
//! The leecher learns the seeder's address through a second tracker that lists only the
//! relay (its copy of the .torrent names that tracker; the info dictionary is the same), so
//! every connection it makes goes through the relay.

mod common;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use common::anchors::AnchorSeeder;
use common::payload;
use common::rat::Rat;
use common::relay::Relay;
use common::scenario::{rat_tail, scratch_dir, serial};
use common::{Encryption, LtPeer, SeedArgs, TestTracker, compare_files, free_port, make_torrent};
use ratorrent::metainfo::InfoHash;

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// Size of the payload: 12 MiB + a tail, 48 pieces of 256 KiB.
const SIZE: u64 = 12 * 1024 * 1024 + 4321;
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// A payload, its torrent for the seeders (tracker `seeders`) and a copy for the leecher
/// naming tracker `leecher` (same info dictionary, so the same info hash).
struct Setup {
    _dir: tempfile::TempDir,
    src: PathBuf,
    torrent: PathBuf,
    leecher_torrent: PathBuf,
    ih: InfoHash,
    seeders: TestTracker,
    leecher: TestTracker,
    dst: PathBuf,
}

fn setup(seed: u64) -> Setup {
    setup_sized(seed, SIZE)
}

fn setup_sized(seed: u64, size: u64) -> Setup {
    let dir = scratch_dir();
    let src = dir.path().join("src");
    let data = src.join("payload.bin");
    payload::write_file(&data, size, seed).unwrap();
    let seeders = TestTracker::start();
    let leecher = TestTracker::start();
    let torrent = dir.path().join("seed.torrent");
    let ih = make_torrent(&data, &torrent, &seeders.url(), Some(256 * 1024));
    // same length (ephemeral ports have 5 digits), so a byte swap keeps the bencoding valid
    let (a, b) = (seeders.url(), leecher.url());
    assert_eq!(a.len(), b.len(), "{a} {b}");
    let bytes = std::fs::read(&torrent).unwrap();
    let at = bytes
        .windows(a.len())
        .position(|w| w == a.as_bytes())
        .expect("announce URL in the torrent");
    let mut copy = bytes.clone();
    copy[at..at + b.len()].copy_from_slice(b.as_bytes());
    let leecher_torrent = dir.path().join("leech.torrent");
    std::fs::write(&leecher_torrent, copy).unwrap();
    let dst = dir.path().join("dst");
    Setup {
        src,
        torrent,
        leecher_torrent,
        ih,
        seeders,
        leecher,
        dst,
        _dir: dir,
    }
}

impl Setup {
    /// The leecher's tracker lists `addr` (a relay) as a seeder, and nothing else.
    fn list(&self, addr: std::net::SocketAddr) {
        let std::net::SocketAddr::V4(v4) = addr else {
            unreachable!()
        };
        self.leecher.add_peer(self.ih, v4, Some(0));
    }

    /// `ratorrent download` of the leecher's torrent with `[peer] encryption = mode`
    /// (`disable` as the `--encryption` flag over a config that says `require`).
    fn rat(&self, mode: &str) -> Rat {
        let port = free_port().to_string();
        let args = [
            "download",
            self.leecher_torrent.to_str().unwrap(),
            "-o",
            self.dst.to_str().unwrap(),
            "--port",
            &port,
        ];
        if mode == "disable" {
            let mut args = args.to_vec();
            args.extend(["--encryption", "disable"]);
            return Rat::spawn(&args, "[peer]\nencryption = \"require\"\n");
        }
        Rat::spawn(&args, &format!("[peer]\nencryption = \"{mode}\"\n"))
    }

    /// The leecher exits 0 and the file is byte-exact.
    fn assert_downloaded(&self, rat: &mut Rat, what: &str) {
        let st = rat
            .wait(DOWNLOAD_TIMEOUT)
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", rat_tail(rat)));
        assert!(st.success(), "{what}: {st}\n{}", rat_tail(rat));
        compare_files(&self.src.join("payload.bin"), &self.dst.join("payload.bin"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }

    fn clear(&self) {
        let _ = std::fs::remove_dir_all(&self.dst);
    }
}

/// Every connection through `relay` carried no plaintext BitTorrent handshake either way,
/// and together they carried at least the payload.
fn assert_never_plaintext(relay: &Relay, size: u64, what: &str) {
    let wires = relay.wires();
    assert!(
        !wires.is_empty(),
        "{what}: no connection went through the relay"
    );
    for (i, w) in wires.iter().enumerate() {
        assert!(
            !w.to_handshake,
            "{what}: connection {i}: the dialling side sent the handshake string in plaintext"
        );
        assert!(
            !w.from_handshake,
            "{what}: connection {i}: the answering side sent the handshake string in plaintext"
        );
    }
    let moved: u64 = wires.iter().map(|w| w.to_total.max(w.from_total)).sum();
    assert!(
        moved >= size,
        "{what}: only {moved} bytes came through the relay"
    );
}

/// Prefer (direct, through the seeders' tracker) then require (through the relay) from one
/// seeder that requires encryption at `addr`.
fn prefer_and_require(s: &Setup, addr: std::net::SocketAddr, who: &str) -> Relay {
    // prefer: the leecher's tracker lists the seeder itself this time
    s.list(addr);
    let mut rat = s.rat("prefer");
    s.assert_downloaded(&mut rat, &format!("{who}, prefer"));
    drop(rat);
    s.clear();

    let relay = Relay::start(addr);
    s.leecher_only(relay.addr());
    let mut rat = s.rat("require");
    s.assert_downloaded(&mut rat, &format!("{who}, require"));
    assert_never_plaintext(&relay, SIZE, &format!("{who}, require"));
    relay
}

impl Setup {
    /// The leecher's tracker lists only `addr` from now on.
    fn leecher_only(&self, addr: std::net::SocketAddr) {
        for p in self.leecher.peers(&self.ih) {
            self.leecher.remove_peer(self.ih, p);
        }
        self.list(addr);
    }
}

#[test]
fn libtorrent_forced_seeder_prefer_and_require() {
    let _serial = serial();
    let s = setup(0xe1);
    let port = common::free_port_on(SEEDER_IP);
    let mut args = SeedArgs::new(&s.torrent, &s.src, SEEDER_IP, port);
    args.encryption = Encryption::Forced;
    args.extra = vec!["--report-peers".into()];
    let mut seeder = LtPeer::seed(&args);
    let addr = std::net::SocketAddr::from((SEEDER_IP, port));
    let relay = prefer_and_require(&s, addr, "libtorrent forced");
    // libtorrent's own word: the connection from the relay is RC4
    let relay_seen = loop {
        let l = seeder
            .wait_line("CRYPTO", Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        // the relay dials from 127.0.0.1; the prefer download came from 127.0.0.1 too, but
        // its line comes first
        if l.contains("rc4") {
            break l;
        }
    };
    assert!(relay_seen.starts_with("CRYPTO 127.0.0.1:"), "{relay_seen}");
    drop(relay);
}

#[test]
fn qbittorrent_require_encryption_seeder_prefer_and_require() {
    let _serial = serial();
    let s = setup(0xe2);
    let q = AnchorSeeder::qbittorrent(&s.torrent, &s.src, free_port(), 1);
    q.wait_seeding(&s.seeders, s.ih, Duration::from_secs(60));
    prefer_and_require(&s, q.addr(), "qBittorrent Session\\Encryption=1");
}

#[test]
fn transmission_encryption_required_seeder_prefer_and_require() {
    let _serial = serial();
    let s = setup(0xe3);
    let t = AnchorSeeder::transmission(&s.torrent, &s.src, free_port(), 2);
    t.wait_seeding(&s.seeders, s.ih, Duration::from_secs(60));
    prefer_and_require(&s, t.addr(), "Transmission encryption = 2");
}

#[test]
fn disable_still_reaches_plaintext_peers_and_sends_plaintext() {
    let _serial = serial();
    let s = setup(0xe4);
    let port = common::free_port_on(SEEDER_IP);
    let _seeder = LtPeer::seed(&SeedArgs::new(&s.torrent, &s.src, SEEDER_IP, port));
    let relay = Relay::start(std::net::SocketAddr::from((SEEDER_IP, port)));
    s.list(relay.addr());
    let mut rat = s.rat("disable");
    s.assert_downloaded(&mut rat, "disable, libtorrent plaintext seeder");
    for w in relay.wires() {
        assert!(
            w.to_target.starts_with(b"\x13BitTorrent protocol"),
            "disable dials in plaintext"
        );
    }
}

/// A ratorrent seeder with `[peer] encryption = "disable"` (it refuses MSE).
fn plaintext_only_rat_seeder(s: &Setup) -> (Rat, u16) {
    common::scenario::start_rat_seeder(
        &s.seeders,
        &s.torrent,
        &s.src,
        s.ih,
        "[peer]\nencryption = \"disable\"\n",
    )
}

#[test]
fn prefer_dials_again_in_plaintext_when_the_peer_refuses_mse_and_require_never_does() {
    let _serial = serial();
    let s = setup(0xe5);
    let (mut seeder, port) = plaintext_only_rat_seeder(&s);
    let relay = Relay::start(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    s.list(relay.addr());

    // require: the MSE handshakes are refused and nothing plaintext goes out
    let mut rat = s.rat("require");
    std::thread::sleep(Duration::from_secs(8));
    assert!(
        rat.try_wait().is_none(),
        "require cannot complete from a plaintext-only peer\n{}",
        rat_tail(&rat)
    );
    drop(rat);
    let wires = relay.wires();
    assert!(!wires.is_empty(), "it tried");
    for w in &wires {
        assert!(!w.to_handshake, "require never falls back");
        assert!(
            w.from_target.is_empty(),
            "the plaintext-only seeder answers nothing"
        );
    }
    let tried = wires.len();
    s.clear();

    // prefer: the MSE attempt is refused, the plaintext one downloads
    let mut rat = s.rat("prefer");
    s.assert_downloaded(&mut rat, "prefer, plaintext-only seeder");
    let wires = relay.wires();
    let new = &wires[tried..];
    assert!(
        new.iter()
            .any(|w| !w.to_target.is_empty() && !w.to_target.starts_with(b"\x13BitTorrent")),
        "an MSE attempt first"
    );
    assert!(
        new.iter()
            .any(|w| w.to_target.starts_with(b"\x13BitTorrent protocol")),
        "then plaintext"
    );
    common::scenario::stop_seeder(&mut seeder).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_magnet_still_fetching_metadata_answers_an_incoming_mse_handshake() {
    let _serial = serial();
    let s = setup(0xe6);
    let rat_port = free_port();
    // no tracker, no peers: only the seeder dialling in can start it
    let magnet = format!("magnet:?xt=urn:btih:{}", s.ih.to_hex());
    let p = rat_port.to_string();
    let mut rat = Rat::spawn(
        &[
            "download",
            &magnet,
            "-o",
            s.dst.to_str().unwrap(),
            "--port",
            &p,
        ],
        "[peer]\nencryption = \"require\"\n",
    );
    let port = common::free_port_on(SEEDER_IP);
    let mut args = SeedArgs::new(&s.torrent, &s.src, SEEDER_IP, port);
    args.encryption = Encryption::Forced;
    args.connect = vec![std::net::SocketAddr::from(([127, 0, 0, 1], rat_port))];
    args.extra = vec!["--report-peers".into()];
    let mut seeder = LtPeer::seed(&args);
    s.assert_downloaded(&mut rat, "magnet, incoming MSE from libtorrent");
    let l = seeder
        .wait_line("CRYPTO", Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(l.ends_with(" rc4"), "{l}");
}

/// Seeding over MSE, at a size beyond every buffer: a `ratorrent download --seed` with the
/// default `prefer` to a libtorrent leecher that forces encryption, 320 MiB through the
/// recording relay: complete, byte-exact, and RC4 all the way (no plaintext handshake).
#[test]
fn seeds_320_mib_over_rc4_to_a_libtorrent_leecher_that_forces_encryption() {
    const BIG: u64 = 320 * 1024 * 1024 + 999;
    let _serial = serial();
    let s = setup_sized(0xe7, BIG);
    let (mut seeder, port) =
        common::scenario::start_rat_seeder(&s.seeders, &s.torrent, &s.src, s.ih, "");
    let relay = Relay::start(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    s.list(relay.addr());
    let leecher_ip = Ipv4Addr::new(127, 0, 0, 3);
    let mut args = common::LeechArgs::new(
        &s.leecher_torrent,
        &s.dst,
        leecher_ip,
        common::free_port_on(leecher_ip),
    );
    args.encryption = Encryption::Forced;
    args.timeout_s = 300;
    let mut leecher = LtPeer::leech(&args);
    let took = common::scenario::wait_lt_done(
        &mut leecher,
        BIG,
        Duration::from_secs(300),
        Some(Duration::from_secs(30)),
    )
    .unwrap_or_else(|e| panic!("320 MiB over MSE to libtorrent: {e}\n{}", rat_tail(&seeder)));
    compare_files(&s.src.join("payload.bin"), &s.dst.join("payload.bin"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_never_plaintext(&relay, BIG, "seeding to libtorrent forced");
    common::scenario::stop_seeder(&mut seeder).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "320 MiB over RC4 to libtorrent in {:.1} s ({:.0} MiB/s)",
        took.as_secs_f64(),
        BIG as f64 / 1048576.0 / took.as_secs_f64()
    );
}

/// The TUI at 80×24 (`encryption = "require"`) downloading from a libtorrent seeder that
/// forces encryption (slowed to 512 KiB/s so the peer stays on screen): the Peers tab shows
/// the seeder with `E`, General counts it as encrypted. (With `prefer` this seeder, which
/// allows both methods and does not prefer RC4, selects plaintext after the handshake: `e`.)
#[test]
fn the_tui_shows_the_encrypted_peer_under_tmux() {
    use common::tmux::TmuxPane;
    let _serial = serial();
    let s = setup(0xe8);
    let port = common::free_port_on(SEEDER_IP);
    let mut args = SeedArgs::new(&s.torrent, &s.src, SEEDER_IP, port);
    args.encryption = Encryption::Forced;
    args.upload_limit = Some(512 << 10);
    let _seeder = LtPeer::seed(&args);
    let dir = s._dir.path();
    let config = dir.join("tui.toml");
    std::fs::write(
        &config,
        format!(
            "listen_port = {}\ndownload_dir = \"{}\"\n[dht]\nenabled = false\n\
             [peer]\nencryption = \"require\"\n",
            free_port(),
            s.dst.display()
        ),
    )
    .unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cmd = format!(
        "{} --config {} {}",
        common::rat::bin(),
        config.display(),
        s.torrent.display()
    );
    let tmux = TmuxPane::start(
        "mse",
        &cmd,
        &[
            ("LANG", std::path::Path::new("C.UTF-8")),
            ("HOME", &home),
            ("XDG_CONFIG_HOME", &home),
            ("XDG_STATE_HOME", &home),
            ("XDG_DATA_HOME", &home),
        ],
        80,
        24,
    );
    tmux.wait_row("payload.bin", "Downloading", Duration::from_secs(30));
    tmux.keys("Enter");
    let general = tmux.wait_for("1 encrypted", Duration::from_secs(15));
    assert!(
        general.contains("1 connected (1 seed, 1 encrypted)"),
        "{general}"
    );
    tmux.keys("Tab");
    let peers = tmux.wait_until("the seeder with E", Duration::from_secs(10), |sc| {
        sc.lines()
            .any(|l| l.contains("127.0.0.2:") && l.split_whitespace().any(|w| w == "E"))
    });
    assert!(peers.contains("Flags"), "{peers}");
    tmux.keys("Escape");
    tmux.keys("q");
    tmux.wait_for("Quit", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(15)), "quit");
}
