//! Issue 15 items 1 and 6 as a user meets them in a real terminal (tmux, capture-pane) at
//! 80×24 and 120×40, with a real libtorrent seeder on loopback and no tracker nor DHT: a
//! magnet link whose only way to the swarm is a peer the user gives. The peer added by
//! hand in the Peers tab (and a magnet link added again with a new `x.pe` peer) are kept in
//! the session state: after quit and restart the half-done download goes on and completes.
//! General lists the sources in effect and the peers given; neither it nor the Trackers
//! tab says "waiting for incoming peers" while the given peer sends.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::tmux::TmuxPane;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn start(tag: &str, cmd: &str, env: &[(&str, &Path)], width: u16, height: u16) -> TmuxPane {
    let mut all = vec![("LANG", Path::new("C.UTF-8"))];
    all.extend_from_slice(env);
    TmuxPane::start(tag, cmd, &all, width, height)
}

fn peer_given_by_hand_is_kept_across_a_restart(width: u16, height: u16) {
    common::require_libtorrent();
    // the seeder's torrent names a tracker the magnet link does not carry
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let files = [
        FileSpec::new("album/a.bin", 4 << 20),
        FileSpec::new("album/b.bin", 4 << 20),
        FileSpec::new("album/c.bin", 4 << 20),
    ];
    payload::write_tree(&src, &files, 15).unwrap();
    let torrent = dir.path().join("album.torrent");
    let ih = make_torrent(
        &src.join("album"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));
    let seeder_addr = seeder.addr().to_string();

    // 12 MiB at 512 KiB/s: still downloading when the user quits
    let port = free_port();
    let dst = dir.path().join("dst");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "listen_port = {port}\ndownload_dir = \"{}\"\ndownload_rate_limit = 524288\n[dht]\nenabled = false\n",
            dst.display()
        ),
    )
    .unwrap();
    let link = format!("magnet:?xt=urn:btih:{}&dn=album", ih.to_hex());
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env = [
        ("XDG_STATE_HOME", state.as_path()),
        ("XDG_DATA_HOME", data_home.as_path()),
        ("HOME", home.as_path()),
        ("XDG_CONFIG_HOME", home.as_path()),
    ];
    let bin = common::rat::bin();
    let cmd = format!("{bin} --config {} '{link}'", config.display());
    let tag = format!("src{width}");
    let tmux = start(&tag, &cmd, &env, width, height);
    tmux.wait_for("album", Duration::from_secs(20));

    // the Peers tab: add the seeder by hand
    tmux.keys("Enter");
    tmux.keys("Tab");
    tmux.wait_for("Peers", Duration::from_secs(5));
    tmux.keys("A");
    tmux.wait_for("Add peer", Duration::from_secs(5));
    tmux.type_text(&seeder_addr);
    tmux.keys("Enter");
    tmux.wait_for(&format!("peer {seeder_addr} added"), Duration::from_secs(5));
    tmux.keys("Escape");
    tmux.wait_row("album", "Downloading", Duration::from_secs(30));

    // the same magnet link again, with a new x.pe peer: merged, and said so
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.paste(&format!("{link}&x.pe=127.0.0.3:9"));
    tmux.keys("Enter");
    tmux.wait_for("added 1 peer from the link", Duration::from_secs(10));

    // General (the detail opens on the tab last shown, Peers): the sources in effect and
    // the peers given, no "waiting"
    tmux.keys("Enter");
    tmux.keys("BTab");
    let general = tmux.wait_for("Given peers", Duration::from_secs(10));
    assert!(general.contains("Sources"), "{general}");
    assert!(
        general.contains(&format!("{seeder_addr} (by hand)")),
        "{general}"
    );
    assert!(general.contains("127.0.0.3:9 (magnet"), "{general}");
    let sending = tmux.wait_until("manual 1/1", Duration::from_secs(10), |s| {
        s.contains("manual 1/1")
    });
    assert!(!sending.contains("waiting for incoming"), "{sending}");
    // the Trackers tab (General, Peers, Files, Trackers) names them too
    tmux.keys("Tab");
    tmux.keys("Tab");
    tmux.keys("Tab");
    let trackers = tmux.wait_for("no trackers: peers come from", Duration::from_secs(5));
    assert!(trackers.contains("magnet link's peers"), "{trackers}");
    assert!(!trackers.contains("waiting for incoming"), "{trackers}");

    // quit half-way; the next start goes on from the peers kept
    tmux.keys("Escape");
    let before = tmux.wait_row("album", "Downloading", Duration::from_secs(5));
    assert!(
        !before.contains("100%"),
        "finished too early to test a restart:\n{before}"
    );
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(15)), "quit");
    drop(tmux);

    let cmd = format!("{bin} --config {}", config.display());
    let tmux = start(&format!("{tag}b"), &cmd, &env, width, height);
    let done = tmux.wait_row("album", "Seeding", Duration::from_secs(90));
    assert!(done.contains("100%"), "{done}");
    for f in ["a.bin", "b.bin", "c.bin"] {
        common::compare_files(&src.join("album").join(f), &dst.join("album").join(f)).unwrap();
    }
    tmux.keys("Enter");
    let general = tmux.wait_for("Given peers", Duration::from_secs(10));
    assert!(
        general.contains(&format!("{seeder_addr} (by hand)")),
        "kept across the restart:\n{general}"
    );
    tmux.keys("Escape");
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(15)));
}

#[test]
fn tui_peer_given_by_hand_is_kept_across_a_restart_80x24() {
    peer_given_by_hand_is_kept_across_a_restart(80, 24);
}

#[test]
fn tui_peer_given_by_hand_is_kept_across_a_restart_120x40() {
    peer_given_by_hand_is_kept_across_a_restart(120, 40);
}
