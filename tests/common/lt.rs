//! Real libtorrent peers for integration tests: a wrapper around `tests/support/lt_peer.py`
//! run by Debian's `/usr/bin/python3` (`python3-libtorrent`).
//!
//! Every [`LtPeer`] is ended when dropped (SIGTERM, then SIGKILL after 5 s), also while a
//! test panics; the script itself exits when its parent process disappears, so a test
//! process that is killed leaves no peer behind.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ratorrent::metainfo::InfoHash;

use super::HarnessError;

/// The interpreter that can import `python3-libtorrent`.
pub const PYTHON: &str = "/usr/bin/python3";

/// Default wait for a seeder's `READY` line (hash check + first announce), seconds.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`LtPeer::stop`] waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Path of `tests/support/lt_peer.py`.
pub fn lt_peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/lt_peer.py")
}

/// Panic with an install hint unless `/usr/bin/python3 -c "import libtorrent"` works.
/// Checked once per test binary. Tests needing libtorrent must fail, never skip.
///
/// # Panics
/// When libtorrent cannot be imported.
pub fn require_libtorrent() {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    let res = CHECK.get_or_init(|| {
        match Command::new(PYTHON)
            .args(["-c", "import libtorrent"])
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
            Err(e) => Err(format!("cannot run {PYTHON}: {e}")),
        }
    });
    if let Err(e) = res {
        panic!(
            "python3-libtorrent is not installed: apt-get install -y python3-libtorrent \
             ({PYTHON} -c \"import libtorrent\" failed: {e})"
        );
    }
}

/// Write a v1-only .torrent of `data` (a file or a folder) announcing to `tracker`, via
/// libtorrent. `piece_length`: bytes, a power of two ≥ 16 KiB, `None` = libtorrent's choice.
/// Returns the info hash.
///
/// # Panics
/// When libtorrent is missing or the script fails (its stderr is in the message).
pub fn make_torrent(data: &Path, out: &Path, tracker: &str, piece_length: Option<u32>) -> InfoHash {
    make_torrent_as(data, out, tracker, piece_length, None, &[])
}

/// [`make_torrent`] with web seeds (`url-list`, BEP 19) and, with `hybrid`, as libtorrent
/// makes one by default (v1 + v2, files padded to piece boundaries with BEP 47 pad files);
/// an empty `tracker` makes a tracker-less torrent. Returns the v1 info hash.
///
/// # Panics
/// As [`make_torrent`].
#[allow(dead_code)]
pub fn make_web_seed_torrent(
    data: &Path,
    out: &Path,
    tracker: &str,
    piece_length: Option<u32>,
    hybrid: bool,
    web_seeds: &[String],
) -> InfoHash {
    make_torrent_as(
        data,
        out,
        tracker,
        piece_length,
        hybrid.then_some("--hybrid"),
        web_seeds,
    )
}

/// [`make_torrent`] as libtorrent makes one by default: hybrid (v1 + v2), each file padded
/// to a piece boundary with BEP 47 pad files. Returns the v1 info hash.
///
/// # Panics
/// As [`make_torrent`].
#[allow(dead_code)]
pub fn make_padded_torrent(
    data: &Path,
    out: &Path,
    tracker: &str,
    piece_length: Option<u32>,
) -> InfoHash {
    make_torrent_as(data, out, tracker, piece_length, Some("--hybrid"), &[])
}

/// [`make_torrent`] as a v2-only torrent (BEP 52, `lt.create_torrent.v2_only`). Returns its
/// info hash on the wire: the v2 hash cut to 20 bytes.
///
/// # Panics
/// As [`make_torrent`].
#[allow(dead_code)]
pub fn make_v2_torrent(
    data: &Path,
    out: &Path,
    tracker: &str,
    piece_length: Option<u32>,
) -> InfoHash {
    make_torrent_as(data, out, tracker, piece_length, Some("--v2"), &[])
}

fn make_torrent_as(
    data: &Path,
    out: &Path,
    tracker: &str,
    piece_length: Option<u32>,
    flag: Option<&str>,
    web_seeds: &[String],
) -> InfoHash {
    require_libtorrent();
    let mut cmd = Command::new(PYTHON);
    cmd.arg(lt_peer_script()).arg("make-torrent");
    if let Some(f) = flag {
        cmd.arg(f);
    }
    cmd.arg("--data").arg(data).arg("--out").arg(out);
    if !tracker.is_empty() {
        cmd.arg("--tracker").arg(tracker);
    }
    for w in web_seeds {
        cmd.arg("--web-seed").arg(w);
    }
    if let Some(p) = piece_length {
        cmd.arg("--piece-length").arg(p.to_string());
    }
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {PYTHON}: {e}"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let hex = stdout.trim();
    match InfoHash::from_hex(hex) {
        Some(h) if o.status.success() => h,
        _ => panic!(
            "lt_peer.py make-torrent failed ({}): stdout {hex:?}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
    }
}

/// Message encryption (MSE/PE) policy of an [`LtPeer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encryption {
    /// Dial in plaintext; accept plaintext or encrypted connections (default).
    #[default]
    Plain,
    /// Try MSE first when dialling, accept both.
    Prefer,
    /// MSE only, both ways.
    Forced,
}

