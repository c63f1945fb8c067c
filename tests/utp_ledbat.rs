//! LEDBAT on a really queued link. Three network namespaces of the test's own: the
//! senders' (ratorrent seeding, a TCP source), a router, and the receivers' (a libtorrent
//! leecher that can only use uTP, the TCP sink), joined by veth pairs; the router's link
//! towards the receivers is shaped by a `tbf` qdisc (20 Mbit/s, up to 400 ms of queue; the
//! kernel here has `tbf` and no `netem`). The queue sits in the router, as in a home
//! modem, not in the senders' own stack (where TCP's small-queue limit would starve TCP
//! whatever uTP does). Once ratorrent's uTP upload has the link, a TCP bulk flow (CUBIC,
//! the default of Linux and Windows) starts beside it: uTP must yield, the TCP flow keeps
//! most of the link while the uTP transfer goes on.
//!
//! Needs root (network namespaces, veth, the qdisc), as in CI. The addresses (10.201.x.x)
//! exist only inside these namespaces, which have no other link.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{LeechArgs, LtPeer, TestTracker, make_torrent, temp_dir};

/// The shaped link, bits/s.
const LINK_BPS: u64 = 20_000_000;
/// Seconds the TCP flow runs before the measurement, and the measurement.
const SETTLE_S: u64 = 10;
const WINDOW_S: u64 = 15;
/// The senders' address (ratorrent, the TCP source) and the receivers' (the leecher, the
/// TCP sink).
const SENDER: Ipv4Addr = Ipv4Addr::new(10, 201, 1, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 201, 2, 1);
const RAT_PORT: u16 = 6881;

