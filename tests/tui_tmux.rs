//! The TUI as a real terminal program: ratorrent runs inside tmux (send-keys, capture-pane)
//! and downloads from a real libtorrent seeder through a tracker on loopback.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::{
    Event, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir,
};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A private tmux server (own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cmd: &str, env: &[(&str, &Path)]) -> Tmux {
        let socket = format!("ratorrent-test-{}", std::process::id());
        let mut c = Command::new("tmux");
        c.args([
            "-L",
            &socket,
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "110",
            "-y",
            "24",
        ]);
        for (k, v) in env {
            c.arg("-e").arg(format!("{k}={}", v.display()));
        }
        let st = c
            .arg(cmd)
            .status()
            .expect("tmux is installed (apt-get install -y tmux)");
        assert!(st.success(), "tmux new-session failed");
        Tmux { socket }
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        let st = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", keys])
            .status()
            .expect("send-keys");
        assert!(st.success());
    }

    /// Wait until the screen contains `needle`; returns the screen.
    fn wait_for(&self, needle: &str, timeout: Duration) -> String {
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

    fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "t"])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[test]
fn tui_downloads_pauses_resumes_and_quits_cleanly_under_tmux() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("movie.bin", 24 << 20)], 9).unwrap();
    let torrent = dir.path().join("movie.torrent");
    let ih = make_torrent(
        &src.join("movie.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let _seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));

    // a download limit keeps the transfer on screen long enough to look at it
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("listen_port = {port}\ndownload_rate_limit = 4194304\n"),
    )
    .unwrap();
    let dst = dir.path().join("dst");
    // a second, missing torrent must not keep the first from running
    let cmd = format!(
        "{} --no-dht --config {} -o {} {} /nonexistent.torrent",
        common::rat::bin(),
        config.display(),
        dst.display(),
        torrent.display()
    );
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let tmux = Tmux::start(
        &cmd,
        &[("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)],
    );

    let screen = tmux.wait_for("Downloading", Duration::from_secs(20));
    assert!(screen.contains("movie.bin"), "{screen}");
    assert!(screen.contains("24.0 MiB"), "size column: {screen}");
    assert!(
        screen.contains("cannot read \"/nonexistent.torrent\""),
        "the failed add is reported in the status bar: {screen}"
    );

    tmux.keys("p");
    let paused = tmux.wait_for("Paused", Duration::from_secs(5));
    // a key press clears the notice; the status bar shows the totals again
    assert!(
        paused.contains(&format!("port {port}")),
        "status bar: {paused}"
    );
    tracker
        .wait_for_announce(Duration::from_secs(5), |a| {
            a.info_hash == ih && a.addr.port() == port && a.event == Event::Stopped
        })
        .expect("pausing announces `stopped`");

    tmux.keys("?");
    let help = tmux.wait_for("Keys", Duration::from_secs(5));
    assert!(help.contains("Pause or resume"), "{help}");
    tmux.keys("Escape");
    std::thread::sleep(Duration::from_millis(300));

    tmux.keys("p");
    tmux.wait_for("Downloading", Duration::from_secs(5));
    let done = tmux.wait_for("Seeding", Duration::from_secs(60));
    assert!(done.contains("100%"), "{done}");
    common::compare_files(&src.join("movie.bin"), &dst.join("movie.bin")).unwrap();

    let before = tracker.announces_for(&ih).len();
    tmux.keys("q");
    let start = Instant::now();
    while tmux.alive() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!tmux.alive(), "ratorrent quits on q");
    let stops: Vec<_> = tracker.announces_for(&ih)[before..]
        .iter()
        .filter(|a| a.addr.port() == port && a.event == Event::Stopped)
        .cloned()
        .collect();
    assert_eq!(
        stops.len(),
        1,
        "quitting announces `stopped` once:\n{}",
        tracker.describe()
    );
    assert_eq!(stops[0].left, Some(0));
}
