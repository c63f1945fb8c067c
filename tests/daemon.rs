//! `ratorrent daemon` and the TUI attached to it, through the real binary: downloads from a
//! real libtorrent seeder (resumed after `kill -9`), a TUI attached over the control socket
//! under tmux (no engine, no listening port), quitting it versus stopping the daemon, one
//! engine per state folder, the socket refusing another user and what is not its protocol,
//! SIGTERM, SIGINT and SIGHUP, the socket in the state folder without `XDG_RUNTIME_DIR`, the
//! user unit.

mod common;

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, Home, listening_sockets};
use common::payload::{self, FileSpec};
use common::tmux::TmuxPane;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent};
use ratorrent::api::{AddRequest, Snapshot, TorrentState};
use ratorrent::control::remote::{self, Remote};
use ratorrent::metainfo::Metainfo;
use ratorrent::state::{Owner, StateStore, Stored};

/// A runtime for the test's own client of the control socket.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Attach to the daemon of `home` over its socket (the library's client: the same code
/// the TUI runs).
fn attach(rt: &tokio::runtime::Runtime, home: &Home) -> Remote {
    let socket = home.socket().expect("the owner file names the socket");
    rt.block_on(remote::connect(&socket)).expect("attach")
}

/// Wait until a snapshot of `remote` satisfies `ready`.
fn wait_snap(
    rt: &tokio::runtime::Runtime,
    remote: &Remote,
    what: &str,
    timeout: Duration,
    ready: impl FnMut(&Snapshot) -> bool,
) -> Arc<Snapshot> {
    rt.block_on(async { tokio::time::timeout(timeout, remote.client.wait_for(ready)).await })
        .unwrap_or_else(|_| panic!("no snapshot with {what} within {timeout:?}"))
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
}

/// A 127.0.0.2 libtorrent seeder of one file of `size` bytes, its .torrent at
/// `home/name.torrent`, served at `rate` bytes/s.
fn seeder(
    home: &Home,
    tracker: &TestTracker,
    name: &str,
    size: u64,
    rate: u64,
) -> (LtPeer, Metainfo) {
    let src = home.path("src");
    payload::write_tree(&src, &[FileSpec::new(name, size)], 11).unwrap();
    let torrent = home.dir.path().join(format!("{name}.torrent"));
    make_torrent(&src.join(name), &torrent, &tracker.url(), Some(256 * 1024));
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let mut args = SeedArgs::new(&torrent, &src, ip, free_port_on(ip));
    args.upload_limit = Some(rate);
    (LtPeer::seed(&args), Metainfo::from_file(&torrent).unwrap())
}

#[test]
fn the_daemon_downloads_from_libtorrent_and_after_kill_9_resumes_and_completes_byte_exact() {
    let tracker = TestTracker::start();
    let home = Home::new("");
    let (_seeder, meta) = seeder(&home, &tracker, "big.bin", 32 << 20, 4 << 20);
    let watch = home.path("watch");
    let dst = home.path("dst");
    // the watch folder of the daemon adds it
    std::fs::copy(
        home.dir.path().join("big.bin.torrent"),
        watch.join("big.torrent"),
    )
    .unwrap();
    let port = free_port();
    let (w, o) = (watch.to_str().unwrap(), dst.to_str().unwrap());
    let mut d = Daemon::start(&home, port, &["--watch", w], &["-o", o]);
    let rt = runtime();
    let r = attach(&rt, &home);
    let size = meta.total_length;
    let snap = wait_snap(
        &rt,
        &r,
        "a quarter downloaded",
        Duration::from_secs(60),
        |s| {
            s.rows
                .iter()
                .any(|row| row.name == "big.bin" && row.done >= size / 4)
        },
    );
    let before = snap.rows[0].done;
    assert!(before < size, "killed mid-download");
    d.kill();
    drop(r);
    assert!(
        watch.join("big.torrent.added").exists(),
        "the watch folder renamed it"
    );
    // started again: the torrent comes back from the state, and goes on from where it was
    let mut d = Daemon::start(&home, port, &["--watch", w], &["-o", o]);
    let r = attach(&rt, &home);
    let resumed = wait_snap(
        &rt,
        &r,
        "the torrent back and running",
        Duration::from_secs(60),
        |s| {
            s.rows
                .iter()
                .any(|row| matches!(row.state, TorrentState::Downloading | TorrentState::Seeding))
        },
    );
    let row = &resumed.rows[0];
    assert!(
        row.done > 0,
        "resumed with {} of {size} bytes (had {before} when killed)",
        row.done
    );
    wait_snap(
        &rt,
        &r,
        "the download complete",
        Duration::from_secs(120),
        |s| {
            s.rows
                .iter()
                .any(|row| row.state == TorrentState::Seeding && row.done == size)
        },
    );
    common::compare_files(&home.path("src").join("big.bin"), &dst.join("big.bin")).unwrap();
    println!(
        "killed at {before} of {size} bytes; after the restart it went on from {} bytes",
        row.done
    );
    drop(r);
    d.signal(libc::SIGTERM);
    assert!(d.wait(Duration::from_secs(30)).unwrap().success());
}

