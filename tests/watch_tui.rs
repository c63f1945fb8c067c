//! The real binary with `--watch` under tmux: a torrent there at start-up and one dropped
//! later are listed, a duplicate is reported in the log, every file is renamed, and a
//! broken .torrent and a broken .magnet are both in the session log (`e`).
//! HOME and the XDG folders point into a temp dir, so no user state is touched.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A private tmux server (own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cmd: &str, env: &[(&str, &Path)]) -> Tmux {
        let socket = format!("ratorrent-watch-test-{}", std::process::id());
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
        c.args(["-x", "120", "-y", "30"]);
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
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", keys])
            .status();
    }

    fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "t"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

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
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
    }
}

fn tiny_torrent(name: &str) -> Vec<u8> {
    let mut b = format!(
        "d4:infod6:lengthi5e4:name{}:{name}12:piece lengthi16384e6:pieces20:",
        name.len()
    )
    .into_bytes();
    b.extend_from_slice(&[0x33; 20]);
    b.extend_from_slice(b"ee");
    b
}

fn wait_for_file(p: &Path, timeout: Duration) {
    let start = Instant::now();
    while !p.exists() {
        assert!(start.elapsed() < timeout, "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tui_with_watch_adds_what_is_dropped_and_renames_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let state = tmp.path().join("state");
    let data = tmp.path().join("data");
    let config_home = tmp.path().join("config");
    for d in [&home, &state, &data, &config_home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let watch = tmp.path().join("watch");
    std::fs::create_dir(&watch).unwrap();
    std::fs::write(watch.join("first.torrent"), tiny_torrent("first-payload")).unwrap();

    let cmd = format!(
        "exec {} --no-dht --port 0 -o {} --watch {}",
        env!("CARGO_BIN_EXE_ratorrent"),
        tmp.path().join("dl").display(),
        watch.display()
    );
    let tmux = Tmux::start(
        &cmd,
        &[
            ("HOME", &home),
            ("XDG_STATE_HOME", &state),
            ("XDG_DATA_HOME", &data),
            ("XDG_CONFIG_HOME", &config_home),
        ],
    );
    let t = Duration::from_secs(20);
    let screen = tmux.wait_for("first-payload", t);
    assert!(screen.contains("torrents 1"), "{screen}");
    wait_for_file(&watch.join("first.torrent.added"), t);

    std::fs::write(watch.join("second.torrent"), tiny_torrent("second-payload")).unwrap();
    tmux.wait_for("second-payload", t);
    tmux.wait_for("torrents 2", t);
    wait_for_file(&watch.join("second.torrent.added"), t);

    std::fs::write(watch.join("again.torrent"), tiny_torrent("first-payload")).unwrap();
    std::fs::write(watch.join("broken.torrent"), b"garbage").unwrap();
    std::fs::write(watch.join("broken.magnet"), "magnet:?dn=no-info-hash").unwrap();
    wait_for_file(&watch.join("again.torrent.added"), t);
    wait_for_file(&watch.join("broken.torrent.invalid"), t);
    wait_for_file(&watch.join("broken.magnet.invalid"), t);
    std::thread::sleep(Duration::from_millis(700));
    let screen = tmux.capture();
    assert!(screen.contains("torrents 2"), "{screen}");

    // the session log (e) has both refusals: the .torrent refused by the engine and the
    // .magnet refused by the watch folder before it reached the engine
    tmux.keys("e");
    let screen = tmux.wait_for("broken.magnet: ", t);
    assert!(screen.contains("broken.torrent: "), "{screen}");
    assert!(screen.contains("has no \"xt=urn:btih:\""), "{screen}");
    tmux.keys("Escape");

    tmux.keys("q");
    let start = Instant::now();
    while tmux.alive() && start.elapsed() < Duration::from_secs(10) {
        // q asks for confirmation while torrents are active (downloading from nobody here)
        if tmux.capture().contains("Quit") {
            tmux.keys("y");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !tmux.alive(),
        "ratorrent quits on q (confirmed with y)\n{}",
        tmux.capture()
    );

    let log = std::fs::read_to_string(state.join("ratorrent").join("ratorrent.log")).unwrap();
    assert!(log.contains("watch folder: watching"), "{log}");
    assert!(
        log.contains("again.torrent: already added as #1"),
        "the duplicate is reported: {log}"
    );
    assert!(
        log.contains("broken.torrent: not added, renamed .invalid"),
        "{log}"
    );
}
