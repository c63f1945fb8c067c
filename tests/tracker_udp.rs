//! UDP trackers (BEP 15) against a real one: Debian's `opentracker` on loopback, in its
//! packaged whitelist mode. ratorrent finds a libtorrent seeder through it and downloads;
//! the client alone announces, scrapes and hears "not registered" for a hash outside the
//! whitelist.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{LtPeer, SeedArgs, free_port, free_port_on, make_torrent, temp_dir};
use ratorrent::metainfo::InfoHash;
use ratorrent::peer::PeerId;
use ratorrent::tracker::udp::UdpTracker;
use ratorrent::tracker::{AnnounceEvent, AnnounceRequest, TrackerError};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// An `opentracker` process (UDP and TCP on one loopback port), killed on drop.
struct OpenTracker {
    child: Child,
    port: u16,
}

impl OpenTracker {
    /// Start opentracker allowing exactly `allowed` (its whitelist, one hex hash a line),
    /// chrooted into `dir`.
    fn start(dir: &Path, allowed: &[InfoHash]) -> OpenTracker {
        let bin = "/usr/bin/opentracker";
        assert!(
            Path::new(bin).exists(),
            "opentracker is not installed: apt-get install -y opentracker"
        );
        let list: String = allowed
            .iter()
            .map(|h| format!("{}\n", h.to_hex()))
            .collect();
        std::fs::write(dir.join("whitelist.txt"), list).unwrap();
        // paths in the config are read after the chroot into `dir`
        std::fs::write(dir.join("ot.conf"), "access.whitelist /whitelist.txt\n").unwrap();
        // a port free for both TCP and UDP
        let port = loop {
            let p = free_port();
            if UdpSocket::bind(("127.0.0.1", p)).is_ok() {
                break p;
            }
        };
        let child = Command::new(bin)
            .args([
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-P",
                &port.to_string(),
            ])
            .arg("-f")
            .arg(dir.join("ot.conf"))
            .arg("-d")
            .arg(dir)
            .args(["-u", "nobody"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn opentracker");
        let t = OpenTracker { child, port };
        t.wait_listening();
        t
    }

    fn url(&self) -> String {
        format!("udp://127.0.0.1:{}/announce", self.port)
    }

    /// Until a BEP 15 connect is answered.
    fn wait_listening(&self) {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut req = Vec::new();
        req.extend_from_slice(&0x0417_2710_1980u64.to_be_bytes());
        req.extend_from_slice(&0u32.to_be_bytes());
        req.extend_from_slice(&7u32.to_be_bytes());
        for _ in 0..50 {
            s.send_to(&req, ("127.0.0.1", self.port)).unwrap();
            let mut buf = [0u8; 64];
            if let Ok(n) = s.recv(&mut buf)
                && n >= 16
            {
                return;
            }
        }
        panic!("opentracker did not answer a connect on port {}", self.port);
    }
}

impl Drop for OpenTracker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(
    info_hash: InfoHash,
    port: u16,
    left: u64,
    event: Option<AnnounceEvent>,
) -> AnnounceRequest {
    AnnounceRequest {
        info_hash,
        peer_id: PeerId(*b"-RT0000-udp-test-001"),
        port,
        uploaded: 0,
        downloaded: 0,
        left,
        event,
        numwant: Some(50),
        key: 0x1234_5678,
        tracker_id: None,
    }
}

#[test]
fn downloads_from_a_libtorrent_seeder_found_through_opentracker() {
    let dir = temp_dir();
    let src = dir.path().join("src");
    let dst = dir.path().join("dst");
    let layout = [
        FileSpec::new("a.bin", 3 * 1024 * 1024 + 777),
        FileSpec::new("sub/b.bin", 5 * 1024 * 1024),
    ];
    payload::write_tree(&src.join("payload"), &layout, 0x0dd).unwrap();
    // the hash is only known once the torrent exists: make it with a placeholder tracker
    // port, then write the real one (the URL is outside the info dictionary)
    let ot_dir = dir.path().join("ot");
    std::fs::create_dir(&ot_dir).unwrap();
    let torrent = dir.path().join("p.torrent");
    let probe = make_torrent(
        &src.join("payload"),
        &torrent,
        "udp://127.0.0.1:1/announce",
        Some(256 * 1024),
    );
    let tracker = OpenTracker::start(&ot_dir, &[probe]);
    let ih = make_torrent(
        &src.join("payload"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    assert_eq!(ih, probe, "the tracker URL is outside the info hash");

    let mut seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));
    // the seeder is registered with the tracker before we ask
    let client = UdpTracker::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let seeder_addr: SocketAddr = seeder.addr().into();
    let mut found = false;
    for _ in 0..60 {
        let r = rt
            .block_on(client.announce(&tracker.url(), &request(ih, 1, 1, None)))
            .unwrap();
        if r.peers.iter().any(|p| p.port() == seeder_addr.port()) {
            found = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        found,
        "libtorrent never announced to opentracker\n{}",
        seeder.stderr()
    );
    // take our probe peer out of the swarm again
    rt.block_on(client.announce(
        &tracker.url(),
        &request(ih, 1, 1, Some(AnnounceEvent::Stopped)),
    ))
    .unwrap();

    let mut rat = Rat::download(&torrent, &dst, free_port(), &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(
        status.success(),
        "ratorrent exited with {status}\n{}",
        rat.output()
    );
    common::compare_trees(&src.join("payload"), &dst.join("payload")).unwrap();
    seeder.stop();
}

#[test]
fn announce_scrape_and_an_unregistered_hash_against_opentracker() {
    let dir = temp_dir();
    let allowed = InfoHash([0xab; 20]);
    let tracker = OpenTracker::start(dir.path(), &[allowed]);
    let client = UdpTracker::new();
    let rt = tokio::runtime::Runtime::new().unwrap();

    // a leecher and a seeder join the swarm
    let r = rt
        .block_on(client.announce(
            &tracker.url(),
            &request(allowed, 6881, 1000, Some(AnnounceEvent::Started)),
        ))
        .unwrap();
    assert!(r.interval >= 60, "{r:?}");
    let mut seed = request(allowed, 6882, 0, Some(AnnounceEvent::Started));
    seed.peer_id = PeerId(*b"-RT0000-udp-test-002");
    let r = rt.block_on(client.announce(&tracker.url(), &seed)).unwrap();
    assert_eq!(r.complete, Some(1), "{r:?}");
    assert_eq!(r.incomplete, Some(1), "{r:?}");
    let ports: Vec<u16> = r.peers.iter().map(|p| p.port()).collect();
    assert!(ports.contains(&6881), "{r:?}");

    // scrape: both counted, and an unknown hash is all zeros (BEP 15 §scrape)
    let other = InfoHash([0x01; 20]);
    let s = rt
        .block_on(client.scrape(&tracker.url(), &[allowed, other]))
        .unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].0, allowed);
    assert_eq!(s[0].1.complete, Some(1));
    assert_eq!(s[0].1.incomplete, Some(1));

    // a hash outside the whitelist: a clear error, not a silent empty swarm
    let e = rt
        .block_on(client.announce(&tracker.url(), &request(other, 6881, 1, None)))
        .unwrap_err();
    assert!(
        matches!(&e, TrackerError::Failure(m) if m.contains("not registered")),
        "{e:?}"
    );

    // a tracker that is gone: retransmits, then gives up with a transport error
    let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "udp://127.0.0.1:{}/announce",
        gone.local_addr().unwrap().port()
    );
    let quick = UdpTracker::with_first_timeout(Duration::from_millis(50));
    let e = rt
        .block_on(quick.announce(&url, &request(allowed, 6881, 1, None)))
        .unwrap_err();
    assert!(matches!(e, TrackerError::Transport(_)), "{e:?}");
}