impl Encryption {
    fn arg(self) -> &'static str {
        match self {
            Encryption::Plain => "plain",
            Encryption::Prefer => "prefer",
            Encryption::Forced => "forced",
        }
    }
}

/// Arguments of a libtorrent seeder ([`LtPeer::seed`]).
#[derive(Debug, Clone)]
pub struct SeedArgs {
    /// The .torrent file.
    pub torrent: PathBuf,
    /// Folder holding the torrent's file (single-file) or top folder (multi-file).
    pub data_dir: PathBuf,
    /// Loopback address to listen on, dial from and announce (`&ip=`).
    pub ip: Ipv4Addr,
    /// TCP port to listen on.
    pub port: u16,
    /// Upload rate limit, bytes/s (applies to loopback peers too); `None` = unlimited.
    pub upload_limit: Option<u64>,
    /// Skip the hash check of the data (libtorrent seed_mode).
    pub seed_mode: bool,
    /// Peers to dial directly (once a second while the torrent has no peer).
    pub connect: Vec<SocketAddr>,
    /// Encryption policy.
    pub encryption: Encryption,
    /// DHT node on UDP ip:port, torrent announced there (see [`LtPeer::dht_node`]).
    pub dht: bool,
    /// DHT nodes to join through (with `dht`).
    pub dht_bootstrap: Vec<SocketAddr>,
    /// More `lt_peer.py` flags, e.g. `--pex`, `--report-peers`.
    pub extra: Vec<String>,
}

impl SeedArgs {
    /// Seeder on `ip:port` for `torrent` with data in `data_dir`; other fields default
    /// (hash check on, unlimited, no direct dial, plaintext).
    pub fn new(torrent: &Path, data_dir: &Path, ip: Ipv4Addr, port: u16) -> SeedArgs {
        SeedArgs {
            torrent: torrent.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            ip,
            port,
            upload_limit: None,
            seed_mode: false,
            connect: Vec::new(),
            encryption: Encryption::Plain,
            dht: false,
            dht_bootstrap: Vec::new(),
            extra: Vec::new(),
        }
    }
}

/// Arguments of a libtorrent leecher ([`LtPeer::leech`]).
#[derive(Debug, Clone)]
pub struct LeechArgs {
    /// The .torrent file.
    pub torrent: PathBuf,
    /// Download this magnet link instead of `torrent` (BEP 9: metadata from peers).
    pub magnet: Option<String>,
    /// Folder to download into (the torrent's file / top folder goes inside).
    pub save_dir: PathBuf,
    /// Loopback address to listen on, dial from and announce (`&ip=`).
    pub ip: Ipv4Addr,
    /// TCP port to listen on.
    pub port: u16,
    /// The script's own give-up time (exit 1), seconds.
    pub timeout_s: u32,
    /// Download rate limit, bytes/s; `None` = unlimited.
    pub download_limit: Option<u64>,
    /// Peers to dial directly (once a second while the torrent has no peer).
    pub connect: Vec<SocketAddr>,
    /// After `DONE`, keep running as a seeder until stopped.
    pub keep_seeding: bool,
    /// Encryption policy.
    pub encryption: Encryption,
    /// DHT node on UDP ip:port, peers also looked up there.
    pub dht: bool,
    /// DHT nodes to join through (with `dht`).
    pub dht_bootstrap: Vec<SocketAddr>,
    /// More `lt_peer.py` flags, e.g. `--pex`, `--report-peers`.
    pub extra: Vec<String>,
}

impl LeechArgs {
    /// Leecher on `ip:port` downloading `torrent` into `save_dir`; 60 s timeout, other
    /// fields default (unlimited, no direct dial, exit after `DONE`, plaintext).
    pub fn new(torrent: &Path, save_dir: &Path, ip: Ipv4Addr, port: u16) -> LeechArgs {
        LeechArgs {
            torrent: torrent.to_path_buf(),
            magnet: None,
            save_dir: save_dir.to_path_buf(),
            ip,
            port,
            timeout_s: 60,
            download_limit: None,
            connect: Vec::new(),
            keep_seeding: false,
            encryption: Encryption::Plain,
            dht: false,
            dht_bootstrap: Vec::new(),
            extra: Vec::new(),
        }
    }
}

