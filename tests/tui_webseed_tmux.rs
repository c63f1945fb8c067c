//! The TUI under tmux at 80×24 with a torrent whose only source is a web seed (BEP 19)
//! that lacks one of its files: the other files download from the server, the Peers tab
//! has the server's row, the Trackers tab its 404, General its trouble.

mod common;

use std::path::Path;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::tmux::TmuxPane;
use common::webseed::{Fault, WebSeedServer};
use common::{free_port, temp_dir};

#[test]
fn a_web_seed_missing_a_file_is_shown_in_the_peers_trackers_and_general_tabs_under_tmux() {
    let dir = temp_dir();
    let served = dir.path().join("srv");
    let layout = [
        // whole pieces: no piece of a.bin holds bytes of b.bin
        FileSpec::new("a.bin", 43 * 16 * 1024),
        FileSpec::new("b.bin", 300_000),
    ];
    payload::write_tree(&served.join("pack"), &layout, 11).unwrap();
    let server = WebSeedServer::start(&served);
    server.fault("b.bin", Fault::NotFound);
    let torrent = dir.path().join("pack.torrent");
    common::lt::make_web_seed_torrent(
        &served.join("pack"),
        &torrent,
        "",
        Some(16 * 1024),
        false,
        &[server.url()],
    );
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("listen_port = {port}\nconfirm_quit = false\n"),
    )
    .unwrap();
    let dst = dir.path().join("dst");
    let cmd = format!(
        "{} --no-dht --config {} -o {} {}",
        common::rat::bin(),
        config.display(),
        dst.display(),
        torrent.display()
    );
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let tmux = TmuxPane::start(
        "webseed",
        &cmd,
        &[
            ("LANG", Path::new("C.UTF-8")),
            ("XDG_STATE_HOME", &state),
            ("XDG_DATA_HOME", &data_home),
        ],
        80,
        24,
    );
    tmux.wait_row("pack", "Downloading", Duration::from_secs(20));
    // a.bin comes whole from the server; b.bin's pieces have no source
    common::wait_until(Duration::from_secs(30), || {
        std::fs::read(dst.join("pack/a.bin"))
            .is_ok_and(|d| d == std::fs::read(served.join("pack/a.bin")).unwrap())
    });
    common::compare_files(&served.join("pack/a.bin"), &dst.join("pack/a.bin")).unwrap();
    tmux.keys("Enter");
    let general = tmux.wait_for("Web seeds", Duration::from_secs(10));
    assert!(
        general.contains("web seed 1/1") || general.contains("web seed 0/1"),
        "{general}"
    );
    let general = tmux.wait_until("the 404 in General", Duration::from_secs(10), |s| {
        s.contains("HTTP 404")
    });
    assert!(general.contains("b.bin"), "{general}");
    tmux.keys("Tab");
    // (General says "web seed 1/1" too: wait for the Peers tab's row itself)
    let peers = tmux.wait_until("the web seed's row", Duration::from_secs(10), |s| {
        s.lines()
            .any(|l| l.contains("127.0.0.1:") && l.contains("web seed"))
    });
    assert!(peers.contains("Peers 1"), "{peers}");
    assert!(
        peers
            .lines()
            .any(|l| l.contains("127.0.0.1:") && l.contains("web seed")),
        "{peers}"
    );
    tmux.keys("Tab");
    tmux.keys("Tab");
    let trackers = tmux.wait_until("the web seed's block", Duration::from_secs(10), |s| {
        s.contains("missing files 1") && s.contains("HTTP 404 Not Found")
    });
    assert!(trackers.contains("no trackers"), "{trackers}");
    assert!(trackers.contains(&server.url()), "{trackers}");
    assert!(
        trackers.lines().all(|l| l.chars().count() <= 80),
        "{trackers}"
    );
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}
