//! Building blocks of the seeding scenarios (`seed_large`, `hostile_peers`, `idle_wakeups`):
//! a ratorrent seeder started and confirmed, leechers awaited with stall detection, a clean
//! stop checked, tmpfs scratch folders, and one-test-at-a-time serialisation for tests that
//! measure a process (memory, CPU) or move hundreds of MiB on two cores.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ratorrent::metainfo::InfoHash;

use super::HarnessError;
use super::lt::LtPeer;
use super::procmem;
use super::rat::Rat;
use super::tracker::TestTracker;

/// One heavy test at a time within a test binary (cargo runs a binary's tests in parallel).
/// A test that panicked while holding it does not poison the others.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scratch folder on tmpfs (`/dev/shm/ratorrent-it-*`) when `/dev/shm` exists, else in the
/// system temp dir; removed on drop.
///
/// # Panics
/// When no folder can be created.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let mut b = tempfile::Builder::new();
    b.prefix("ratorrent-it-");
    if shm.is_dir()
        && let Ok(d) = b.tempdir_in(shm)
    {
        return d;
    }
    b.tempdir().expect("create temp dir")
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let from = lines.len().saturating_sub(n);
    lines.get(from..).unwrap_or_default().join("\n")
}

/// The tail of a ratorrent's stdout (20 lines) and stderr (80 lines), labelled.
pub fn rat_tail(rat: &Rat) -> String {
    format!(
        "--- ratorrent stdout (last 20 lines) ---\n{}\n--- ratorrent stderr (last 80 lines) ---\n{}",
        tail(&rat.stdout(), 20),
        tail(&rat.stderr(), 80)
    )
}

/// A TCP port that was free on every local address a moment ago (bound on `0.0.0.0:0`, then
/// released). ratorrent listens on `0.0.0.0:PORT`, which also collides with a socket bound
/// to one 127.x.y.z address only (say an outgoing connection's source port), a case the
/// `127.0.0.1:0` probe of [`super::free_port`] does not see.
///
/// # Panics
/// When no socket can be bound.
pub fn free_port_any() -> u16 {
    std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind 0.0.0.0:0: {e}"))
}

/// Start a ratorrent with `spawn(port)` on a [`free_port_any`] port; if it exits at once
/// because the port was taken in the meantime ("Address already in use"), try another one
/// (5 attempts).
pub fn spawn_rat_on_free_port(spawn: impl Fn(u16) -> Rat) -> (Rat, u16) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = free_port_any();
        let mut rat = spawn(port);
        // the listener is bound right after the config is read; a lost race ends the process
        let end = Instant::now() + Duration::from_millis(500);
        while procmem::is_alive(rat.pid()) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        if attempt < 5
            && !procmem::is_alive(rat.pid())
            && rat.stderr().contains("Address already in use")
        {
            let _ = rat.wait(Duration::from_secs(1));
            continue;
        }
        return (rat, port);
    }
}

/// `ratorrent download TORRENT -o DATA_DIR --seed --port P` with `config` TOML, on complete
/// data; returns once the tracker has its `left=0` announce (it verified the data).
///
/// # Panics
/// When that announce does not come within 90 s (the message holds ratorrent's output).
pub fn start_rat_seeder(
    tracker: &TestTracker,
    torrent: &Path,
    data_dir: &Path,
    ih: InfoHash,
    config: &str,
) -> (Rat, u16) {
    let (rat, port) = spawn_rat_on_free_port(|port| {
        let p = port.to_string();
        Rat::spawn(
            &[
                "download",
                torrent.to_str().expect("utf-8 path"),
                "-o",
                data_dir.to_str().expect("utf-8 path"),
                "--seed",
                "--port",
                &p,
            ],
            config,
        )
    });
    if let Err(e) = tracker.wait_for_announce(Duration::from_secs(90), |a| {
        a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
    }) {
        panic!(
            "the ratorrent seeder never announced left=0: {e}\n{}",
            rat_tail(&rat)
        );
    }
    (rat, port)
}

/// Where hostile peers and direct dials reach a ratorrent listening on `port`.
pub fn rat_addr(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
}

/// The last `total_down=N` a libtorrent peer logged in its status lines (every 2 s).
pub fn lt_total_down(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .rev()
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("total_down="))
        })
        .and_then(|v| v.parse().ok())
}

/// Where a libtorrent leecher is, as seen by [`poll_lt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeechState {
    /// Still downloading.
    Running,
    /// Printed `DONE` and exited 0.
    Done,
    /// Exited without success (or printed `DONE` and then failed); why.
    Failed(String),
}

/// Wait up to `wait` for a libtorrent leecher to finish; where it is then.
pub fn poll_lt(leecher: &mut LtPeer, wait: Duration) -> LeechState {
    match leecher.wait_done(wait) {
        Ok(()) => LeechState::Done,
        Err(e) if e.0.contains("printed DONE") || !leecher.is_running() => LeechState::Failed(e.0),
        Err(_) => LeechState::Running,
    }
}

