//! Crash safety: the TUI is killed with SIGKILL at pseudo-random points of a download from a
//! real libtorrent seeder, 20 times, and started again with no arguments each time. After
//! every kill, the resume data in the state store never claims a piece whose bytes on disk
//! fail the hash (a piece is recorded only after its bytes were synced); in the end the
//! download completes byte-exact.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::tmux::TmuxPane;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir};
use ratorrent::metainfo::Metainfo;
use ratorrent::state::{StateStore, Stored};
use sha1::{Digest, Sha1};

/// Claimed pieces (in the store) and how many of them do not hash right on disk.
fn audit(state: &Path, meta: &Metainfo, data: &Path) -> (u32, u32) {
    let (store, loaded) = StateStore::open(state).expect("store opens after a kill");
    drop(store);
    let Some(rec) = loaded.torrents.iter().find_map(|s| match s {
        Stored::Record(ih, r) if *ih == meta.info_hash => Some(r.clone()),
        _ => None,
    }) else {
        return (0, 0);
    };
    let have = ratorrent::piece::Bitfield::from_payload(&rec.have, meta.piece_count()).unwrap();
    let geo = meta.geometry();
    let file = std::fs::read(data).unwrap_or_default();
    let mut bad = 0;
    for p in have.ones() {
        let start = geo.piece_offset(p) as usize;
        let end = start + geo.piece_size(p) as usize;
        let ok = file.len() >= end
            && Sha1::digest(&file[start..end]).as_slice() == meta.piece_hashes[p as usize];
        bad += u32::from(!ok);
    }
    (have.count(), bad)
}

#[test]
fn sigkill_at_random_points_never_records_an_unverified_piece_and_the_download_completes() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("big.bin", 48 << 20)], 77).unwrap();
    let torrent = dir.path().join("big.torrent");
    make_torrent(
        &src.join("big.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let meta = Metainfo::from_file(&torrent).unwrap();
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let mut seed = SeedArgs::new(&torrent, &src, ip, free_port_on(ip));
    seed.upload_limit = Some(4 << 20); // ~12 s for the whole payload: many kill points
    let _seeder = LtPeer::seed(&seed);

    let dst = dir.path().join("dst");
    let home = dir.path().join("home");
    let data_home = dir.path().join("data-home");
    let state_home = dir.path().join("state-home");
    let state = data_home.join("ratorrent");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let port = free_port();
    let env = [
        ("HOME", home.as_path()),
        ("XDG_DATA_HOME", data_home.as_path()),
        ("XDG_STATE_HOME", state_home.as_path()),
    ];
    let bin = common::rat::bin();
    let mut rng = 0x9e3779b9u32;
    let mut claimed = Vec::new();
    let mut false_claims = 0;
    let rounds = 20;
    for round in 0..rounds {
        let first = if round == 0 {
            torrent.display().to_string()
        } else {
            String::new()
        };
        let cmd = format!(
            "exec {bin} --no-dht --config {} -o {} --port {port} {first}",
            config.display(),
            dst.display()
        );
        let pane = TmuxPane::start(&format!("crash{round}"), &cmd, &env, 120, 30);
        // kill while it transfers (or, once complete, while it seeds): the time until the
        // torrent downloads again after a start varies with the machine's load
        pane.wait_until(
            "the torrent downloading or seeding",
            Duration::from_secs(30),
            |s| s.contains("big.bin") && (s.contains("Downloading") || s.contains("Seeding")),
        );
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        std::thread::sleep(Duration::from_millis(300 + u64::from(rng % 1500)));
        let pid = pane.pid().expect("ratorrent still running");
        // SAFETY: kill(2) on the pane's process
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        let t0 = Instant::now();
        while pane.pid().is_some() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(pane);
        let (n, bad) = audit(&state, &meta, &dst.join("big.bin"));
        claimed.push(n);
        false_claims += bad;
        assert_eq!(
            bad, 0,
            "round {round}: the state claims {bad} of {n} pieces whose bytes fail the hash"
        );
    }
    // the last start: it completes
    let cmd = format!(
        "exec {bin} --no-dht --config {} -o {} --port {port}",
        config.display(),
        dst.display()
    );
    let pane = TmuxPane::start("crash-final", &cmd, &env, 120, 30);
    pane.wait_for("Seeding", Duration::from_secs(120));
    pane.keys("q");
    common::compare_files(&src.join("big.bin"), &dst.join("big.bin")).unwrap();
    println!(
        "{rounds} SIGKILL rounds: pieces claimed after each kill {claimed:?} of {}; false claims {false_claims}",
        meta.piece_count()
    );
    assert!(
        claimed.iter().any(|&n| n > 0),
        "some progress was recorded across the kills: {claimed:?}"
    );
}

/// Bytes the process read through read(2)-like calls so far (`rchar` of /proc/PID/io).
fn read_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("rchar: ").map(|v| v.trim().parse().ok()))
                .flatten()
        })
        .unwrap_or(u64::MAX)
}

#[test]
fn after_a_clean_quit_a_complete_torrent_seeds_again_without_its_data_being_read() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("iso.bin", 64 << 20)], 5).unwrap();
    let torrent = dir.path().join("iso.torrent");
    make_torrent(
        &data.join("iso.bin"),
        &torrent,
        &tracker.url(),
        Some(1 << 20),
    );
    let home = dir.path().join("home");
    let data_home = dir.path().join("data-home");
    let state_home = dir.path().join("state-home");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let env = [
        ("HOME", home.as_path()),
        ("XDG_DATA_HOME", data_home.as_path()),
        ("XDG_STATE_HOME", state_home.as_path()),
    ];
    let bin = common::rat::bin();
    let port = free_port();
    let run = |extra: &str, tag: &str| {
        let cmd = format!(
            "exec {bin} --no-dht --config {} -o {} --port {port} {extra}",
            config.display(),
            data.display()
        );
        TmuxPane::start(tag, &cmd, &env, 120, 30)
    };
    // first run: the data is checked (read once), then seeded
    let pane = run(&torrent.display().to_string(), "restart1");
    pane.wait_for("Seeding", Duration::from_secs(60));
    let pid = pane.pid().unwrap();
    let first = read_bytes(pid);
    assert!(
        first >= 64 << 20,
        "the first run hashed the data: read {first} bytes"
    );
    pane.keys("q");
    let t0 = Instant::now();
    while pane.pid().is_some() {
        assert!(t0.elapsed() < Duration::from_secs(15), "q did not quit");
        pane.keys("y"); // confirm, if the TUI asks
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(pane);

    // second run, no arguments: listed and seeding again, without reading the payload
    let pane = run("", "restart2");
    let screen = pane.wait_for("Seeding", Duration::from_secs(20));
    assert!(screen.contains("iso.bin"), "{screen}");
    let pid = pane.pid().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let second = read_bytes(pid);
    assert!(
        second < 8 << 20,
        "the restart read {second} bytes: the 64 MiB payload must not be read\n{screen}"
    );
}
