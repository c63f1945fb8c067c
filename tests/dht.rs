//! The DHT (BEP 5) against real libtorrent DHT nodes, and against lying ones; loopback only.
//!
//! A test DHT is 3–4 libtorrent sessions (`lt_peer.py dht-node`) on their own 127.0.0.x
//! addresses, joined through the first. Nothing here reaches a public node: every
//! bootstrap list names 127.0.0.x nodes or an unreachable 127.0.0.1:1.
//!
//! - [`our_lookup_finds_a_libtorrent_seeder`]: `Dht::get_peers` finds a tracker-less
//!   libtorrent seeder that announced itself on the DHT.
//! - [`ratorrent_downloads_a_trackerless_torrent_through_the_dht`]: the binary, given only
//!   `--dht-bootstrap`, downloads byte-exact from that seeder.
//! - [`libtorrent_finds_ratorrent_by_its_announce`]: the binary seeds a tracker-less
//!   torrent; a libtorrent leecher that knows only the DHT finds it and downloads.
//! - [`routing_table_survives_a_restart`]: table saved at shutdown, back after a restart
//!   whose bootstrap node is unreachable (prints the closing figure), through the wrapper
//!   and through the session (`dht.dat` in the state folder, `dht_nodes` in snapshots).
//! - [`port_message_adds_a_node`]: a BEP 5 `port` hint brings an isolated node into the
//!   DHT, in-process and from a libtorrent peer's real `port` message to the binary.
//! - [`magnet_without_trackers_completes_through_the_dht`]: the binary, given a magnet link
//!   with only the info hash, finds a libtorrent seeder of a 64 MiB payload through the
//!   DHT, fetches the metadata and completes; a libtorrent leecher does the same for
//!   comparison (both times printed).
//! - [`private_torrents_never_reach_the_dht`]: with a public and a private (BEP 27)
//!   torrent seeding, a recording DHT node sees `get_peers`/`announce_peer` for the public
//!   info hash only; a peer of the private torrent gets no `port` message, one of the
//!   public torrent does, and our handshake carries the DHT (0x01) and fast (0x04) bits.
//! - [`hostile_nodes_and_datagrams_are_survived`]: thousands of malformed datagrams and a
//!   node that answers with huge, garbage and out-of-scope peer lists: no panic, bounded
//!   memory and output, no dial outside 127.0.0.0/8.

mod common;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::lt::{LeechArgs, LtPeer, SeedArgs, require_libtorrent};
use common::payload;
use common::procmem::{self, MemSampler};
use common::rat::Rat;
use common::scenario::{rat_tail, spawn_rat_on_free_port};
use common::{free_port_on, temp_dir, wait_until};
use ratorrent::dht::{Dht, DhtOptions, MAX_PEERS_PER_LOOKUP};
use ratorrent::metainfo::InfoHash;
use sha1::{Digest, Sha1};

const PIECE: usize = 16 * 1024;
const CONFIG_DHT_ON: &str = "[dht]\nenabled = true\n";

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn bstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(s);
}

/// The piece hashes of `data`.
fn pieces_of(data: &[u8]) -> Vec<u8> {
    let mut pieces = Vec::new();
    for chunk in data.chunks(PIECE) {
        pieces.extend_from_slice(&Sha1::digest(chunk));
    }
    pieces
}

/// The bencoded info dict of a single-file v1 torrent of `len` bytes with piece hashes
/// `pieces`, named `name`.
fn info_dict(len: usize, pieces: &[u8], name: &str) -> Vec<u8> {
    let mut info = b"d".to_vec();
    bstr(&mut info, b"length");
    info.extend_from_slice(format!("i{len}e").as_bytes());
    bstr(&mut info, b"name");
    bstr(&mut info, name.as_bytes());
    bstr(&mut info, b"piece length");
    info.extend_from_slice(format!("i{PIECE}e").as_bytes());
    bstr(&mut info, b"pieces");
    bstr(&mut info, pieces);
    info.push(b'e');
    info
}

/// Write `dir/name` (the data) and `dir/name.torrent` (no tracker: DHT only); returns the
/// torrent's path and info hash.
fn trackerless(dir: &Path, data: &[u8], name: &str) -> (PathBuf, InfoHash) {
    let info = info_dict(data.len(), &pieces_of(data), name);
    write_torrent(dir, data, name, info)
}

/// [`trackerless`] with `private=1` in the info dictionary (BEP 27).
fn trackerless_private(dir: &Path, data: &[u8], name: &str) -> (PathBuf, InfoHash) {
    let mut info = info_dict(data.len(), &pieces_of(data), name);
    info.pop();
    bstr(&mut info, b"private");
    info.extend_from_slice(b"i1ee");
    write_torrent(dir, data, name, info)
}

fn write_torrent(dir: &Path, data: &[u8], name: &str, info: Vec<u8>) -> (PathBuf, InfoHash) {
    std::fs::write(dir.join(name), data).expect("write payload");
    let mut t = b"d".to_vec();
    bstr(&mut t, b"info");
    t.extend_from_slice(&info);
    t.push(b'e');
    let path = dir.join(format!("{name}.torrent"));
    std::fs::write(&path, &t).expect("write .torrent");
    (path, InfoHash(Sha1::digest(&info).into()))
}

