//! Shared integration-test infrastructure (`mod common;` in a test crate).
//!
//! - [`client`]: waits on an in-process session's snapshots, with deadlines.
//! - [`daemon`]: `ratorrent daemon` as a test process, the folders it shares with a TUI.
//! - [`tracker`]: [`TestTracker`], an in-process HTTP tracker (BEP 3/23/48) on 127.0.0.1.
//! - [`webseed`]: [`webseed::WebSeedServer`], an HTTP file server with Range support and faults
//!   (a web seed, BEP 19).
//! - [`payload`]: deterministic payload files/trees and byte-for-byte comparison.
//! - [`lt`]: [`LtPeer`], real libtorrent seeders/leechers (`tests/support/lt_peer.py`).
//! - [`hostile`]: scripted hostile peers (non-readers, silent, half-open, takes-nothing).
//! - [`procmem`]: memory peaks, context switches and CPU ticks of a process from `/proc`.
//! - [`anchors`]: qBittorrent and Transmission seeders (`qbittorrent-nox`, `transmission-cli`).
//! - [`relay`]: a TCP relay that records the bytes on the wire.
//! - [`scenario`]: seeder start/stop, leecher waits with stall detection, tmpfs scratch.
//! - here: [`free_port`], [`temp_dir`], [`wait_until`], [`HarnessError`].
//!
//! Everything stays on 127.0.0.0/8. Test crates use only part of this, hence the allow.
#![allow(dead_code, unused_imports)]

pub mod anchors;
pub mod client;
pub mod daemon;
pub mod hostile;
pub mod lt;
pub mod mounts;
pub mod payload;
pub mod procmem;
pub mod qbt;
pub mod rat;
pub mod relay;
pub mod scenario;
pub mod tmux;
pub mod tracker;
pub mod webseed;

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

pub use lt::{Encryption, LeechArgs, LtPeer, SeedArgs, make_torrent, require_libtorrent};
pub use payload::{FileSpec, assert_trees_equal, compare_files, compare_trees};
pub use tracker::{Announce, Event, TestTracker};

/// A harness failure with a multi-line, human-readable message. `Debug` prints the message
/// verbatim, so `.unwrap()` on a `Result<_, HarnessError>` shows it unescaped.
pub struct HarnessError(pub String);

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HarnessError {}

/// A TCP port that was free on 127.0.0.1 a moment ago (bound to port 0, then released).
///
/// # Panics
/// When no socket can be bound.
pub fn free_port() -> u16 {
    free_port_on(Ipv4Addr::LOCALHOST)
}

/// A TCP port that was free on `ip` (any 127.0.0.x) a moment ago.
///
/// # Panics
/// When no socket can be bound on `ip`.
pub fn free_port_on(ip: Ipv4Addr) -> u16 {
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind {ip}:0: {e}"))
}

/// A fresh temporary folder (`ratorrent-it-*` in the system temp dir), removed on drop.
///
/// # Panics
/// When the folder cannot be created.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ratorrent-it-")
        .tempdir()
        .expect("create temp dir")
}

/// Poll `cond` every 20 ms until it returns true (→ `true`) or `timeout` passes (→ `false`).
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
