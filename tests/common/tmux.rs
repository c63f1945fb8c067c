//! The real binary as a terminal program: a private tmux server per test (its own socket),
//! killed on drop, with `send-keys`, `capture-pane` and the pane's process id.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server running one pane.
pub struct TmuxPane {
    socket: String,
}

impl TmuxPane {
    /// Start `cmd` (run by the shell) in a detached `width`×`height` pane, with `env` set;
    /// `tag` makes the socket unique within the test process.
    ///
    /// # Panics
    /// When tmux is missing or cannot start.
    pub fn start(tag: &str, cmd: &str, env: &[(&str, &Path)], width: u16, height: u16) -> TmuxPane {
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
        for (k, v) in env {
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
        TmuxPane { socket }
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