/// A file name whose torrent's info hash starts with `prefix` (16 bits), so that the node
/// with that id prefix is "close" in BEP 5 terms (the crate announces only to nodes that
/// share 16 leading bits with the info hash; in a 4-node DHT none would by chance).
fn grind_name(data: &[u8], prefix: [u8; 2]) -> String {
    let pieces = pieces_of(data);
    for n in 0u32..5_000_000 {
        let name = format!("dht-{n}.bin");
        let ih: [u8; 20] = Sha1::digest(info_dict(data.len(), &pieces, &name)).into();
        if ih[..2] == prefix {
            return name;
        }
    }
    panic!("no name found for prefix {prefix:02x?}");
}

/// A libtorrent DHT of `n` nodes on 127.0.0.`first`.. joined through the first.
struct LtNet {
    nodes: Vec<LtPeer>,
}

impl LtNet {
    fn start(n: usize, first: u8) -> LtNet {
        require_libtorrent();
        let ip = |i: usize| Ipv4Addr::new(127, 0, 0, first + i as u8);
        let hub = LtPeer::dht_node(ip(0), free_port_on(ip(0)), &[]);
        let hub_addr = SocketAddr::V4(hub.addr());
        let mut nodes = vec![hub];
        for i in 1..n {
            nodes.push(LtPeer::dht_node(ip(i), free_port_on(ip(i)), &[hub_addr]));
        }
        // everyone knows the hub, the hub knows everyone
        let want = n - 1;
        nodes[0]
            .wait_nodes(want, Duration::from_secs(30))
            .expect("the libtorrent DHT did not form");
        for node in &mut nodes[1..] {
            node.wait_nodes(1, Duration::from_secs(30))
                .expect("the libtorrent DHT did not form");
        }
        LtNet { nodes }
    }

    fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes
            .iter()
            .map(|n| SocketAddr::V4(n.addr()))
            .collect()
    }

    fn bootstrap(&self) -> Vec<String> {
        self.addrs().iter().map(SocketAddr::to_string).collect()
    }

    fn cli_args(&self) -> Vec<String> {
        self.bootstrap()
            .into_iter()
            .flat_map(|b| ["--dht-bootstrap".to_string(), b])
            .collect()
    }
}

