//! `ratorrent daemon` as a test process, its folders, and a TUI beside it.
//!
//! A [`Home`] is one user's folders in a temporary directory (config, data = the state
//! folder's parent, state = logs, runtime = the control socket's parent), handed to every
//! process of a test through `XDG_*` variables, so a daemon, a second daemon and a TUI under
//! tmux all meet on the same state folder. A [`Daemon`] is killed (SIGKILL) when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::HarnessError;

/// One user's folders.
pub struct Home {
    /// The temporary directory (removed on drop).
    pub dir: tempfile::TempDir,
    /// The config file (`--config`), empty unless written.
    pub config: PathBuf,
}

impl Home {
    /// Fresh folders; the config file holds `config` (the DHT is turned off in it).
    pub fn new(config: &str) -> Home {
        let dir = super::temp_dir();
        let home = Home {
            config: dir.path().join("config.toml"),
            dir,
        };
        home.write_config(config);
        home
    }

    /// Replace the config file's text (`[dht] enabled = false` appended).
    pub fn write_config(&self, config: &str) {
        std::fs::write(&self.config, format!("{config}\n[dht]\nenabled = false\n")).unwrap();
    }

    /// A folder of this home, created.
    pub fn path(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// The `XDG_*` variables (and `HOME`) every process of the test gets.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.path("home")),
            ("XDG_CONFIG_HOME", self.path("config-home")),
            ("XDG_DATA_HOME", self.path("data-home")),
            ("XDG_STATE_HOME", self.path("state-home")),
            ("XDG_RUNTIME_DIR", self.path("runtime")),
        ]
    }

    /// The state folder (`$XDG_DATA_HOME/ratorrent`).
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("data-home").join("ratorrent")
    }

    /// The log file (`$XDG_STATE_HOME/ratorrent/ratorrent.log`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("state-home/ratorrent/ratorrent.log"))
            .unwrap_or_default()
    }

    /// `ratorrent --config FILE ARGS...` with this home's variables.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(super::rat::bin());
        c.arg("--config").arg(&self.config).args(args);
        for (k, v) in self.env() {
            c.env(k, v);
        }
        c.env("RUST_LOG", "info");
        c
    }

    /// The control socket the daemon names in its owner file.
    pub fn socket(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string(self.state_dir().join("engine.lock")).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("socket="))
            .map(PathBuf::from)
    }
}

/// A running `ratorrent daemon`.
pub struct Daemon {
    child: Option<Child>,
    out: PathBuf,
}

impl Daemon {
    /// `ratorrent --config FILE [global...] daemon --port PORT [args...]`, output captured
    /// in `out`; returns once its control socket answers (or panics after 30 s).
    pub fn start(home: &Home, port: u16, global: &[&str], args: &[&str]) -> Daemon {
        let d = Daemon::spawn(home, port, global, args);
        d.wait_ready(home);
        d
    }

    /// [`Daemon::start`] without waiting.
    pub fn spawn(home: &Home, port: u16, global: &[&str], args: &[&str]) -> Daemon {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let out = home.dir.path().join(format!("daemon-{n}.out"));
        let p = port.to_string();
        let mut all: Vec<&str> = global.to_vec();
        all.extend(["daemon", "--port", &p]);
        all.extend_from_slice(args);
        let child = home
            .command(&all)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
            .spawn()
            .expect("spawn ratorrent daemon");
        Daemon {
            child: Some(child),
            out,
        }
    }

    fn wait_ready(&self, home: &Home) {
        let start = Instant::now();
        loop {
            if let Some(socket) = home.socket()
                && std::os::unix::net::UnixStream::connect(&socket).is_ok()
                && home
                    .log()
                    .contains(&format!("daemon started: pid {}", self.pid()))
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the daemon did not open its control socket within 30 s\n{}\nlog:\n{}",
                self.output(),
                home.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Send `signal` (libc's number).
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child
        unsafe {
            libc::kill(self.pid() as i32, signal);
        }
    }

    /// Wait for it to end.
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus, HarnessError> {
        let start = Instant::now();
        let child = self.child.as_mut().expect("running");
        loop {
            if let Some(st) = child.try_wait().map_err(|e| HarnessError(e.to_string()))? {
                return Ok(st);
            }
            if start.elapsed() > timeout {
                return Err(HarnessError(format!(
                    "the daemon did not end within {timeout:?}\n{}",
                    self.output()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its stdout and stderr.
    pub fn output(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!(
            "--- daemon stdout ---\n{}\n--- daemon stderr ---\n{}",
            read(&self.out),
            read(&self.out.with_extension("err"))
        )
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sockets that process `pid` listens on or has bound for datagrams (TCP in LISTEN, any
/// UDP), as `/proc/net` rows: a process that opens none has no engine.
pub fn listening_sockets(pid: u32) -> Vec<String> {
    let mut inodes = std::collections::HashSet::new();
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                let l = link.to_string_lossy();
                if let Some(n) = l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                    inodes.insert(n.to_owned());
                }
            }
        }
    }
    let mut found = Vec::new();
    for (table, listen_only) in [
        ("tcp", true),
        ("tcp6", true),
        ("udp", false),
        ("udp6", false),
    ] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && inodes.contains(f[9]) && (!listen_only || f[3] == "0A") {
                found.push(format!("{table} {}", f[1]));
            }
        }
    }
    found
}
