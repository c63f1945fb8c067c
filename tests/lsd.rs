//! Local Service Discovery (BEP 14) between the ratorrent binary and real libtorrent, each
//! test inside a network namespace of its own (only `lo`, with multicast switched on), so
//! nothing reaches or hears the host's network.
//!
//! Every test runs on a fresh thread that calls `unshare(CLONE_NEWNET)` (root or
//! CAP_SYS_ADMIN: CI and the dev container run as root) and then `ip link set lo up
//! multicast on`; every process it starts (ratorrent, `lt_peer.py`) inherits that
//! namespace. No permission, or no `ip`, is a failure with the reason, never a skip.
//! The torrents have no tracker and the DHT is off (`--no-dht`): LSD is the only way the
//! two sides can learn of each other.
//!
//! - [`ratorrent_downloads_from_a_libtorrent_seeder_found_through_lsd`]: a libtorrent
//!   seeder that announces over LSD and never dials; ratorrent (`--lsd`) hears it, dials
//!   it (peer source LSD in its log) and completes byte-exact.
//! - [`libtorrent_downloads_from_a_ratorrent_seeder_found_through_lsd`]: ratorrent seeds
//!   and announces; a libtorrent leecher that accepts no connection hears the
//!   announcement, dials ratorrent (libtorrent's own peer source: `lsd`) and completes.
//! - [`two_ratorrents_find_each_other_through_lsd`]: seeder and leecher both ratorrent,
//!   LSD switched on in the config (not the flag), the group joined on the kernel's
//!   choice of interface (a multicast route on `lo`).
//! - [`lsd_off_by_default_sends_nothing_and_binds_nothing`]: with the default config no
//!   datagram reaches the group and ratorrent owns no socket on UDP 6771; the same run
//!   with `[lsd] enabled = true` sends its info hash there (so the check can fail).
//! - [`lsd_peers_only_from_the_local_network_and_only_for_public_torrents`]: with a
//!   public and a private (BEP 27) torrent running, only the public info hash is
//!   announced; forged announcements naming both make ratorrent dial the loopback sender
//!   for the public torrent only, one from a global address (8.8.8.8 on the namespace's
//!   `lo`) is never dialled, and port 0, garbage and oversized datagrams change nothing.
//! - [`lsd_that_cannot_start_is_one_warning_and_not_fatal`]: no multicast route, or port
//!   6771 taken without `SO_REUSEADDR`: one log line each, the download runs on.

mod common;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::lt::{LeechArgs, LtPeer, PYTHON, SeedArgs, lt_peer_script, require_libtorrent};
use common::rat::Rat;
use common::{compare_files, free_port, payload, temp_dir, wait_until};
use ratorrent::lsd::{GROUP_V4, PORT};
use ratorrent::metainfo::InfoHash;

/// LSD on the loopback interface of the namespace.
const LSD_LOOPBACK: &str = "[lsd]\nenabled = true\ninterface = \"127.0.0.1\"\n";
/// ratorrent log filter showing peer sources (`peer connected ... source=...`) and LSD.
const LOG: &str = "info,ratorrent::engine::torrent=debug,ratorrent::lsd=debug";
const MIB: u64 = 1 << 20;