#[test]
fn an_attached_tui_shows_the_download_q_leaves_the_daemon_running_and_shift_q_stops_it() {
    let tracker = TestTracker::start();
    let home = Home::new("");
    let (_seeder, meta) = seeder(&home, &tracker, "film.mkv", 12 << 20, 2 << 20);
    let dst = home.path("dst");
    let port = free_port();
    let mut d = Daemon::start(&home, port, &[], &["-o", dst.to_str().unwrap()]);
    assert!(
        listening_sockets(d.pid())
            .iter()
            .any(|s| s.starts_with("tcp")),
        "the daemon listens for peers: {:?}",
        listening_sockets(d.pid())
    );
    let env: Vec<(&str, std::path::PathBuf)> = home.env();
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let bin = common::rat::bin();
    let config = home.config.display();
    // plain `ratorrent` with a torrent, from the torrent's folder (a relative path), with
    // an engine flag the daemon owns
    let cmd = format!(
        "cd {} && exec {bin} --config {config} --no-dht film.mkv.torrent",
        home.dir.path().display()
    );
    let pane = TmuxPane::start("attached", &cmd, &env, 120, 30);
    pane.wait_for(
        &format!("attached to the daemon (pid {})", d.pid()),
        Duration::from_secs(20),
    );
    pane.wait_for("ignored: --no-dht", Duration::from_secs(5));
    let tui = pane.pid().expect("the TUI runs");
    assert_eq!(
        listening_sockets(tui),
        Vec::<String>::new(),
        "an attached TUI listens on nothing"
    );
    let screen = pane.wait_row("film.mkv", "Seeding", Duration::from_secs(120));
    assert!(screen.contains("100%"), "{screen}");
    common::compare_files(&home.path("src").join("film.mkv"), &dst.join("film.mkv")).unwrap();
    // q: the TUI ends, the daemon runs on
    pane.keys("q");
    assert!(pane.wait_exit(Duration::from_secs(10)), "q ends the TUI");
    std::thread::sleep(Duration::from_millis(500));
    assert!(d.alive(), "the daemon runs on\n{}", d.output());
    // `ratorrent attach`, then Q and yes: the daemon stops, state saved
    let cmd = format!("exec {bin} --config {config} attach");
    let pane = TmuxPane::start("attach2", &cmd, &env, 80, 24);
    pane.wait_row("film.mkv", "Seeding", Duration::from_secs(20));
    pane.keys("Q");
    pane.wait_for("Stop the daemon?", Duration::from_secs(5));
    pane.keys("y");
    assert!(
        pane.wait_exit(Duration::from_secs(30)),
        "the TUI ends with the daemon"
    );
    let status = d.wait(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status:?}\n{}", d.output());
    assert!(
        home.log().contains("a TUI asked the daemon to stop"),
        "{}",
        home.log()
    );
    let (store, loaded) = StateStore::open(&home.state_dir()).expect("the state opens");
    drop(store);
    let record = loaded
        .torrents
        .iter()
        .find_map(|s| match s {
            Stored::Record(ih, r) if *ih == meta.info_hash => Some(r.clone()),
            _ => None,
        })
        .expect("the torrent's record was saved");
    let have = ratorrent::piece::Bitfield::from_payload(&record.have, meta.piece_count()).unwrap();
    assert_eq!(have.count(), meta.piece_count(), "saved complete");
}

#[test]
fn one_engine_per_state_folder_a_second_is_refused_naming_the_first() {
    let home = Home::new("");
    let state = home.state_dir();
    // no daemon yet: attach says so
    let out = home.command(&["attach"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
    let env: Vec<(&str, std::path::PathBuf)> = home.env();
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let bin = common::rat::bin();
    let config = home.config.display();
    // (the shell stays: tmux would close a pane whose program ended at once)
    let pane = TmuxPane::start(
        "noattach",
        &format!("{bin} --config {config} attach; sleep 60"),
        &env,
        200,
        10,
    );
    pane.wait_for(
        &format!(
            "no ratorrent daemon is running with the state in {}",
            state.display()
        ),
        Duration::from_secs(10),
    );
    let mut first = Daemon::start(&home, free_port(), &[], &[]);
    let out = home
        .command(&["daemon", "--port", &free_port().to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "the ratorrent daemon (pid {}) is already running with the state in {}",
            first.pid(),
            state.display()
        )),
        "{err}"
    );
    assert!(first.alive());
    // SIGINT stops it as SIGTERM does
    first.signal(libc::SIGINT);
    assert!(first.wait(Duration::from_secs(30)).unwrap().success());
    assert!(home.log().contains("SIGINT: stopping"), "{}", home.log());
    // a TUI with its own engine holds the folder: a daemon names it
    let port = free_port();
    let pane = TmuxPane::start(
        "inproc",
        &format!("exec {bin} --config {config} --port {port}"),
        &env,
        100,
        24,
    );
    pane.wait_for("No torrents yet", Duration::from_secs(20));
    let tui = pane.pid().unwrap();
    let out = home
        .command(&["daemon", "--port", &free_port().to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "a ratorrent TUI (pid {tui}) is already running with the state in {}",
            state.display()
        )),
        "{err}"
    );
    assert!(
        listening_sockets(tui).iter().any(|s| s.starts_with("tcp")),
        "the in-process TUI runs its own engine as before"
    );
    pane.keys("q");
    assert!(pane.wait_exit(Duration::from_secs(10)));
    assert_eq!(Owner::running(&state), None, "released when the TUI ends");
}