/// Send one KRPC query to `to` and return the raw response (5 tries, 1 s each).
fn krpc(to: SocketAddr, query: &[u8]) -> Option<Vec<u8>> {
    let s = UdpSocket::bind("127.0.0.1:0").ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let mut buf = vec![0u8; 65536];
    for _ in 0..5 {
        s.send_to(query, to).ok()?;
        if let Ok((n, from)) = s.recv_from(&mut buf)
            && from.port() == to.port()
        {
            return Some(buf[..n].to_vec());
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The node id of the DHT node at `to` (KRPC `ping`).
fn node_id(to: SocketAddr) -> [u8; 20] {
    let r = krpc(
        to,
        b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:pi1:y1:qe",
    )
    .unwrap_or_else(|| panic!("{to} does not answer a ping"));
    let at = find(&r, b"1:rd2:id20:").expect("no id in the ping response") + 11;
    r[at..at + 20].try_into().unwrap()
}

/// Nodes the DHT node at `to` returns for a `find_node` of a random target (its
/// routing table's closest, at most 8).
fn find_node_count(to: SocketAddr) -> Option<usize> {
    let r = krpc(
        to,
        b"d1:ad2:id20:abcdefghij01234567896:target20:mnopqrstuvwxyz123456e1:q9:find_node1:t2:fn1:y1:qe",
    )?;
    let at = find(&r, b"5:nodes")? + 7;
    let rest = &r[at..];
    let colon = rest.iter().position(|&c| c == b':')?;
    let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
    Some(len / 26)
}

fn assert_same_file(a: &Path, want: &[u8]) {
    let got = std::fs::read(a).unwrap_or_else(|e| panic!("{}: {e}", a.display()));
    assert!(
        got == want,
        "{} differs from the payload ({} vs {} bytes)",
        a.display(),
        got.len(),
        want.len()
    );
}

fn dht_opts(bootstrap: Vec<String>, state_file: Option<PathBuf>) -> DhtOptions {
    DhtOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        bootstrap,
        state_file,
    }
}

/// Run lookups of `ih` (each ends on its own after 15 s, or once `want` shows) until
/// `want` is among the peers or `timeout` passes; returns every address seen.
async fn lookup_until(
    dht: &Dht,
    ih: InfoHash,
    want: SocketAddr,
    timeout: Duration,
) -> HashSet<SocketAddr> {
    let end = Instant::now() + timeout;
    let mut all = HashSet::new();
    while Instant::now() < end {
        let mut rx = dht.get_peers(ih);
        let left = end.saturating_duration_since(Instant::now());
        let _ = tokio::time::timeout(left, async {
            while let Some(a) = rx.recv().await {
                all.insert(a);
                if a == want {
                    return;
                }
            }
        })
        .await;
        if all.contains(&want) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    all
}

fn dht_seeder(net: &LtNet, dir: &Path, torrent: &Path, ip: Ipv4Addr) -> LtPeer {
    let mut sa = SeedArgs::new(torrent, dir, ip, free_port_on(ip));
    sa.dht = true;
    sa.dht_bootstrap = net.addrs();
    LtPeer::seed(&sa)
}

#[test]
fn our_lookup_finds_a_libtorrent_seeder() {
    let t0 = Instant::now();
    let net = LtNet::start(4, 20);
    let dir = temp_dir();
    let data = payload::bytes(192 * 1024, 0xd1a);
    let (torrent, ih) = trackerless(dir.path(), &data, "dht-a.bin");
    let seeder = dht_seeder(&net, dir.path(), &torrent, Ipv4Addr::new(127, 0, 0, 30));
    let want = SocketAddr::V4(seeder.addr());
    let (all, nodes) = rt().block_on(async {
        let dht = Dht::start(dht_opts(net.bootstrap(), None)).await.unwrap();
        let all = lookup_until(&dht, ih, want, Duration::from_secs(60)).await;
        let nodes = dht.node_count();
        dht.shutdown().await.unwrap();
        (all, nodes)
    });
    assert!(
        all.contains(&want),
        "get_peers never returned the seeder {want}; got {all:?}; {nodes} nodes\n{}",
        seeder.stderr()
    );
    assert!(all.len() <= MAX_PEERS_PER_LOOKUP);
    println!(
        "found the libtorrent seeder {want} through {nodes} DHT nodes in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn ratorrent_downloads_a_trackerless_torrent_through_the_dht() {
    let t0 = Instant::now();
    let net = LtNet::start(4, 40);
    let dir = temp_dir();
    let data = payload::bytes(512 * 1024 + 777, 0xd1b);
    let (torrent, _ih) = trackerless(dir.path(), &data, "dht-b.bin");
    let _seeder = dht_seeder(&net, dir.path(), &torrent, Ipv4Addr::new(127, 0, 0, 50));
    let out = dir.path().join("out");
    let boot = net.cli_args();
    let (mut rat, _port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        let mut args = vec![
            "download",
            torrent.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--port",
            &p,
        ];
        args.extend(boot.iter().map(String::as_str));
        Rat::spawn(&args, CONFIG_DHT_ON)
    });
    let st = rat.wait(Duration::from_secs(120)).unwrap();
    assert!(st.success(), "ratorrent failed: {st}\n{}", rat_tail(&rat));
    assert_same_file(&out.join("dht-b.bin"), &data);
    println!(
        "ratorrent downloaded {} bytes found only through the DHT in {:.1} s",
        data.len(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn libtorrent_finds_ratorrent_by_its_announce() {
    let t0 = Instant::now();
    let net = LtNet::start(4, 60);
    let hub_id = node_id(net.addrs()[0]);
    let dir = temp_dir();
    let seed_dir = dir.path().join("seed");
    let leech_dir = dir.path().join("leech");
    std::fs::create_dir_all(&seed_dir).unwrap();
    let data = payload::bytes(384 * 1024 + 5, 0xd1c);
    let name = grind_name(&data, [hub_id[0], hub_id[1]]);
    let (torrent, _ih) = trackerless(&seed_dir, &data, &name);
    let boot = net.cli_args();
    let (mut rat, _port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        let mut args = vec![
            "download",
            torrent.to_str().unwrap(),
            "-o",
            seed_dir.to_str().unwrap(),
            "--seed",
            "--port",
            &p,
        ];
        args.extend(boot.iter().map(String::as_str));
        Rat::spawn(&args, CONFIG_DHT_ON)
    });
    rat.wait_stdout("Seeding", Duration::from_secs(60)).unwrap();
    let ip = Ipv4Addr::new(127, 0, 0, 70);
    let mut la = LeechArgs::new(&torrent, &leech_dir, ip, free_port_on(ip));
    la.dht = true;
    la.dht_bootstrap = net.addrs();
    la.timeout_s = 100;
    let mut leecher = LtPeer::leech(&la);
    if let Err(e) = leecher.wait_done(Duration::from_secs(110)) {
        panic!("{e}\n{}", rat_tail(&rat));
    }
    // ratorrent is the only seeder there is, and the leecher knows of it only by the DHT
    assert_same_file(&leech_dir.join(&name), &data);
    rat.terminate();
    println!(
        "a libtorrent leecher found ratorrent through its DHT announce and downloaded {} bytes \
         in {:.1} s",
        data.len(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn routing_table_survives_a_restart() {
    let t0 = Instant::now();
    let net = LtNet::start(4, 90);
    let dir = temp_dir();
    let state = dir.path().join("dht.dat");
    let rt = rt();
    // the wrapper: save at shutdown, restore with an unreachable bootstrap node
    let (before, after) = rt.block_on(async {
        let dht = Dht::start(dht_opts(net.bootstrap(), Some(state.clone())))
            .await
            .unwrap();
        let end = Instant::now() + Duration::from_secs(30);
        while dht.node_count() < 3 && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let before = dht.node_count();
        let id = dht.node_id();
        dht.shutdown().await.unwrap();
        let again = Dht::start(dht_opts(vec!["127.0.0.1:1".into()], Some(state.clone())))
            .await
            .unwrap();
        let after = again.node_count();
        assert_eq!(again.node_id(), id, "the node id comes back too");
        again.shutdown().await.unwrap();
        (before, after)
    });
    assert!(before >= 3, "only {before} nodes before the restart");
    assert!(
        after > 0 && after == before,
        "{after} nodes after, {before} before"
    );
    println!("DHT nodes in the routing table after a restart (no bootstrap reachable): {after}");

    // the session: dht.dat in the state folder, the count in snapshots
    let state_dir = dir.path().join("state");
    let config = |boot: Vec<String>| ratorrent::config::engine::EngineConfig {
        download_dir: dir.path().to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig {
            bootstrap: boot,
            ..ratorrent::config::engine::DhtConfig::default()
        },
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let session_nodes = rt.block_on(async {
        let h = ratorrent::engine::session::start_with_state(config(net.bootstrap()), &state_dir)
            .await
            .unwrap();
        let nodes = |s: &ratorrent::api::Snapshot| s.global.dht_nodes.unwrap_or(0);
        let seen = tokio::time::timeout(
            Duration::from_secs(30),
            h.client.wait_for(|s| nodes(s) >= 3),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .map_or(0, |s| nodes(&s));
        assert!(seen >= 3, "the snapshot never showed 3 DHT nodes");
        // the state folder's lock goes with the session task
        h.shutdown().await.unwrap();
        assert!(
            state_dir.join("dht.dat").exists(),
            "no dht.dat after shutdown"
        );
        let h = ratorrent::engine::session::start_with_state(
            config(vec!["127.0.0.1:1".into()]),
            &state_dir,
        )
        .await
        .unwrap();
        let n = h.client.snapshot().global.dht_nodes;
        h.client.shutdown().await.unwrap();
        n
    });
    assert!(
        session_nodes.is_some_and(|n| n >= 3),
        "first snapshot after the session restart: {session_nodes:?} DHT nodes"
    );
    println!(
        "session restart: {} DHT nodes in the first snapshot; test took {:.1} s",
        session_nodes.unwrap_or(0),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn port_message_adds_a_node() {
    let t0 = Instant::now();
    let net = LtNet::start(3, 110);
    // in-process: an isolated node (unreachable bootstrap) learns a node from a hint
    let (count, restarts) = rt().block_on(async {
        let dht = Dht::start(dht_opts(vec!["127.0.0.1:1".into()], None))
            .await
            .unwrap();
        assert_eq!(dht.node_count(), 0);
        let hub = net.addrs()[0];
        assert!(
            !dht.add_node(SocketAddr::new(hub.ip(), 0)),
            "port 0 is ignored"
        );
        assert!(
            !dht.add_node("[::1]:6881".parse().unwrap()),
            "IPv6 on an IPv4-only node is ignored"
        );
        assert!(dht.add_node(hub));
        let end = Instant::now() + Duration::from_secs(30);
        while dht.node_count() == 0 && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let r = (dht.node_count(), dht.restarts());
        dht.shutdown().await.unwrap();
        r
    });
    assert!(count > 0, "the hint did not bring any node");
    assert_eq!(restarts, 1);

    // the binary: a libtorrent peer's BEP 5 `port` message over a real connection
    let dir = temp_dir();
    let data = payload::bytes(256 * 1024, 0xd1d);
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    let (torrent, _) = trackerless(&seed_dir, &data, "dht-port.bin");
    let (mut rat, port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        Rat::spawn(
            &[
                "download",
                torrent.to_str().unwrap(),
                "-o",
                seed_dir.to_str().unwrap(),
                "--seed",
                "--port",
                &p,
                "--dht-bootstrap",
                "127.0.0.1:1",
            ],
            CONFIG_DHT_ON,
        )
    });
    rat.wait_stdout("Seeding", Duration::from_secs(60)).unwrap();
    // uTP has the listen port's UDP side: the DHT node is on the next port
    let rat_peer = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let rat_dht = SocketAddr::from((Ipv4Addr::LOCALHOST, port + 1));
    assert_eq!(
        find_node_count(rat_dht),
        Some(0),
        "ratorrent's table starts empty"
    );
    let ip = Ipv4Addr::new(127, 0, 0, 120);
    let mut la = LeechArgs::new(&torrent, &dir.path().join("leech"), ip, free_port_on(ip));
    la.dht = true;
    la.dht_bootstrap = net.addrs();
    la.connect = vec![rat_peer];
    let mut leecher = LtPeer::leech(&la);
    leecher.wait_done(Duration::from_secs(60)).unwrap();
    let ok = wait_until(Duration::from_secs(30), || {
        find_node_count(rat_dht).is_some_and(|n| n > 0)
    });
    let n = find_node_count(rat_dht);
    rat.terminate();
    assert!(
        ok,
        "ratorrent's DHT learnt no node from the peer's port message ({n:?})\n{}",
        rat_tail(&rat)
    );
    println!(
        "PORT hint: {count} nodes in-process; the binary answers find_node with {n:?} nodes; \
         {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn magnet_without_trackers_completes_through_the_dht() {
    let net = LtNet::start(4, 130);
    let dir = temp_dir();
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    let size = 64 << 20;
    let data = payload::bytes(size, 0xd1f);
    let (torrent, ih) = trackerless(&seed_dir, &data, "dht-magnet.bin");
    let _seeder = dht_seeder(&net, &seed_dir, &torrent, Ipv4Addr::new(127, 0, 0, 140));
    // the info hash and nothing else: no tracker, no peer address, no name
    let link = format!("magnet:?xt=urn:btih:{}", ih.to_hex());
    let out = dir.path().join("rat");
    let boot = net.cli_args();
    let t0 = Instant::now();
    let (mut rat, _port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        let mut args = vec![
            "download",
            link.as_str(),
            "-o",
            out.to_str().unwrap(),
            "--port",
            &p,
        ];
        args.extend(boot.iter().map(String::as_str));
        Rat::spawn(&args, CONFIG_DHT_ON)
    });
    let st = rat.wait(Duration::from_secs(240)).unwrap();
    let rat_secs = t0.elapsed().as_secs_f64();
    assert!(st.success(), "ratorrent failed: {st}\n{}", rat_tail(&rat));
    assert_same_file(&out.join("dht-magnet.bin"), &data);

    // libtorrent as the leecher of the same magnet link, on the same DHT
    let lt_dir = dir.path().join("lt");
    let ip = Ipv4Addr::new(127, 0, 0, 141);
    let mut la = LeechArgs::new(&torrent, &lt_dir, ip, free_port_on(ip));
    la.magnet = Some(link.clone());
    la.dht = true;
    la.dht_bootstrap = net.addrs();
    la.timeout_s = 230;
    let t1 = Instant::now();
    let mut leecher = LtPeer::leech(&la);
    leecher.wait_done(Duration::from_secs(240)).unwrap();
    let lt_secs = t1.elapsed().as_secs_f64();
    assert_same_file(&lt_dir.join("dht-magnet.bin"), &data);
    let said = rat
        .stdout()
        .lines()
        .find(|l| l.starts_with("complete:"))
        .unwrap_or_default()
        .to_string();
    println!(
        "magnet (info hash only) to complete, {} MiB over a 4-node loopback DHT: ratorrent \
         {rat_secs:.1} s (process start to exit; it says \"{said}\"), libtorrent \
         {lt_secs:.1} s (process start to DONE)",
        size >> 20
    );
}

/// A KRPC query seen: method and `info_hash` argument.
type Query = (String, Option<[u8; 20]>);

/// A DHT node that answers every query (itself as the only node, no peers) and records the method and
/// info hash of each, under an id that shares its first 16 bits with `close_to` (so the
/// crate also announces there).
struct RecordingNode {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Query>>>,
    stop: Arc<AtomicBool>,
}

impl RecordingNode {
    fn start(close_to: InfoHash) -> RecordingNode {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let mut my_id = close_to.0;
        my_id[19] ^= 0xff;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !stop2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let msg = &buf[..n];
                let (Some(t), Some(q)) = (krpc_field(msg, b"1:t"), krpc_field(msg, b"1:q")) else {
                    continue;
                };
                let ih = krpc_field(msg, b"9:info_hash").and_then(|h| <[u8; 20]>::try_from(h).ok());
                seen2
                    .lock()
                    .unwrap()
                    .push((String::from_utf8_lossy(q).into_owned(), ih));
                let mut r = b"d1:rd2:id20:".to_vec();
                r.extend_from_slice(&my_id);
                if q == b"find_node" || q == b"get_peers" {
                    // itself: a node enters the crate's table when some answer lists it
                    let mut me = my_id.to_vec();
                    me.extend_from_slice(&[127, 0, 0, 1]);
                    me.extend_from_slice(&addr.port().to_be_bytes());
                    bstr(&mut r, b"nodes");
                    bstr(&mut r, &me);
                }
                if q == b"get_peers" {
                    bstr(&mut r, b"token");
                    bstr(&mut r, b"tok3n");
                }
                r.extend_from_slice(b"e1:t");
                bstr(&mut r, t);
                r.extend_from_slice(b"1:y1:re");
                let _ = sock.send_to(&r, from);
            }
        });
        RecordingNode { addr, seen, stop }
    }

    /// Queries of `method` naming `ih`.
    fn count(&self, method: &str, ih: InfoHash) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, h)| m == method && *h == Some(ih.0))
            .count()
    }
}

impl Drop for RecordingNode {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Dial `to` as a peer of `ih` with the DHT bit set; returns the reserved bytes of the
/// answer and the ids of the messages that follow within `wait`.
fn handshake_and_listen(to: SocketAddr, ih: InfoHash, wait: Duration) -> ([u8; 8], Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
    let mut hs = vec![19u8];
    hs.extend_from_slice(b"BitTorrent protocol");
    hs.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x01]);
    hs.extend_from_slice(&ih.0);
    hs.extend_from_slice(b"-XX0001-dhtprivtest0");
    s.write_all(&hs).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    assert!(got.len() >= 68, "no handshake back from {to} for {ih:?}");
    let reserved: [u8; 8] = got[20..28].try_into().unwrap();
    assert_eq!(&got[28..48], &ih.0, "handshake for another torrent");
    let mut ids = Vec::new();
    let mut at = 68;
    while at + 4 <= got.len() {
        let len = u32::from_be_bytes(got[at..at + 4].try_into().unwrap()) as usize;
        if len > 0 && at + 4 < got.len() {
            ids.push(got[at + 4]);
        }
        at += 4 + len;
    }
    (reserved, ids)
}

#[test]
fn private_torrents_never_reach_the_dht() {
    let t0 = Instant::now();
    let dir = temp_dir();
    let public_data = payload::bytes(96 * 1024, 0xd20);
    let private_data = payload::bytes(80 * 1024, 0xd21);
    let (public, public_ih) = trackerless(dir.path(), &public_data, "dht-public.bin");
    let (private, private_ih) = trackerless_private(dir.path(), &private_data, "dht-private.bin");
    let node = RecordingNode::start(public_ih);
    let boot = node.addr.to_string();
    let (mut rat, port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        Rat::spawn(
            &[
                "download",
                public.to_str().unwrap(),
                private.to_str().unwrap(),
                "-o",
                dir.path().to_str().unwrap(),
                "--seed",
                "--port",
                &p,
                "--dht-bootstrap",
                &boot,
            ],
            CONFIG_DHT_ON,
        )
    });
    rat.wait_stdout("seeding until interrupted", Duration::from_secs(60))
        .unwrap();
    // the control: the public torrent is looked up and announced at the recording node
    let looked_up = wait_until(Duration::from_secs(60), || {
        node.count("get_peers", public_ih) > 0 && node.count("announce_peer", public_ih) > 0
    });
    assert!(
        looked_up,
        "the public torrent never reached the recording node: {:?}\n{}",
        node.seen.lock().unwrap(),
        rat_tail(&rat)
    );
    // both torrents started together; give the private one time to (wrongly) follow
    std::thread::sleep(Duration::from_secs(5));
    let rat_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let (pub_reserved, pub_ids) = handshake_and_listen(rat_addr, public_ih, Duration::from_secs(2));
    let (_, priv_ids) = handshake_and_listen(rat_addr, private_ih, Duration::from_secs(2));
    std::thread::sleep(Duration::from_secs(1));
    let private_queries: Vec<String> = node
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, h)| *h == Some(private_ih.0))
        .map(|(m, _)| m.clone())
        .collect();
    let total = node.seen.lock().unwrap().len();
    rat.terminate();
    assert!(
        private_queries.is_empty(),
        "the private torrent reached the DHT: {private_queries:?}"
    );
    assert_eq!(
        pub_reserved[7] & 0x01,
        0x01,
        "no DHT bit: {pub_reserved:02x?}"
    );
    assert_eq!(
        pub_reserved[7] & 0x04,
        0x04,
        "no fast bit: {pub_reserved:02x?}"
    );
    assert!(
        pub_ids.contains(&9),
        "no port message to a DHT peer: {pub_ids:?}"
    );
    assert!(
        !priv_ids.contains(&9),
        "a port message on the private torrent: {priv_ids:?}"
    );
    println!(
        "private torrent: 0 of {total} DHT queries named it (public: {} get_peers, {} \
         announce_peer); port message on public only; {:.1} s",
        node.count("get_peers", public_ih),
        node.count("announce_peer", public_ih),
        t0.elapsed().as_secs_f64()
    );
}

/// Deterministic generator for hostile input.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The `t` (transaction id) and `q` (method) of a KRPC query, found crudely.
fn krpc_field<'a>(msg: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(msg, key)? + key.len();
    let rest = &msg[at..];
    let colon = rest.iter().take(6).position(|&c| c == b':')?;
    let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
    rest.get(colon + 1..colon + 1 + len)
}