/// Run `f` on a new thread inside a new network namespace whose `lo` is up and takes
/// multicast (`multicast = false`: up only); processes it spawns are in it too.
fn in_netns<T: Send + 'static>(multicast: bool, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        // SAFETY: unshare(2) on this thread only; no memory is involved
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            panic!(
                "cannot create a network namespace: unshare(CLONE_NEWNET): {} \
                 (the LSD tests need root or CAP_SYS_ADMIN, as in CI)",
                std::io::Error::last_os_error()
            );
        }
        ip(&["link", "set", "lo", "up"]);
        if multicast {
            ip(&["link", "set", "lo", "multicast", "on"]);
        }
        f()
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// `ip ARGS` (iproute2), which must succeed.
fn ip(args: &[&str]) {
    let o = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `ip` (install iproute2): {e}"));
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A tracker-less v1 torrent of `data` written by libtorrent; its info hash.
fn trackerless_torrent(data: &Path, out: &Path) -> InfoHash {
    make_torrent_file(data, out, false)
}

/// [`trackerless_torrent`], `private = 1` (BEP 27) when `private`.
fn make_torrent_file(data: &Path, out: &Path, private: bool) -> InfoHash {
    require_libtorrent();
    let o = Command::new(PYTHON)
        .arg(lt_peer_script())
        .args(["make-torrent", "--piece-length", "65536"])
        .args(private.then_some("--private"))
        .arg("--data")
        .arg(data)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .expect("run lt_peer.py make-torrent");
    let hex = String::from_utf8_lossy(&o.stdout).trim().to_string();
    InfoHash::from_hex(&hex).unwrap_or_else(|| {
        panic!(
            "make-torrent failed: {hex:?}\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A payload file `dir/name` of `len` bytes and its tracker-less torrent `dir/name.torrent`.
fn payload_and_torrent(
    dir: &Path,
    name: &str,
    len: u64,
    seed: u64,
) -> (PathBuf, PathBuf, InfoHash) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let file = dir.join(name);
    payload::write_file(&file, len, seed).expect("write payload");
    let torrent = dir.join(format!("{name}.torrent"));
    let ih = trackerless_torrent(&file, &torrent);
    (file, torrent, ih)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The `peer connected` log lines of ratorrent for `addr`.
fn connected_lines(rat: &Rat, addr: SocketAddr) -> Vec<String> {
    let needle = format!("addr={addr}");
    rat.stderr()
        .lines()
        .filter(|l| l.contains("peer connected") && l.contains(&needle))
        .map(str::to_owned)
        .collect()
}

/// UDP ports that process `pid` has sockets bound to (its `/proc/PID/net/udp`, matched
/// against the socket inodes of its open files).
fn udp_ports_of(pid: u32) -> HashSet<u16> {
    let mut inodes = HashSet::new();
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                let t = target.to_string_lossy();
                if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                    inodes.insert(n.to_string());
                }
            }
        }
    }
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/udp")).unwrap_or_default();
    let mut ports = HashSet::new();
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() > 9
            && inodes.contains(cols[9])
            && let Some((_, port)) = cols[1].split_once(':')
            && let Ok(p) = u16::from_str_radix(port, 16)
        {
            ports.insert(p);
        }
    }
    ports
}

/// A socket that hears the LSD group on `lo` (shares port 6771 like any LSD client).
fn group_listener() -> UdpSocket {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).expect("socket");
    sock.set_reuse_address(true).expect("SO_REUSEADDR");
    sock.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, PORT)).into())
        .expect("bind 0.0.0.0:6771");
    sock.join_multicast_v4(&GROUP_V4, &Ipv4Addr::LOCALHOST)
        .expect("join the LSD group on lo");
    let u: UdpSocket = sock.into();
    u.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    u
}

/// Datagrams heard on `sock` during `d`: (sender, text).
fn hear(sock: &UdpSocket, d: Duration) -> Vec<(SocketAddr, String)> {
    let end = Instant::now() + d;
    let mut buf = [0u8; 2048];
    let mut out = Vec::new();
    while Instant::now() < end {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            out.push((from, String::from_utf8_lossy(&buf[..n]).into_owned()));
        }
    }
    out
}