/// A running `lt_peer.py seed` or `leech` process. Ended on drop.
pub struct LtPeer {
    name: String,
    addr: SocketAddrV4,
    child: Child,
    /// stdout lines, in order; disconnected once the process closed stdout.
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    exit: Option<ExitStatus>,
    /// The info hash from the `READY` line, once seen.
    info_hash: Option<InfoHash>,
    /// A leecher started with `keep_seeding`: it does not exit after `DONE`.
    keep_seeding: bool,
}

impl LtPeer {
    /// Start a seeder and wait (up to [`READY_TIMEOUT`]) for its `READY` line: the data is
    /// verified (or seed_mode) and the tracker answered an announce made while seeding.
    ///
    /// # Panics
    /// When libtorrent is missing, the process cannot start, or `READY` does not come
    /// (the message holds the script's stderr).
    pub fn seed(args: &SeedArgs) -> LtPeer {
        let mut peer = LtPeer::spawn_seed(args);
        if let Err(e) = peer.wait_ready(READY_TIMEOUT) {
            panic!("{e}");
        }
        peer
    }

    /// Start a seeder without waiting for `READY` (see [`LtPeer::wait_ready`]).
    ///
    /// # Panics
    /// When libtorrent is missing or the process cannot start.
    pub fn spawn_seed(args: &SeedArgs) -> LtPeer {
        let mut a: Vec<String> = vec![
            "seed".into(),
            "--torrent".into(),
            args.torrent.display().to_string(),
            "--data-dir".into(),
            args.data_dir.display().to_string(),
        ];
        if let Some(l) = args.upload_limit {
            a.extend(["--upload-limit".into(), l.to_string()]);
        }
        if args.seed_mode {
            a.push("--seed-mode".into());
        }
        dht_args(&mut a, args.dht, &args.dht_bootstrap);
        a.extend(args.extra.iter().cloned());
        Self::spawn(
            "seeder",
            a,
            args.ip,
            args.port,
            &args.connect,
            args.encryption,
        )
    }

    /// Start a leecher (returns at once; see [`LtPeer::wait_done`]).
    ///
    /// # Panics
    /// When libtorrent is missing or the process cannot start.
    pub fn leech(args: &LeechArgs) -> LtPeer {
        let mut a: Vec<String> = vec!["leech".into()];
        match &args.magnet {
            Some(m) => a.extend(["--magnet".into(), m.clone()]),
            None => a.extend(["--torrent".into(), args.torrent.display().to_string()]),
        }
        a.extend([
            "--save-dir".into(),
            args.save_dir.display().to_string(),
            "--timeout".into(),
            args.timeout_s.to_string(),
        ]);
        if let Some(l) = args.download_limit {
            a.extend(["--download-limit".into(), l.to_string()]);
        }
        if args.keep_seeding {
            a.push("--keep-seeding".into());
        }
        dht_args(&mut a, args.dht, &args.dht_bootstrap);
        a.extend(args.extra.iter().cloned());
        let mut peer = Self::spawn(
            "leecher",
            a,
            args.ip,
            args.port,
            &args.connect,
            args.encryption,
        );
        peer.keep_seeding = args.keep_seeding;
        peer
    }

    /// Start a DHT-only libtorrent node on UDP `ip:port` that joins through `bootstrap`
    /// (as ordinary routing-table nodes), and wait for its `READY` (listening). It then
    /// prints `NODES <n>` every second (see [`LtPeer::wait_nodes`]).
    ///
    /// # Panics
    /// When libtorrent is missing, the process cannot start or does not get ready.
    pub fn dht_node(ip: Ipv4Addr, port: u16, bootstrap: &[SocketAddr]) -> LtPeer {
        let mut a: Vec<String> = vec!["dht-node".into()];
        dht_args(&mut a, false, bootstrap);
        let mut peer = Self::spawn("DHT node", a, ip, port, &[], Encryption::Plain);
        if let Err(e) = peer.wait_line("READY", READY_TIMEOUT) {
            panic!("{e}");
        }
        peer
    }

    /// Wait until a DHT node (seed/leech with `dht`, or [`LtPeer::dht_node`]) reports at
    /// least `min` routing-table nodes; returns the count seen.
    ///
    /// # Errors
    /// On timeout or exit (the message holds the last count and stderr).
    pub fn wait_nodes(&mut self, min: usize, timeout: Duration) -> Result<usize, HarnessError> {
        let end = Instant::now() + timeout;
        let mut last = 0;
        while Instant::now() < end {
            let line = self.wait_line("NODES", end.saturating_duration_since(Instant::now()))?;
            last = line.trim_start_matches("NODES").trim().parse().unwrap_or(0);
            if last >= min {
                return Ok(last);
            }
        }
        Err(self.failure(&format!(
            "{last} DHT nodes, wanted {min}, within {timeout:?}"
        )))
    }