/// A DHT node that lies: every `find_node` answer lists itself under many ids plus
/// hundreds of made-up nodes at a silent loopback sink; every `get_peers` answer carries
/// about 1500 "peers" (most outside 127.0.0.0/8, port 0, broadcast, multicast, the decoy
/// listener hundreds of times over), sometimes malformed.
struct LyingNode {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    _thread: std::thread::JoinHandle<()>,
    _sink: UdpSocket,
}

impl LyingNode {
    fn start(decoy: SocketAddr) -> LyingNode {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sink_addr = sink.local_addr().unwrap();
        let addr = sock.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a2, s2) = (answered.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut rng = Rng(0x1e50_fd47);
            let my_id = [0x55u8; 20];
            let mut buf = vec![0u8; 65536];
            let compact = |a: SocketAddr| -> Vec<u8> {
                let SocketAddr::V4(v4) = a else {
                    unreachable!()
                };
                let mut b = v4.ip().octets().to_vec();
                b.extend_from_slice(&v4.port().to_be_bytes());
                b
            };
            while !s2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let msg = &buf[..n];
                let Some(t) = krpc_field(msg, b"1:t") else {
                    continue;
                };
                let q = krpc_field(msg, b"1:q").unwrap_or(b"");
                let mut r = b"d1:rd2:id20:".to_vec();
                r.extend_from_slice(&my_id);
                match q {
                    b"find_node" | b"get_peers" => {
                        // ourselves under many ids, and made-up nodes at the sink (the
                        // answers stay under the crate's 16 KiB datagram buffer)
                        let (count, ours) = if q == b"find_node" {
                            (500, 60)
                        } else {
                            (100, 20)
                        };
                        let mut nodes = Vec::new();
                        for i in 0..count {
                            nodes.extend_from_slice(&rng.bytes(20));
                            nodes.extend(compact(if i < ours { addr } else { sink_addr }));
                        }
                        bstr(&mut r, b"nodes");
                        bstr(&mut r, &nodes);
                    }
                    _ => {}
                }
                if q == b"get_peers" {
                    bstr(&mut r, b"token");
                    bstr(&mut r, b"tok3n!!!");
                    match rng.below(6) {
                        // not a list
                        0 => {
                            bstr(&mut r, b"values");
                            bstr(&mut r, b"garbage");
                        }
                        // entries of the wrong length
                        1 => {
                            bstr(&mut r, b"values");
                            r.push(b'l');
                            for _ in 0..300 {
                                let len = 1 + rng.below(30) as usize;
                                bstr(&mut r, &rng.bytes(len));
                            }
                            r.push(b'e');
                        }
                        _ => {
                            bstr(&mut r, b"values");
                            r.push(b'l');
                            for i in 0..1500u32 {
                                let peer: SocketAddr = match i % 10 {
                                    0..=2 => decoy,
                                    3 => SocketAddr::from(([127, 0, 0, 1], 0)),
                                    4 => SocketAddr::from(([10, 1, 2, 3], 6881)),
                                    5 => SocketAddr::from(([203, 0, 113, 7], 80)),
                                    6 => SocketAddr::from(([255, 255, 255, 255], 6881)),
                                    7 => SocketAddr::from(([224, 0, 0, 1], 6881)),
                                    8 => SocketAddr::from(([0, 0, 0, 0], 6881)),
                                    _ => {
                                        // anywhere outside the loopback range
                                        let b = rng.bytes(4);
                                        let first = if b[0] == 127 { 128 } else { b[0] };
                                        SocketAddr::from(([first, b[1], b[2], b[3]], 4000))
                                    }
                                };
                                bstr(&mut r, &compact(peer));
                            }
                            r.push(b'e');
                        }
                    }
                }
                r.extend_from_slice(b"e1:t");
                bstr(&mut r, t);
                r.extend_from_slice(b"1:y1:re");
                let _ = sock.send_to(&r, from);
                a2.fetch_add(1, Ordering::Relaxed);
            }
        });
        LyingNode {
            addr,
            answered,
            stop,
            _thread: thread,
            _sink: sink,
        }
    }
}