#[test]
fn ratorrent_downloads_from_a_libtorrent_seeder_found_through_lsd() {
    require_libtorrent();
    in_netns(true, || {
        let dir = temp_dir();
        let seed_dir = dir.path().join("seed");
        let (file, torrent, _ih) = payload_and_torrent(&seed_dir, "lsd-a.bin", 3 * MIB, 14);
        let seed_port = free_port();
        let mut args = SeedArgs::new(&torrent, &seed_dir, Ipv4Addr::LOCALHOST, seed_port);
        // announce over LSD, never dial: only ratorrent hearing it can connect the two
        args.extra = vec!["--lsd".into(), "--no-outgoing".into()];
        let seeder = LtPeer::seed(&args);
        let out = dir.path().join("out");
        let port = free_port().to_string();
        let started = Instant::now();
        let mut rat = Rat::spawn_logging(
            &[
                "download",
                s(&torrent),
                "-o",
                s(&out),
                "--port",
                &port,
                "--no-dht",
                "--lsd",
                "--timeout",
                "60",
            ],
            LSD_LOOPBACK,
            LOG,
        );
        let st = rat.wait(Duration::from_secs(90)).unwrap();
        assert!(
            st.success(),
            "download failed: {st}\n{}\n--- seeder ---\n{}",
            rat.output(),
            seeder.stderr()
        );
        println!(
            "found through LSD and downloaded 3 MiB in {:?}",
            started.elapsed()
        );
        compare_files(&file, &out.join("lsd-a.bin")).unwrap();
        let err = rat.stderr();
        assert!(err.contains("LSD (BEP 14) on"), "{err}");
        let seeder_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, seed_port));
        let lines = connected_lines(&rat, seeder_addr);
        assert!(
            !lines.is_empty()
                && lines
                    .iter()
                    .all(|l| l.contains("source=\"LSD\"") && l.contains("outgoing=true")),
            "the seeder must be dialled as an LSD peer: {lines:?}\n{err}"
        );
    });
}

#[test]
fn libtorrent_downloads_from_a_ratorrent_seeder_found_through_lsd() {
    require_libtorrent();
    in_netns(true, || {
        let dir = temp_dir();
        let seed_dir = dir.path().join("seed");
        let (file, torrent, _ih) = payload_and_torrent(&seed_dir, "lsd-b.bin", 3 * MIB, 15);
        let save = dir.path().join("lt");
        let lt_port = free_port();
        let mut args = LeechArgs::new(&torrent, &save, Ipv4Addr::LOCALHOST, lt_port);
        // accepts no connection: only libtorrent hearing ratorrent can connect the two
        args.extra = vec![
            "--lsd".into(),
            "--no-incoming".into(),
            "--report-peers".into(),
        ];
        args.timeout_s = 60;
        let mut leecher = LtPeer::leech(&args);
        // listening (its first status line) before ratorrent's first announce goes out
        assert!(
            wait_until(Duration::from_secs(15), || leecher
                .stderr()
                .contains("state=")),
            "the libtorrent leecher did not start:\n{}",
            leecher.stderr()
        );
        let port = free_port();
        let p = port.to_string();
        let mut rat = Rat::spawn_logging(
            &[
                "download",
                s(&torrent),
                "-o",
                s(&seed_dir),
                "--port",
                &p,
                "--no-dht",
                "--lsd",
                "--seed",
            ],
            LSD_LOOPBACK,
            LOG,
        );
        let peer = leecher
            .wait_line("PEER", Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
        assert_eq!(
            peer,
            format!("PEER 127.0.0.1:{port} lsd tcp"),
            "libtorrent learnt of ratorrent through LSD only"
        );
        leecher
            .wait_done(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
        compare_files(&file, &save.join("lsd-b.bin")).unwrap();
        let err = rat.stderr();
        assert!(err.contains("LSD: announced"), "{err}");
        // ratorrent heard libtorrent too, but could not dial it (it accepts nothing)
        let lt_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, lt_port));
        assert!(
            err.contains(&format!("peer={lt_addr}")),
            "ratorrent should have heard the leecher's announcement:\n{err}"
        );
        let incoming: Vec<String> = err
            .lines()
            .filter(|l| l.contains("peer connected") && l.contains("outgoing=false"))
            .map(str::to_owned)
            .collect();
        assert!(
            !incoming.is_empty() && incoming.iter().all(|l| l.contains("source=\"incoming\"")),
            "{incoming:?}"
        );
        rat.terminate();
    });
}