    fn spawn(
        role: &str,
        mut args: Vec<String>,
        ip: Ipv4Addr,
        port: u16,
        connect: &[SocketAddr],
        enc: Encryption,
    ) -> LtPeer {
        require_libtorrent();
        args.extend([
            "--ip".into(),
            ip.to_string(),
            "--port".into(),
            port.to_string(),
            "--encryption".into(),
            enc.arg().into(),
        ]);
        for c in connect {
            args.extend(["--connect".into(), c.to_string()]);
        }
        let mut child = Command::new(PYTHON)
            .arg("-u")
            .arg(lt_peer_script())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {PYTHON} lt_peer.py: {e}"));
        let name = format!("libtorrent {role} {ip}:{port} (pid {})", child.id());

        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            let buf = Arc::clone(&stderr);
            let echo = std::env::var_os("RATORRENT_TEST_VERBOSE").is_some();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if echo {
                        eprintln!("{line}");
                    }
                    let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
                    b.push_str(&line);
                    b.push('\n');
                }
            });
        }
        LtPeer {
            name,
            addr: SocketAddrV4::new(ip, port),
            child,
            lines,
            stderr,
            exit: None,
            info_hash: None,
            keep_seeding: false,
        }
    }

    /// The process id of the python process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The address this peer listens on and announces.
    pub fn addr(&self) -> SocketAddrV4 {
        self.addr
    }

    /// The info hash a seeder printed with `READY` (`None` before that, and for leechers).
    pub fn info_hash(&self) -> Option<InfoHash> {
        self.info_hash
    }

    /// Everything the script wrote to stderr so far (alerts, status lines, errors).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Wait for the next stdout line starting with `prefix`; other lines are skipped.
    ///
    /// # Errors
    /// On timeout or when the process exits first; the message holds its stderr.
    pub fn wait_line(&mut self, prefix: &str, timeout: Duration) -> Result<String, HarnessError> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.failure(&format!("no {prefix:?} line within {timeout:?}")));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // stdout closed: the process is exiting; collect its status.
                    let status = self.wait_exit(Duration::from_secs(5));
                    return Err(self.failure(&format!(
                        "exited ({}) before printing {prefix:?}",
                        status.map_or("still running".into(), |s| s.to_string())
                    )));
                }
            }
        }
    }

    /// Wait for `READY <info hash>` (seeders) and return the info hash.
    ///
    /// # Errors
    /// See [`LtPeer::wait_line`]; also when the line carries no valid info hash.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<InfoHash, HarnessError> {
        let line = self.wait_line("READY", timeout)?;
        let hex = line.trim_start_matches("READY").trim();
        let h = InfoHash::from_hex(hex)
            .ok_or_else(|| self.failure(&format!("bad READY line {line:?}")))?;
        self.info_hash = Some(h);
        Ok(h)
    }

    /// Wait for a leecher's `DONE` line and (unless it keeps seeding) its exit with status 0.
    ///
    /// # Errors
    /// On timeout, a non-zero exit, or an exit before `DONE`; the message holds stderr.
    pub fn wait_done(&mut self, timeout: Duration) -> Result<(), HarnessError> {
        let start = Instant::now();
        self.wait_line("DONE", timeout)?;
        if self.keep_seeding {
            return Ok(());
        }
        let left = timeout
            .saturating_sub(start.elapsed())
            .max(Duration::from_secs(5));
        match self.wait_exit(left) {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(self.failure(&format!("printed DONE but exited with {s}"))),
            None => Err(self.failure("printed DONE but did not exit")),
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.exit.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait up to `timeout` for the process to exit; its status, or `None` if still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.exit {
                return Some(s);
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                self.exit = Some(s);
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// End the process: SIGTERM (a clean exit announces `stopped`), then SIGKILL after 5 s.
    /// Returns its exit status. Idempotent.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() && self.is_running() {
            if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: kill(2) on our own child's pid, which has not been reaped yet
                // (try_wait returned None), so the pid cannot have been reused.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            if self.wait_exit(STOP_GRACE).is_none() {
                let _ = self.child.kill();
            }
        }
        self.wait_exit(Duration::from_secs(5))
    }

    fn failure(&self, what: &str) -> HarnessError {
        HarnessError(format!(
            "{}: {what}\n--- stderr ---\n{}",
            self.name,
            tail(&self.stderr(), 80)
        ))
    }
}

impl Drop for LtPeer {
    fn drop(&mut self) {
        if self.stop().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `--dht` (when `on`) and one `--dht-bootstrap` per node.
fn dht_args(a: &mut Vec<String>, on: bool, bootstrap: &[SocketAddr]) {
    if on {
        a.push("--dht".into());
    }
    for b in bootstrap {
        a.extend(["--dht-bootstrap".into(), b.to_string()]);
    }
}

/// The last `n` lines of `s`.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let from = lines.len().saturating_sub(n);
    lines.get(from..).unwrap_or_default().join("\n")
}