/// Run `ratorrent attach` as `nobody` on a terminal of its own (`script`); returns its
/// exit status and what it printed.
fn attach_as_nobody(home: &Home) -> (bool, String) {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .args(["script", "-q", "-e", "-c"])
        .arg(format!(
            "{} --config {} attach",
            common::rat::bin(),
            home.config.display()
        ))
        .arg("/dev/null");
    for (k, v) in home.env() {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .expect("setpriv and script (util-linux) are installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Connect raw, send `bytes`, read everything the daemon sends until it closes.
fn raw(socket: &Path, bytes: &[u8]) -> String {
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(bytes);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn the_socket_refuses_another_user_unknown_versions_garbage_and_oversized_frames() {
    // SAFETY: geteuid(2) cannot fail
    if unsafe { libc::geteuid() } != 0 {
        panic!("this test runs the client as `nobody` with setpriv: run it as root (CI does)");
    }
    let home = Home::new("");
    // `nobody` may walk to the config and the state folder (not into the socket's folder)
    for p in [home.dir.path().to_path_buf(), home.config.clone()] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut d = Daemon::start(&home, free_port(), &[], &[]);
    let socket = home.socket().unwrap();
    let socket_dir = socket.parent().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(socket_dir), 0o700, "{}", socket_dir.display());
    assert_eq!(mode(&socket), 0o600);
    // the folder keeps another user out
    let (ok, text) = attach_as_nobody(&home);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "the ratorrent daemon (pid {}) runs with the state in",
            d.pid()
        )) && text.contains("cannot connect to the daemon's control socket")
            && text.contains("Permission denied"),
        "{text}"
    );
    // with the folder and socket opened up, the daemon checks who connects itself
    std::fs::set_permissions(socket_dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (ok, text) = attach_as_nobody(&home);
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "the daemon refused the connection: uid 65534 may not use this daemon's control socket (only its own user, uid 0)"
        ),
        "{text}"
    );
    assert!(
        home.log().contains("refused a connection of uid 65534"),
        "{}",
        home.log()
    );
    // another protocol version is told which one the daemon speaks
    let answer = raw(&socket, b"ratorrent-control 999 ratorrent/9.9.9\n");
    assert_eq!(
        answer,
        "ratorrent-control 2 refused this daemon speaks control protocol 2, the client 999: attach with the ratorrent build the daemon runs, or restart the daemon with this one\n"
    );
    // garbage and oversized frames close their connection, never the daemon
    let hello = ratorrent::control::wire::client_hello();
    let mut oversized = hello.clone().into_bytes();
    oversized.extend(u32::MAX.to_be_bytes());
    let mut garbage_body = hello.clone().into_bytes();
    garbage_body.extend([0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0xff]);
    let mut noise = vec![0u8; 64 << 10];
    let mut x = 0x2545f491u32;
    for b in &mut noise {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    for (input, expect) in [
        (oversized, "over the limit of 1048576 bytes"),
        (garbage_body, "does not decode"),
        (noise, "refused"),
        (b"\n".to_vec(), "not a ratorrent control client"),
    ] {
        let answer = raw(&socket, &input);
        assert!(answer.contains(expect), "{expect}: {answer:?}");
    }
    assert!(d.alive(), "{}", d.output());
    // and it still serves its own user
    let rt = runtime();
    let r = attach(&rt, &home);
    assert!(r.client.snapshot().rows.is_empty());
    drop(r);
    d.signal(libc::SIGTERM);
    assert!(d.wait(Duration::from_secs(30)).unwrap().success());
    assert!(!home.log().contains("panicked"), "{}", home.log());
}