#[test]
fn two_ratorrents_find_each_other_through_lsd() {
    in_netns(true, || {
        // no [lsd] interface: the kernel's choice, through a multicast route on lo (with a
        // source address: lo's 127.0.0.1 is host-scoped and would not be picked, and a
        // datagram from 0.0.0.0 is refused)
        ip(&[
            "route",
            "add",
            "224.0.0.0/4",
            "dev",
            "lo",
            "src",
            "127.0.0.1",
        ]);
        let dir = temp_dir();
        let seed_dir = dir.path().join("seed");
        let (file, torrent, _ih) = payload_and_torrent(&seed_dir, "lsd-c.bin", 2 * MIB, 16);
        let config = "[lsd]\nenabled = true\n";
        let seed_port = free_port();
        let sp = seed_port.to_string();
        let mut seeder = Rat::spawn_logging(
            &[
                "download",
                s(&torrent),
                "-o",
                s(&seed_dir),
                "--port",
                &sp,
                "--no-dht",
                "--seed",
            ],
            config,
            LOG,
        );
        seeder
            .wait_stdout("seeding until interrupted", Duration::from_secs(30))
            .unwrap();
        let out = dir.path().join("out");
        let lp = free_port().to_string();
        let mut leecher = Rat::spawn_logging(
            &[
                "download",
                s(&torrent),
                "-o",
                s(&out),
                "--port",
                &lp,
                "--no-dht",
                "--timeout",
                "60",
            ],
            config,
            LOG,
        );
        let st = leecher.wait(Duration::from_secs(90)).unwrap();
        assert!(
            st.success(),
            "{st}\n{}\n--- seeder ---\n{}",
            leecher.output(),
            seeder.output()
        );
        compare_files(&file, &out.join("lsd-c.bin")).unwrap();
        // the leecher's start-up announcement reached the seeder, which dialled it (or the
        // seeder's next one reached the leecher): either way an LSD peer connected
        let both = format!("{}{}", seeder.stderr(), leecher.stderr());
        assert!(
            both.lines()
                .any(|l| l.contains("peer connected") && l.contains("source=\"LSD\"")),
            "{both}"
        );
        seeder.terminate();
    });
}

#[test]
fn lsd_off_by_default_sends_nothing_and_binds_nothing() {
    in_netns(true, || {
        let dir = temp_dir();
        let (_file, torrent, ih) =
            payload_and_torrent(&dir.path().join("src"), "lsd-d.bin", MIB, 17);
        let group = group_listener();
        let run = |config: &str, out: &str| {
            let port = free_port();
            let p = port.to_string();
            let out = dir.path().join(out);
            let rat = Rat::spawn(
                &[
                    "download",
                    s(&torrent),
                    "-o",
                    s(&out),
                    "--port",
                    &p,
                    "--no-dht",
                    "--timeout",
                    "8",
                ],
                config,
            );
            (rat, port)
        };
        // default config: LSD off
        let (mut rat, port) = run("", "off");
        assert!(wait_until(Duration::from_secs(10), || rat
            .stdout()
            .contains('%')));
        let heard = hear(&group, Duration::from_secs(4));
        let mut ports = udp_ports_of(rat.pid());
        assert!(
            heard.is_empty(),
            "LSD is off, yet the group heard {heard:?}"
        );
        // the one UDP socket is uTP's, on the listen port
        assert!(ports.remove(&port), "uTP listens on UDP {port}: {ports:?}");
        assert!(
            ports.is_empty(),
            "LSD is off, yet ratorrent has UDP sockets on {ports:?}"
        );
        let st = rat.wait(Duration::from_secs(30)).unwrap();
        assert_eq!(
            st.code(),
            Some(1),
            "times out without peers\n{}",
            rat.output()
        );
        assert!(
            rat.stderr().contains("timed out after 8 s"),
            "{}",
            rat.output()
        );
        assert!(!rat.stderr().contains("LSD"), "{}", rat.output());
        // the same run with LSD on in the config: the check above can fail
        let (mut rat, _) = run(LSD_LOOPBACK, "on");
        let mut heard = Vec::new();
        assert!(
            wait_until(Duration::from_secs(10), || {
                heard.extend(hear(&group, Duration::from_millis(200)));
                !heard.is_empty()
            }),
            "LSD on, nothing heard\n{}",
            rat.output()
        );
        let (from, text) = &heard[0];
        assert_eq!(from.port(), PORT);
        assert!(
            text.starts_with("BT-SEARCH * HTTP/1.1\r\nHost: 239.192.152.143:6771\r\n")
                && text.contains(&format!("Infohash: {}\r\n", ih.to_hex()))
                && text.ends_with("\r\n\r\n\r\n"),
            "{text:?}"
        );
        assert!(udp_ports_of(rat.pid()).contains(&PORT));
        rat.terminate();
    });
}

