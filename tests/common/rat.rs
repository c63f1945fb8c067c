//! Running the ratorrent binary itself as a test peer (`ratorrent download ...`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::HarnessError;

/// A `ratorrent` process with captured output; killed on drop.
pub struct Rat {
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
    _dir: tempfile::TempDir,
}

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ratorrent")
}

/// `ratorrent ARGS...` as a [`Command`] whose config, data (state store) and state (logs)
/// directories are `dir`, so a one-shot run (`info`, `check`) never reads the user's config
/// nor writes under the user's home.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("XDG_CONFIG_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir);
    c
}

impl Rat {
    /// Start `ratorrent ARGS...` with an empty config file (hermetic: the user's config is
    /// never read) plus `extra_config` TOML appended; config, data (state store) and state
    /// (logs) directories are a temporary one of its own. The DHT is off unless
    /// `extra_config` has a `[dht]` table (tests never reach public DHT nodes).
    pub fn spawn(args: &[&str], extra_config: &str) -> Rat {
        let log = std::env::var("RATORRENT_TEST_LOG").unwrap_or_else(|_| "info".into());
        Rat::spawn_logging(args, extra_config, &log)
    }

    /// [`Rat::spawn`] with `RUST_LOG` set to `rust_log` (e.g. to read debug lines).
    pub fn spawn_logging(args: &[&str], extra_config: &str, rust_log: &str) -> Rat {
        let dir = tempfile::Builder::new()
            .prefix("ratorrent-proc-")
            .tempdir()
            .expect("tempdir");
        let config = dir.path().join("config.toml");
        let text = if extra_config.contains("[dht]") {
            extra_config.to_string()
        } else {
            // a table last, so it cannot capture the caller's top-level keys
            format!("{extra_config}\n[dht]\nenabled = false\n")
        };
        std::fs::write(&config, text).expect("write config");
        let out = dir.path().join("stdout");
        let err = dir.path().join("stderr");
        let child = Command::new(bin())
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("RUST_LOG", rust_log)
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("spawn ratorrent");
        Rat {
            child: Some(child),
            out,
            err,
            _dir: dir,
        }
    }

    /// `ratorrent download TORRENT -o DIR --port PORT [extra...]`.
    pub fn download(torrent: &Path, out_dir: &Path, port: u16, extra: &[&str]) -> Rat {
        let t = torrent.to_str().expect("utf-8 path");
        let o = out_dir.to_str().expect("utf-8 path");
        let p = port.to_string();
        let mut args = vec!["download", t, "-o", o, "--port", &p];
        args.extend_from_slice(extra);
        Rat::spawn(&args, "")
    }

    /// Everything printed on stdout so far.
    pub fn stdout(&self) -> String {
        read_all(&self.out)
    }

    /// Everything printed on stderr so far.
    pub fn stderr(&self) -> String {
        read_all(&self.err)
    }

    /// Both streams, labelled, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "--- ratorrent stdout ---\n{}\n--- ratorrent stderr ---\n{}",
            self.stdout(),
            self.stderr()
        )
    }

    /// The exit status if the process has exited, `None` while it runs.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Wait for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus, HarnessError> {
        let start = Instant::now();
        let child = self.child.as_mut().expect("running");
        loop {
            if let Some(st) = child.try_wait().map_err(|e| HarnessError(e.to_string()))? {
                return Ok(st);
            }
            if start.elapsed() > timeout {
                return Err(HarnessError(format!(
                    "ratorrent did not exit within {timeout:?}\n{}",
                    self.output()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until stdout contains `needle`.
    pub fn wait_stdout(&self, needle: &str, timeout: Duration) -> Result<(), HarnessError> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.stdout().contains(needle) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(HarnessError(format!(
            "no {needle:?} on stdout within {timeout:?}\n{}",
            self.output()
        )))
    }

    /// Send SIGTERM, wait up to 10 s, then SIGKILL.
    pub fn terminate(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        // SAFETY: plain kill(2) on our own child's pid
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(st)) = child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        child.wait().ok()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Rat {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

fn read_all(p: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(p) {
        let _ = f.read_to_string(&mut s);
    }
    s
}