fn run(cmd: &str, args: &[&str]) {
    let o = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        o.status.success(),
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The three namespaces, deleted on drop.
struct Topology {
    names: [String; 3],
}

impl Topology {
    /// senders ↔ router ↔ receivers, the router's link to the receivers shaped.
    fn new() -> Topology {
        let id = std::process::id();
        let names = [
            format!("utpS{id}"),
            format!("utpR{id}"),
            format!("utpB{id}"),
        ];
        let t = Topology { names };
        let [s, r, b] = &t.names;
        for n in &t.names {
            run("ip", &["netns", "add", n]);
            run("ip", &["-n", n, "link", "set", "lo", "up"]);
        }
        run(
            "ip",
            &[
                "link", "add", "s0", "netns", s, "type", "veth", "peer", "name", "r0", "netns", r,
            ],
        );
        run(
            "ip",
            &[
                "link", "add", "r1", "netns", r, "type", "veth", "peer", "name", "b0", "netns", b,
            ],
        );
        for (ns, dev, addr) in [
            (s, "s0", "10.201.1.1/24"),
            (r, "r0", "10.201.1.2/24"),
            (r, "r1", "10.201.2.2/24"),
            (b, "b0", "10.201.2.1/24"),
        ] {
            run("ip", &["-n", ns, "addr", "add", addr, "dev", dev]);
            run("ip", &["-n", ns, "link", "set", dev, "up"]);
        }
        run(
            "ip",
            &["-n", s, "route", "add", "default", "via", "10.201.1.2"],
        );
        run(
            "ip",
            &["-n", b, "route", "add", "default", "via", "10.201.2.2"],
        );
        run(
            "ip",
            &["netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
        );
        let rate = format!("{LINK_BPS}bit");
        run(
            "tc",
            &[
                "-n", r, "qdisc", "add", "dev", "r1", "root", "tbf", "rate", &rate, "burst",
                "16kb", "latency", "400ms",
            ],
        );
        t
    }

    /// Run `f` on a thread inside namespace `i` (0 senders, 2 receivers); processes it
    /// starts live there too.
    fn within<T: Send + 'static>(&self, i: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = self.path(i);
        std::thread::spawn(move || {
            enter(&path);
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    }

    /// [`Topology::within`] for a value that must also be dropped inside namespace `i`.
    fn owned_within<T: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> DropWithin<T> {
        DropWithin {
            value: Some(self.within(i, f)),
            path: self.path(i),
        }
    }

    fn path(&self, i: usize) -> String {
        format!("/var/run/netns/{}", self.names[i])
    }

    fn qdisc_stats(&self) -> String {
        let o = Command::new("tc")
            .args(["-n", &self.names[1], "-s", "qdisc", "show", "dev", "r1"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

/// Move the calling thread into the network namespace at `path`.
fn enter(path: &str) {
    use std::os::fd::AsRawFd;
    let ns = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: setns(2) of this thread to an open namespace file
    let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// A value dropped on a thread inside the namespace it was made in: a [`TestTracker`]'s
/// drop wakes its listener by dialling it, which only reaches it from that namespace (from
/// the test's own, the drop would wait for ever and leave the namespaces behind).
struct DropWithin<T: Send + 'static> {
    value: Option<T>,
    path: String,
}

impl<T: Send + 'static> std::ops::Deref for DropWithin<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("present until dropped")
    }
}

impl<T: Send + 'static> Drop for DropWithin<T> {
    fn drop(&mut self) {
        if let Some(v) = self.value.take() {
            let path = self.path.clone();
            let _ = std::thread::spawn(move || {
                enter(&path);
                drop(v);
            })
            .join();
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// A TCP bulk flow from the senders to the receivers: a sink counting bytes (in the
/// receivers' namespace) and a source writing as fast as it can, until `stop`.
fn tcp_bulk(
    topo: &Topology,
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
) -> Vec<std::thread::JoinHandle<()>> {
    let l = topo.within(2, || TcpListener::bind((RECEIVER, 0)).unwrap());
    let addr: SocketAddr = l.local_addr().unwrap();
    let s2 = stop.clone();
    let sink = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        while !s2.load(Ordering::Relaxed) {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    received.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(_) => {}
            }
        }
    });
    let c = topo.within(0, move || TcpStream::connect(addr).unwrap());
    cubic(&c);
    let source = std::thread::spawn(move || {
        let mut c = c;
        c.set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let buf = vec![0x5au8; 64 * 1024];
        while !stop.load(Ordering::Relaxed) {
            let _ = c.write(&buf);
        }
    });
    vec![sink, source]
}

/// Make `s` a CUBIC flow: the TCP of most hosts on a home line (the default of Linux and
/// Windows), loss-based, filling the queue; this host defaults to BBR, which does not.
fn cubic(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let name = b"cubic";
    // SAFETY: setsockopt on an open socket with a valid buffer and its length
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    assert_eq!(
        r,
        0,
        "TCP_CONGESTION cubic: {}",
        std::io::Error::last_os_error()
    );
}

/// The leecher's payload bytes so far, from its last status line.
fn lt_down(leecher: &LtPeer) -> u64 {
    common::scenario::lt_total_down(&leecher.stderr()).unwrap_or(0)
}

#[test]
fn a_tcp_flow_keeps_most_of_a_queued_link_while_utp_seeds() {
    common::require_libtorrent();
    let topo = Topology::new();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("l.bin", 128 << 20)], 0x1edba7).unwrap();
    let torrent = dir.path().join("l.torrent");
    // the tracker lives with ratorrent (it tells when ratorrent seeds); the leecher dials
    // ratorrent itself
    let tracker = topo.owned_within(0, TestTracker::start);
    let ih = make_torrent(&src.join("l.bin"), &torrent, &tracker.url(), Some(1 << 20));
    let (t, o) = (
        torrent.to_str().unwrap().to_owned(),
        src.to_str().unwrap().to_owned(),
    );
    let rat = topo.within(0, move || {
        Rat::spawn(
            &[
                "download",
                &t,
                "-o",
                &o,
                "--port",
                &RAT_PORT.to_string(),
                "--seed",
            ],
            "[peer]\ntransports = [\"utp\"]\n",
        )
    });
    tracker
        .wait_for_announce(Duration::from_secs(60), |a| {
            a.info_hash == ih && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let mut la = LeechArgs::new(&torrent, &dir.path().join("dst"), RECEIVER, 6881);
    la.extra = vec!["--transport".into(), "utp".into()];
    la.connect = vec![SocketAddr::V4(SocketAddrV4::new(SENDER, RAT_PORT))];
    la.timeout_s = 600;
    let leecher = topo.within(2, move || LtPeer::leech(&la));
    // uTP alone: it should take the link (LEDBAT fills an idle line)
    std::thread::sleep(Duration::from_secs(6));
    let d0 = lt_down(&leecher);
    std::thread::sleep(Duration::from_secs(6));
    let d1 = lt_down(&leecher);
    let utp_alone = d1.saturating_sub(d0) as f64 / 6.0;
    // TCP beside it
    let stop = Arc::new(AtomicBool::new(false));
    let got = Arc::new(AtomicU64::new(0));
    let threads = tcp_bulk(&topo, stop.clone(), got.clone());
    // TCP grows its window and the queue; LEDBAT gives way once the queuing delay passes
    // its target
    std::thread::sleep(Duration::from_secs(SETTLE_S));
    let (g0, u0, t0) = (
        got.load(Ordering::Relaxed),
        lt_down(&leecher),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs(WINDOW_S));
    let (g1, u1, dt) = (
        got.load(Ordering::Relaxed),
        lt_down(&leecher),
        t0.elapsed().as_secs_f64(),
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let link = LINK_BPS as f64 / 8.0;
    let tcp_rate = (g1 - g0) as f64 / dt;
    let utp_beside = u1.saturating_sub(u0) as f64 / dt;
    let (share, alone, beside) = (tcp_rate / link, utp_alone / link, utp_beside / link);
    eprintln!(
        "link {:.2} MB/s; uTP alone {:.2} MB/s ({:.0}%); with TCP: TCP {:.2} MB/s ({:.0}% of \
         the link), uTP {:.3} MB/s ({:.0}%)\n{}",
        link / 1e6,
        utp_alone / 1e6,
        alone * 100.0,
        tcp_rate / 1e6,
        share * 100.0,
        utp_beside / 1e6,
        beside * 100.0,
        topo.qdisc_stats()
    );
    if std::env::var_os("UTP_DEBUG").is_some() {
        eprintln!("{}", rat.stderr());
    }
    drop((rat, leecher));
    assert!(
        alone > 0.5,
        "alone, uTP should use the link: {:.0}%",
        alone * 100.0
    );
    assert!(
        share > 0.7,
        "TCP should keep most of the link beside uTP: {:.0}%",
        share * 100.0
    );
    assert!(beside < 0.25, "uTP should yield: {:.0}%", beside * 100.0);
}