#[test]
fn lsd_that_cannot_start_is_one_warning_and_not_fatal() {
    in_netns(false, || {
        let dir = temp_dir();
        let (_file, torrent, _ih) =
            payload_and_torrent(&dir.path().join("src"), "lsd-e.bin", MIB, 18);
        let run = |config: &str, out: &str| {
            let p = free_port().to_string();
            let out = dir.path().join(out);
            let mut rat = Rat::spawn(
                &[
                    "download",
                    s(&torrent),
                    "-o",
                    s(&out),
                    "--port",
                    &p,
                    "--no-dht",
                    "--timeout",
                    "3",
                ],
                config,
            );
            let st = rat.wait(Duration::from_secs(30)).unwrap();
            (st, rat)
        };
        // no multicast route in this namespace: the kernel has no interface to join on
        let (st, rat) = run("[lsd]\nenabled = true\n", "noroute");
        let err = rat.stderr();
        assert_eq!(
            st.code(),
            Some(1),
            "ran until its timeout\n{}",
            rat.output()
        );
        assert!(
            rat.stdout().contains('%') && err.contains("timed out after 3 s"),
            "the download ran on without LSD\n{}",
            rat.output()
        );
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("LSD")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0]
                .contains("LSD (BEP 14) is off: cannot join 239.192.152.143 on interface 0.0.0.0"),
            "{}",
            lines[0]
        );
        assert!(!err.contains("panicked"), "{err}");
        // port 6771 taken by a socket without SO_REUSEADDR
        let _taken = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, PORT)).expect("bind 6771");
        let (st, rat) = run(LSD_LOOPBACK, "taken");
        let err = rat.stderr();
        assert_eq!(st.code(), Some(1), "{}", rat.output());
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("LSD")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains("LSD (BEP 14) is off: cannot bind UDP port 6771"),
            "{}",
            lines[0]
        );
    });
}

/// Send `datagram` to the LSD group from `from` (port 0: any), on `lo`.
fn send_to_group(from: Ipv4Addr, datagram: &[u8]) {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).expect("socket");
    sock.bind(&SocketAddr::from((from, 0)).into())
        .expect("bind the sender");
    sock.set_multicast_if_v4(&from).expect("IP_MULTICAST_IF");
    sock.set_multicast_loop_v4(true).expect("IP_MULTICAST_LOOP");
    let to = SocketAddr::from((GROUP_V4, PORT));
    sock.send_to(datagram, &to.into())
        .expect("send to the group");
}

