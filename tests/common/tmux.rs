//! The real binary as a terminal program: a private tmux server per test (its own socket,
//! no tmux config), killed on drop, with `send-keys`, bracketed paste, `capture-pane` and
//! the pane's process id.
//!
//! Every pane runs with `XDG_CONFIG_HOME`, `XDG_DATA_HOME` and `XDG_STATE_HOME` in a
//! temporary directory of its own, so ratorrent never reads the user's config nor writes
//! state or logs under the user's home; a test that needs them elsewhere (to restart on the
//! same state, or to look at them) passes its own in `env`, which wins.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The per-user directories ratorrent reads or writes (config, state store, logs).
pub const PRIVATE_DIRS: [&str; 3] = ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"];

/// A private tmux server running one pane.
pub struct TmuxPane {
    /// The tmux socket name (`tmux -L`).
    pub socket: String,
    _dirs: tempfile::TempDir,
}

impl TmuxPane {
    /// Start `cmd` (run by the shell) in a detached `width`×`height` pane, with `env` set
    /// over the private [`PRIVATE_DIRS`]; `tag` makes the socket unique within the test
    /// process. The pane stays after the program exits (`remain-on-exit`), so its last
    /// screen can still be read; [`TmuxPane::alive`] tells whether the program runs.
    ///
    /// # Panics
    /// When tmux is missing or cannot start.
    pub fn start(tag: &str, cmd: &str, env: &[(&str, &Path)], width: u16, height: u16) -> TmuxPane {
        let dirs = tempfile::Builder::new()
            .prefix("ratorrent-tmux-")
            .tempdir()
            .expect("tempdir");
        let mut vars: BTreeMap<String, PathBuf> = PRIVATE_DIRS
            .iter()
            .map(|k| (k.to_string(), dirs.path().join(k.to_ascii_lowercase())))
            .collect();
        for (k, v) in env {
            vars.insert(k.to_string(), v.to_path_buf());
        }
        let socket = format!("ratorrent-{tag}-{}", std::process::id());
        let mut c = Command::new("tmux");
        c.args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
        ]);
        c.args(["-x", &width.to_string(), "-y", &height.to_string()]);
        for (k, v) in &vars {
            c.arg("-e").arg(format!("{k}={}", v.display()));
        }
        let st = c
            .arg(cmd)
            .status()
            .expect("tmux is installed (apt-get install -y tmux)");
        assert!(st.success(), "tmux new-session failed");
        let _ = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "set-option",
                "-t",
                "t",
                "remain-on-exit",
                "on",
            ])
            .status();
        TmuxPane {
            socket,
            _dirs: dirs,
        }
    }

    /// The pane's text now.
    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Type `keys` (tmux key names, e.g. `"q"`, `"Enter"`).
    pub fn keys(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", keys])
            .status();
    }

    /// Types `text` literally, one key at a time (no key names).
    ///
    /// # Panics
    /// When tmux fails.
    pub fn type_text(&self, text: &str) {
        let st = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .status()
            .expect("send-keys");
        assert!(st.success());
    }

    /// Pastes `text` as a terminal does: inside bracketed-paste markers when the program
    /// asked for them (`paste-buffer -p`), else as plain keys.
    ///
    /// # Panics
    /// When tmux fails.
    pub fn paste(&self, text: &str) {
        let set = Command::new("tmux")
            .args(["-L", &self.socket, "set-buffer", "-b", "test", "--", text])
            .status()
            .expect("set-buffer");
        let paste = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "paste-buffer",
                "-p",
                "-d",
                "-b",
                "test",
                "-t",
                "t",
            ])
            .status()
            .expect("paste-buffer");
        assert!(set.success() && paste.success());
    }

    /// Waits until `f` holds for the screen; returns it.
    ///
    /// # Panics
    /// After `timeout`, naming `what`, with the last screen.
    pub fn wait_until(&self, what: &str, timeout: Duration, f: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if f(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "screen never showed {what}; last screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until one line shows both `name` and `state` (a list row: the top bar also
    /// names the states, so a plain search would match it); returns the screen.
    ///
    /// # Panics
    /// After `timeout`, with the last screen.
    pub fn wait_row(&self, name: &str, state: &str, timeout: Duration) -> String {
        self.wait_until(&format!("{name} {state}"), timeout, |s| {
            s.lines().any(|l| l.contains(name) && l.contains(state))
        })
    }

    /// Whether the program in the pane still runs.
    pub fn alive(&self) -> bool {
        self.pid().is_some()
    }

    /// Waits up to `timeout` for the program to end; returns whether it did.
    pub fn wait_exit(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        while self.alive() && start.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(100));
        }
        !self.alive()
    }

    /// Wait until the screen contains `needle`; returns the screen.
    ///
    /// # Panics
    /// After `timeout`, with the last screen.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "screen never showed {needle:?}; last screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process id of the program in the pane (`None` once it exited).
    pub fn pid(&self) -> Option<u32> {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display-message",
                "-p",
                "-t",
                "t",
                "#{pane_dead} #{pane_pid}",
            ])
            .output()
            .ok()?;
        let s = String::from_utf8_lossy(&out.stdout);
        let mut it = s.split_whitespace();
        (it.next()? == "0").then_some(())?;
        it.next()?.parse().ok()
    }
}

impl Drop for TmuxPane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}