/// "N of M payload bytes (P%); last status: state=... peers=..." for a libtorrent leecher.
pub fn lt_progress(leecher: &LtPeer, total: u64) -> String {
    let log = leecher.stderr();
    let got = lt_total_down(&log).unwrap_or(0);
    let status = log
        .lines()
        .rev()
        .find(|l| l.contains("total_down="))
        .and_then(|l| l.split_once("] "))
        .map_or("-", |(_, s)| s);
    format!(
        "{got} of {total} payload bytes ({:.1}%); its last status: {status}",
        got as f64 * 100.0 / total.max(1) as f64
    )
}

/// Wait for a libtorrent leecher's `DONE` (and exit 0) within `timeout`; with `stall`, give
/// up early when its downloaded total has not grown for that long. Returns the time taken.
///
/// # Errors
/// Timeout, stall, or the leecher failing; the message says how far it got, and holds the
/// tail of the leecher's log.
pub fn wait_lt_done(
    leecher: &mut LtPeer,
    total: u64,
    timeout: Duration,
    stall: Option<Duration>,
) -> Result<Duration, HarnessError> {
    let start = Instant::now();
    let mut last = (0u64, Instant::now());
    loop {
        let state = poll_lt(leecher, Duration::from_secs(1));
        let progress = format!(
            "{} after {:.1} s",
            lt_progress(leecher, total),
            start.elapsed().as_secs_f64()
        );
        let log = || tail(&leecher.stderr(), 30);
        match state {
            LeechState::Done => return Ok(start.elapsed()),
            LeechState::Failed(e) => {
                return Err(HarnessError(format!(
                    "the libtorrent leecher failed at {progress}: {e}"
                )));
            }
            LeechState::Running => {}
        }
        let got = lt_total_down(&leecher.stderr()).unwrap_or(0);
        if got != last.0 {
            last = (got, Instant::now());
        }
        if let Some(s) = stall
            && last.1.elapsed() >= s
        {
            return Err(HarnessError(format!(
                "the libtorrent leecher STALLED: no progress for {s:?}, at {progress}\n\
                 --- leecher log (last 30 lines) ---\n{}",
                log()
            )));
        }
        if start.elapsed() >= timeout {
            return Err(HarnessError(format!(
                "the libtorrent leecher did not complete within {timeout:?}: {progress}\n\
                 --- leecher log (last 30 lines) ---\n{}",
                log()
            )));
        }
    }
}

/// The last `[ 12.3%]` progress figure a `ratorrent download` printed.
pub fn rat_progress(stdout: &str) -> Option<f64> {
    stdout.lines().rev().find_map(|l| {
        let inner = l.trim_start().strip_prefix('[')?.split_once("%]")?.0;
        inner.trim().parse().ok()
    })
}

/// Wait for a `ratorrent download` (leecher) to exit 0 within `timeout`; with `stall`, give
/// up early when its progress figure has not moved for that long. Returns the time taken.
///
/// # Errors
/// Timeout, stall, or a non-zero exit; the message holds its output's tail.
pub fn wait_rat_done(
    rat: &mut Rat,
    timeout: Duration,
    stall: Option<Duration>,
) -> Result<Duration, HarnessError> {
    let start = Instant::now();
    let mut last = (None, Instant::now());
    while procmem::is_alive(rat.pid()) {
        let p = rat_progress(&rat.stdout());
        if p != last.0 {
            last = (p, Instant::now());
        }
        let at = format!(
            "at {}% after {:.1} s",
            p.map_or_else(|| "?".into(), |p| format!("{p:.1}")),
            start.elapsed().as_secs_f64()
        );
        if let Some(s) = stall
            && last.1.elapsed() >= s
        {
            return Err(HarnessError(format!(
                "the ratorrent leecher STALLED: no progress for {s:?}, {at}\n{}",
                rat_tail(rat)
            )));
        }
        if start.elapsed() >= timeout {
            return Err(HarnessError(format!(
                "the ratorrent leecher did not complete within {timeout:?}, {at}\n{}",
                rat_tail(rat)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = start.elapsed();
    let st = rat.wait(Duration::from_secs(5))?;
    if st.success() {
        Ok(took)
    } else {
        Err(HarnessError(format!(
            "the ratorrent leecher exited with {st} after {:.1} s\n{}",
            took.as_secs_f64(),
            rat_tail(rat)
        )))
    }
}

/// The seeder must still be running; SIGTERM must end it with status 0 (within 10 s).
///
/// # Errors
/// A message saying which of the two failed, with the output's tail.
pub fn stop_seeder(rat: &mut Rat) -> Result<(), HarnessError> {
    if !procmem::is_alive(rat.pid()) {
        let st = rat.wait(Duration::from_secs(1)).ok();
        return Err(HarnessError(format!(
            "the ratorrent seeder is no longer running (exit status {st:?})\n{}",
            rat_tail(rat)
        )));
    }
    match rat.terminate() {
        Some(st) if st.success() => Ok(()),
        st => Err(HarnessError(format!(
            "the ratorrent seeder did not exit 0 on SIGTERM: {st:?}\n{}",
            rat_tail(rat)
        ))),
    }
}