/// Info hashes in the BitTorrent handshakes of connections accepted on `l` during `d`.
fn dialled_for(l: &std::net::TcpListener, d: Duration) -> Vec<InfoHash> {
    use std::io::Read;
    l.set_nonblocking(true).expect("nonblocking");
    let end = Instant::now() + d;
    let mut out = Vec::new();
    while Instant::now() < end {
        match l.accept() {
            Ok((mut c, _)) => {
                c.set_nonblocking(false).expect("blocking");
                c.set_read_timeout(Some(Duration::from_secs(2)))
                    .expect("timeout");
                let mut hs = [0u8; 68];
                if c.read_exact(&mut hs).is_ok() && &hs[..20] == b"\x13BitTorrent protocol" {
                    out.push(InfoHash(hs[28..48].try_into().expect("20 bytes")));
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    out
}

#[test]
fn lsd_peers_only_from_the_local_network_and_only_for_public_torrents() {
    in_netns(true, || {
        // a global address inside the namespace, to send from and to be dialled on
        let global = Ipv4Addr::new(8, 8, 8, 8);
        ip(&["addr", "add", "8.8.8.8/32", "dev", "lo"]);
        let dir = temp_dir();
        let src = dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        let public = src.join("public.bin");
        let private = src.join("private.bin");
        payload::write_file(&public, MIB, 19).unwrap();
        payload::write_file(&private, MIB, 20).unwrap();
        let (pt, qt) = (src.join("public.torrent"), src.join("private.torrent"));
        let pub_ih = make_torrent_file(&public, &pt, false);
        let priv_ih = make_torrent_file(&private, &qt, true);
        let group = group_listener();
        let p = free_port().to_string();
        let out = dir.path().join("out");
        let mut rat = Rat::spawn_logging(
            &[
                "download",
                s(&pt),
                s(&qt),
                "-o",
                s(&out),
                "--port",
                &p,
                "--no-dht",
                "--lsd",
                "--timeout",
                "60",
            ],
            LSD_LOOPBACK,
            LOG,
        );
        // only the public torrent is announced
        let mut heard = Vec::new();
        assert!(
            wait_until(Duration::from_secs(10), || {
                heard.extend(hear(&group, Duration::from_millis(200)));
                heard.iter().any(|(_, t)| t.contains(&pub_ih.to_hex()))
            }),
            "public torrent not announced\n{}",
            rat.output()
        );
        heard.extend(hear(&group, Duration::from_secs(2)));
        assert!(
            heard.iter().all(|(_, t)| !t.contains(&priv_ih.to_hex())),
            "a private torrent was announced: {heard:?}"
        );
        // forged announcements: a loopback sender naming both torrents, a global one
        let local_trap = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let global_trap = std::net::TcpListener::bind((global, 0)).unwrap();
        let (lp, gp) = (
            local_trap.local_addr().unwrap().port(),
            global_trap.local_addr().unwrap().port(),
        );
        let announce = |port: u16, cookie: &str| {
            format!(
                "BT-SEARCH * HTTP/1.1\r\nHost: 239.192.152.143:6771\r\nPort: {port}\r\n\
                 Infohash: {}\r\nInfohash: {}\r\ncookie: {cookie}\r\n\r\n\r\n",
                pub_ih.to_hex(),
                priv_ih.to_hex()
            )
        };
        let global_trap_thread =
            std::thread::spawn(move || dialled_for(&global_trap, Duration::from_secs(6)));
        // hostile datagrams first: none may stop the task
        send_to_group(Ipv4Addr::LOCALHOST, announce(0, "zero").as_bytes());
        send_to_group(Ipv4Addr::LOCALHOST, &[b'x'; 1400]);
        let mut big = announce(lp, "big").into_bytes();
        big.resize(ratorrent::lsd::MAX_RECEIVE + 100, b' ');
        send_to_group(Ipv4Addr::LOCALHOST, &big);
        send_to_group(global, announce(gp, "global").as_bytes());
        send_to_group(Ipv4Addr::LOCALHOST, announce(lp, "local").as_bytes());
        let dialled = dialled_for(&local_trap, Duration::from_secs(6));
        let from_global = global_trap_thread.join().unwrap();
        assert!(
            dialled.contains(&pub_ih),
            "the loopback sender was not dialled for the public torrent: {dialled:?}\n{}",
            rat.output()
        );
        assert!(
            !dialled.contains(&priv_ih),
            "dialled for a private torrent: {dialled:?}"
        );
        assert!(
            from_global.is_empty(),
            "dialled a global address learnt from LSD: {from_global:?}"
        );
        let err = rat.stderr();
        assert!(!err.contains("panicked"), "{err}");
        // the oversized one named the local trap too: it was not the one that got through
        let peers: Vec<&str> = err.lines().filter(|l| l.contains("LSD: peer")).collect();
        assert_eq!(peers.len(), 1, "{peers:?}");
        assert!(
            peers[0].contains(&format!("peer=127.0.0.1:{lp}")),
            "{peers:?}"
        );
        rat.terminate();
    });
}