impl Drop for LyingNode {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `count` hostile datagrams: random bytes, truncated and oversized messages, deep
/// nesting, wrong types, absurd numbers, valid-looking queries with bad arguments.
fn hostile_datagrams(rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    let good: &[&[u8]] = &[
        b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe",
        b"d1:ad2:id20:abcdefghij01234567899:info_hash20:mnopqrstuvwxyz123456e1:q9:get_peers1:t2:aa1:y1:qe",
        b"d1:ad2:id20:abcdefghij01234567896:target20:mnopqrstuvwxyz123456e1:q9:find_node1:t2:aa1:y1:qe",
        b"d1:ad2:id20:abcdefghij012345678912:implied_porti1e9:info_hash20:mnopqrstuvwxyz1234564:porti6881e5:token8:aoeusnthe1:q13:announce_peer1:t2:aa1:y1:qe",
        b"d1:rd2:id20:0123456789abcdefghij5:nodes0:e1:t2:zz1:y1:re",
        b"d1:eli201e23:A Generic Error Ocurrede1:t2:aa1:y1:ee",
    ];
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let g = good[i % good.len()];
        let d: Vec<u8> = match rng.below(12) {
            0 => {
                let n = 1 + rng.below(1500) as usize;
                rng.bytes(n)
            }
            1 => g[..rng.below(g.len() as u64) as usize].to_vec(),
            2 => {
                let mut v = b"d1:t2:aa1:y1:q1:q4:ping1:ad2:id".to_vec();
                v.extend_from_slice(b"60000:");
                v.extend(std::iter::repeat_n(b'x', 60_000));
                v.extend_from_slice(b"ee");
                v
            }
            3 => {
                let depth = 1000 + rng.below(9000) as usize;
                let mut v = b"d1:ad2:id".to_vec();
                v.extend(std::iter::repeat_n(b'l', depth));
                v.extend(std::iter::repeat_n(b'e', depth));
                v.extend_from_slice(b"e1:q4:ping1:t2:aa1:y1:qe");
                v
            }
            4 => b"d1:ali1ei2ee1:qi7e1:tli1ee1:yd1:q1:qee".to_vec(),
            5 => b"d1:ad2:id99999999999999999999:xe1:q4:ping1:t2:aa1:y1:qe".to_vec(),
            6 => b"d1:ad2:id20:abcdefghij01234567899:info_hash5:short4:porti-99999999999999999999ee1:q13:announce_peer1:t2:aa1:y1:qe".to_vec(),
            7 => b"d1:ad2:id20:abcdefghij01234567894:wantl2:n42:n6i7ee6:target20:mnopqrstuvwxyz123456e1:q9:find_node1:t0:1:y1:qe".to_vec(),
            8 => {
                // a "response" to a transaction we never started, with a huge nodes field
                let mut v = b"d1:rd2:id20:0123456789abcdefghij5:nodes".to_vec();
                let nodes = rng.bytes(26 * 500);
                bstr(&mut v, &nodes);
                v.extend_from_slice(b"6:valuesl6:");
                v.extend(rng.bytes(6));
                v.extend_from_slice(b"ee1:t2:");
                v.extend(rng.bytes(2));
                v.extend_from_slice(b"1:y1:re");
                v
            }
            9 => {
                // a valid query with a random method name and random transaction id
                let mut v = b"d1:ad2:id20:abcdefghij0123456789e1:q".to_vec();
                let n = 1 + rng.below(40) as usize;
                let m = rng.bytes(n);
                bstr(&mut v, &m);
                v.extend_from_slice(b"1:t");
                let n = rng.below(300) as usize;
                let t = rng.bytes(n);
                bstr(&mut v, &t);
                v.extend_from_slice(b"1:y1:qe");
                v
            }
            10 => {
                let mut v = g.to_vec();
                let at = rng.below(v.len() as u64) as usize;
                v[at] = rng.next() as u8;
                v
            }
            _ => g.to_vec(),
        };
        out.push(d);
    }
    out
}