#[test]
fn sigterm_saves_and_exits_0_and_sighup_applies_a_changed_rate_limit() {
    let home = Home::new("download_rate_limit = \"1M\"");
    let data = home.path("data");
    std::fs::write(data.join("local.bin"), vec![7u8; 600 << 10]).unwrap();
    let meta = ratorrent::metainfo::create::TorrentBuilder::new(data.join("local.bin"))
        .piece_length(64 << 10)
        .build()
        .unwrap();
    let torrent = home.dir.path().join("local.torrent");
    std::fs::write(&torrent, &meta).unwrap();
    let mut d = Daemon::start(&home, free_port(), &[], &["-o", data.to_str().unwrap()]);
    let rt = runtime();
    let r = attach(&rt, &home);
    assert_eq!(r.client.snapshot().global.down_limit, 1 << 20);
    let id = rt
        .block_on(r.client.add(AddRequest::new(torrent.clone())))
        .unwrap();
    wait_snap(
        &rt,
        &r,
        "the local torrent seeding",
        Duration::from_secs(30),
        |s| {
            s.row(id)
                .is_some_and(|row| row.state == TorrentState::Seeding)
        },
    );
    // the config changes, SIGHUP: the next snapshot with other limits has the new ones
    home.write_config(
        "download_rate_limit = \"3M\"\nupload_rate_limit = \"700K\"\nlisten_port = 1",
    );
    let seq = r.client.snapshot().seq;
    let t = Instant::now();
    d.signal(libc::SIGHUP);
    let snap = wait_snap(&rt, &r, "other limits", Duration::from_secs(10), |s| {
        s.seq > seq && s.global.down_limit != 1 << 20
    });
    assert_eq!(
        (snap.global.down_limit, snap.global.up_limit),
        (3 << 20, 700 << 10),
        "seen {:?} after the signal",
        t.elapsed()
    );
    let log = home.log();
    assert!(
        log.contains("SIGHUP: read ")
            && log.contains("applied: rate limits")
            && log.contains("at the next start of the daemon: listen_port"),
        "{log}"
    );
    // a file that does not read changes nothing
    home.write_config("download_rate_limit = \"5M");
    d.signal(libc::SIGHUP);
    let start = Instant::now();
    while !home.log().contains("the settings in force stay") {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.client.snapshot().global.down_limit, 3 << 20);
    // SIGTERM: stopped, saved, status 0, socket gone, state folder free
    d.signal(libc::SIGTERM);
    let status = d.wait(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status:?}\n{}", d.output());
    let log = home.log();
    assert!(
        log.contains("SIGTERM: stopping") && log.contains("daemon stopped"),
        "{log}"
    );
    assert!(!home.socket().unwrap().exists(), "the socket is removed");
    assert_eq!(Owner::running(&home.state_dir()), None);
    drop(r);
    let (store, loaded) = StateStore::open(&home.state_dir()).unwrap();
    drop(store);
    let info_hash = Metainfo::from_file(&torrent).unwrap().info_hash;
    assert!(
        loaded
            .torrents
            .iter()
            .any(|s| matches!(s, Stored::Record(ih, _) if *ih == info_hash)),
        "the torrent is in the saved state"
    );
    let limits = loaded.session_limits.expect("the limits were saved");
    assert_eq!(
        (limits.download, limits.config_download),
        (3 << 20, 3 << 20),
        "the reloaded limit is the config's from now on"
    );
}

#[test]
fn the_user_unit_restarts_on_failure_and_reloads_with_sighup() {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/ratorrent.service"),
    )
    .unwrap();
    for line in [
        "Restart=on-failure",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillSignal=SIGTERM",
        "WantedBy=default.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}");
    }
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    assert!(exec.ends_with("ratorrent daemon"), "{exec}");
    // systemd's own check of the file, with ExecStart naming the binary under test
    let dir = common::temp_dir();
    let copy = dir.path().join("ratorrent.service");
    std::fs::write(
        &copy,
        unit.replace(exec, &format!("{} daemon", common::rat::bin())),
    )
    .unwrap();
    match std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
    {
        Ok(out) => assert!(
            out.status.success() && out.stderr.is_empty(),
            "systemd-analyze verify: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => println!("systemd-analyze not run ({e}): the unit's lines were checked"),
    }
}

#[test]
fn without_xdg_runtime_dir_the_socket_is_in_the_state_folder() {
    let home = Home::new("");
    let mut child = home
        .command(&["daemon", "--port", &free_port().to_string()])
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let socket = loop {
        if let Some(s) = home.socket()
            && std::os::unix::net::UnixStream::connect(&s).is_ok()
        {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = home.state_dir().join("run");
    assert_eq!(socket.parent(), Some(run.as_path()));
    let mode = std::fs::metadata(&run).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let rt = runtime();
    let r = attach(&rt, &home);
    assert_eq!(r.daemon.pid, child.id());
    assert_eq!(r.daemon.state_dir, home.state_dir());
    drop(r);
    // SAFETY: kill(2) on our own child
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    assert!(child.wait().unwrap().success());
}