/// TCP connections of process `pid` to addresses outside 127.0.0.0/8 (from its socket
/// fds and `/proc/PID/net/tcp{,6}`), as text for the failure message.
fn non_loopback_tcp(pid: u32) -> Vec<String> {
    let mut inodes = HashSet::new();
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            if let Ok(l) = std::fs::read_link(fd.path()) {
                let l = l.to_string_lossy().into_owned();
                if let Some(i) = l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                    inodes.insert(i.to_string());
                }
            }
        }
    }
    let mut bad = Vec::new();
    for f in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{f}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 || !inodes.contains(cols[9]) {
                continue;
            }
            let remote = cols[2].split(':').next().unwrap_or("");
            let loopback = match remote.len() {
                // little-endian IPv4: 127 is the last byte
                8 => remote.ends_with("7F") || remote == "00000000",
                // ::1, ::ffff:127.x.y.z, or unconnected
                32 => {
                    remote == "00000000000000000000000001000000"
                        || remote == "00000000000000000000000000000000"
                        || (remote.starts_with("0000000000000000FFFF0000")
                            && remote.ends_with("7F"))
                }
                _ => true,
            };
            if !loopback {
                bad.push(line.trim().to_string());
            }
        }
    }
    bad
}

#[test]
fn hostile_nodes_and_datagrams_are_survived() {
    let t0 = Instant::now();
    // a decoy peer: the only loopback address the lying node hands out
    let decoy = TcpListener::bind("127.0.0.1:0").unwrap();
    decoy.set_nonblocking(true).unwrap();
    let decoy_addr = decoy.local_addr().unwrap();
    let liar = LyingNode::start(decoy_addr);

    // in-process: what a lookup yields from the liar is bounded, deduplicated, in scope
    let peers = rt().block_on(async {
        let dht = Dht::start(dht_opts(vec![liar.addr.to_string()], None))
            .await
            .unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        while dht.node_count() == 0 && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut rx = dht.get_peers(InfoHash([0x33; 20]));
        let mut got = Vec::new();
        while let Some(a) = rx.recv().await {
            got.push(a);
        }
        let nodes = dht.node_count();
        assert!(nodes <= 1024, "{nodes} nodes: the table must stay bounded");
        dht.shutdown().await.unwrap();
        got
    });
    let distinct: HashSet<SocketAddr> = peers.iter().copied().collect();
    assert_eq!(distinct.len(), peers.len(), "duplicates: {peers:?}");
    assert!(peers.len() <= MAX_PEERS_PER_LOOKUP);
    assert!(
        peers.iter().all(|a| a.ip().is_loopback() && a.port() != 0),
        "out-of-scope peers came out: {peers:?}"
    );
    assert_eq!(peers, [decoy_addr], "the decoy is the only usable peer");

    // the binary: the liar as its only DHT node, and a flood of hostile datagrams
    let dir = temp_dir();
    let data = payload::bytes(64 * 1024, 0xd1e);
    let (torrent, _) = trackerless(dir.path(), &data, "dht-hostile.bin");
    let out = dir.path().join("out");
    let liar_arg = liar.addr.to_string();
    let (mut rat, port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        Rat::spawn(
            &[
                "download",
                torrent.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "--port",
                &p,
                "--dht-bootstrap",
                &liar_arg,
            ],
            CONFIG_DHT_ON,
        )
    });
    let pid = rat.pid();
    let mut mem = MemSampler::start_with_limit(pid, Some(1 << 20));
    // uTP has the listen port's UDP side: the DHT node is on the next port; the flood goes
    // to both sockets
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, port + 1));
    let utp = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut rng = Rng(0xbad_d47);
    let blaster = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0usize;
    let mut dialled_out = Vec::new();
    for round in 0..20 {
        for d in hostile_datagrams(&mut rng, 1000) {
            if blaster.send_to(&d, target).is_ok() {
                sent += 1;
            }
            let _ = blaster.send_to(&d, utp);
        }
        if round % 4 == 0 {
            dialled_out.extend(non_loopback_tcp(pid));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // the lying node keeps answering lookups for a while
    let mut accepted = 0;
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end && accepted == 0 {
        while decoy.accept().is_ok() {
            accepted += 1;
        }
        dialled_out.extend(non_loopback_tcp(pid));
        std::thread::sleep(Duration::from_millis(200));
    }
    let alive = procmem::is_alive(pid);
    let answers_ping = krpc(
        target,
        b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:zz1:y1:qe",
    )
    .is_some_and(|r| find(&r, b"1:y1:r").is_some());
    let stats = mem.stop();
    rat.terminate();
    assert!(
        alive,
        "ratorrent died under hostile DHT input\n{}",
        rat_tail(&rat)
    );
    assert!(
        !rat.stderr().contains("panicked"),
        "a panic:\n{}",
        rat_tail(&rat)
    );
    assert!(answers_ping, "the DHT stopped answering after the flood");
    assert!(
        accepted > 0,
        "the decoy peer from the DHT was never dialled"
    );
    assert!(
        dialled_out.is_empty(),
        "connections outside 127.0.0.0/8: {dialled_out:?}"
    );
    assert!(
        stats.peak_anon_mib() < 128.0,
        "memory under hostile DHT input: {stats}"
    );
    println!(
        "hostile DHT: {sent} datagrams sent, {} lying answers, {} in-process peers (decoy \
         only), decoy dialled {accepted}x, no dial outside loopback; {stats}; {:.1} s",
        liar.answered.load(Ordering::Relaxed),
        peers.len(),
        t0.elapsed().as_secs_f64()
    );
}
