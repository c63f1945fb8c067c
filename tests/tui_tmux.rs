//! The TUI as a real terminal program: ratorrent runs inside tmux (send-keys, capture-pane)
//! and downloads from a real libtorrent seeder through a tracker on loopback.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::tmux::TmuxPane;
use common::{
    Event, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir,
};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// Starts `cmd` in a private tmux pane `width`×`height` with a UTF-8 locale, as on a
/// user's terminal (without one the UI draws ASCII), and `env` over the pane's private
/// config, data and state directories.
fn start(tag: &str, cmd: &str, env: &[(&str, &Path)], width: u16, height: u16) -> TmuxPane {
    let mut all = vec![("LANG", Path::new("C.UTF-8"))];
    all.extend_from_slice(env);
    TmuxPane::start(tag, cmd, &all, width, height)
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
    let tmux = start(
        "main",
        &cmd,
        &[("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)],
        110,
        24,
    );

    let screen = tmux.wait_row("movie.bin", "Downloading", Duration::from_secs(20));
    assert!(screen.contains("movie.bin"), "{screen}");
    assert!(screen.contains("24.0 MiB"), "size column: {screen}");
    assert!(
        screen.contains("cannot read \"/nonexistent.torrent\""),
        "the failed add is reported in the status bar: {screen}"
    );

    tmux.keys("p");
    let paused = tmux.wait_row("movie.bin", "Paused", Duration::from_secs(5));
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
    // q closes the help, never quits
    tmux.keys("q");
    std::thread::sleep(Duration::from_millis(300));

    tmux.keys("p");
    tmux.wait_row("movie.bin", "Downloading", Duration::from_secs(5));
    let done = tmux.wait_row("movie.bin", "Seeding", Duration::from_secs(60));
    assert!(done.contains("100%"), "{done}");
    common::compare_files(&src.join("movie.bin"), &dst.join("movie.bin")).unwrap();

    let before = tracker.announces_for(&ih).len();
    // a seeding torrent is active: q asks first, and q again only closes the question
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("q");
    tmux.wait_until("the question closed", Duration::from_secs(5), |s| {
        !s.contains("Quit ratorrent?")
    });
    assert!(tmux.alive(), "q in a dialog never quits");
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(
        tmux.wait_exit(Duration::from_secs(10)),
        "ratorrent quits on q, y"
    );
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

/// A multi-file torrent of three 1 MiB files (piece boundaries on file boundaries, so a
/// skipped file shares no piece with the others) seeded by libtorrent on 127.0.0.2.
struct Swarm {
    tracker: TestTracker,
    dir: tempfile::TempDir,
    torrent: std::path::PathBuf,
    src: std::path::PathBuf,
    _seeder: LtPeer,
    ih: ratorrent::metainfo::InfoHash,
}

fn swarm(upload_limit: Option<u64>) -> Swarm {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let files = [
        FileSpec::new("album/a.bin", 4 << 20),
        FileSpec::new("album/b.bin", 4 << 20),
        FileSpec::new("album/c.bin", 4 << 20),
    ];
    payload::write_tree(&src, &files, 11).unwrap();
    let torrent = dir.path().join("album.torrent");
    let ih = make_torrent(
        &src.join("album"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let mut args = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    args.upload_limit = upload_limit;
    let seeder = LtPeer::seed(&args);
    Swarm {
        tracker,
        dir,
        torrent,
        src,
        _seeder: seeder,
        ih,
    }
}

/// Starts ratorrent with an empty list in a tmux window `width`×`height`.
fn start_empty(
    sw: &Swarm,
    width: u16,
    height: u16,
    tag: &str,
) -> (TmuxPane, std::path::PathBuf, u16) {
    let port = free_port();
    let dst = sw.dir.path().join(format!("dst-{tag}"));
    let config = sw.dir.path().join(format!("config-{tag}.toml"));
    std::fs::write(
        &config,
        format!(
            "listen_port = {port}\ndownload_dir = \"{}\"\n",
            dst.display()
        ),
    )
    .unwrap();
    let cmd = format!("{} --config {}", common::rat::bin(), config.display());
    let state = sw.dir.path().join(format!("state-{tag}"));
    let home = sw.dir.path().join(format!("home-{tag}"));
    std::fs::create_dir_all(&home).unwrap();
    let data_home = sw.dir.path().join(format!("data-{tag}"));
    let tmux = start(
        tag,
        &cmd,
        &[
            ("XDG_STATE_HOME", &state),
            ("XDG_DATA_HOME", &data_home),
            ("HOME", &home),
            ("XDG_CONFIG_HOME", &home),
        ],
        width,
        height,
    );
    tmux.wait_for("No torrents yet", Duration::from_secs(20));
    (tmux, dst, port)
}

/// Adds the swarm's torrent through the add dialog: types the folder and the start of
/// the name, completes it with Tab, optionally ticks "start paused", submits.
fn add_through_dialog(tmux: &TmuxPane, sw: &Swarm, paused: bool) {
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.type_text(&format!("{}/alb", sw.dir.path().display()));
    tmux.keys("Tab");
    tmux.wait_for("album.torrent", Duration::from_secs(5));
    if paused {
        tmux.keys("Down");
        tmux.keys("Down");
        tmux.keys("Space");
        tmux.wait_for("[x] Start paused", Duration::from_secs(5));
    }
    tmux.keys("Enter");
    tmux.wait_for("torrent added", Duration::from_secs(10));
}

#[test]
fn tui_add_download_tabs_limit_remove_under_tmux() {
    let sw = swarm(None);
    let (tmux, dst, port) = start_empty(&sw, 80, 24, "e2e");

    // the add dialog validates: a missing file is refused with a message
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.type_text("/nonexistent.torrent");
    tmux.keys("Enter");
    tmux.wait_for("no such file", Duration::from_secs(5));
    tmux.keys("Escape");
    tmux.wait_for("No torrents yet", Duration::from_secs(5));

    add_through_dialog(&tmux, &sw, false);
    let seeding = tmux.wait_row("album", "Seeding", Duration::from_secs(60));
    assert!(
        seeding.contains("album") && seeding.contains("100%"),
        "{seeding}"
    );
    for f in ["a.bin", "b.bin", "c.bin"] {
        common::compare_files(&sw.src.join("album").join(f), &dst.join("album").join(f)).unwrap();
    }
    // adding it again selects the existing one and says so
    add_through_dialog_again(&tmux, &sw);

    // the detail view: Peers shows the seeder, Files the three files
    tmux.keys("Enter");
    tmux.wait_for("General", Duration::from_secs(5));
    let general = tmux.wait_for("Info hash", Duration::from_secs(5));
    assert!(general.contains(&sw.ih.to_hex()), "{general}");
    tmux.keys("Tab");
    // the seeder, or none: two seeds may already have closed their connection (libtorrent
    // closes redundant seed-to-seed connections)
    let peers = tmux.wait_until("a peer list", Duration::from_secs(10), |s| {
        (s.contains("Address") && s.contains("127.0.0.2:")) || s.contains("no peers connected")
    });
    assert!(peers.contains("Peers"), "{peers}");
    tmux.keys("Tab");
    let files = tmux.wait_for("c.bin", Duration::from_secs(5));
    assert!(
        files.contains("a.bin") && files.contains("b.bin") && files.contains("normal"),
        "{files}"
    );
    tmux.keys("Escape");
    tmux.wait_for("sort:", Duration::from_secs(5));

    // a session limit set live, in human units, shows in the status bar
    tmux.keys("L");
    tmux.wait_for("Rate limits", Duration::from_secs(5));
    tmux.keys("C-u");
    tmux.type_text("1M");
    tmux.keys("Enter");
    tmux.wait_for("(max 1.00 MiB/s)", Duration::from_secs(5));

    // remove with confirmation: the data stays
    tmux.keys("d");
    let ask = tmux.wait_for("Remove torrent", Duration::from_secs(5));
    assert!(ask.contains("data stays"), "{ask}");
    tmux.keys("n");
    tmux.wait_until("the question closed", Duration::from_secs(5), |s| {
        !s.contains("Remove torrent")
    });
    assert!(tmux.capture().contains("album"));
    tmux.keys("d");
    tmux.wait_for("Remove torrent", Duration::from_secs(5));
    tmux.keys("y");
    let empty = tmux.wait_for("No torrents yet", Duration::from_secs(10));
    assert!(empty.contains("removed"), "{empty}");
    assert!(
        dst.join("album").join("a.bin").exists(),
        "remove keeps the data"
    );
    sw.tracker
        .wait_for_announce(Duration::from_secs(5), |a| {
            a.info_hash == sw.ih && a.addr.port() == port && a.event == Event::Stopped
        })
        .expect("removing announces `stopped`");

    // nothing active: q quits at once
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)), "quit");
}

/// A magnet link pasted into the add dialog (bracketed paste, with the newline a copied line
/// carries) is added as one: the metadata comes from libtorrent (BEP 9) and the payload
/// follows.
#[test]
fn tui_magnet_link_pasted_into_the_add_dialog_downloads_under_tmux() {
    let sw = swarm(None);
    let (tmux, dst, _port) = start_empty(&sw, 100, 24, "magnet");
    // no tracker: the link names the seeder (x.pe), so only the magnet path can find it
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=album&x.pe={}",
        sw.ih.to_hex(),
        sw._seeder.addr()
    );
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.paste(&format!("{link}\n"));
    // the field scrolls to its end: the link's tail shows
    let tail = format!("&dn=album&x.pe={}", sw._seeder.addr());
    let dialog = tmux.wait_for(&tail, Duration::from_secs(5));
    assert!(
        dialog.contains("Add a torrent"),
        "the pasted newline does not submit:\n{dialog}"
    );
    tmux.keys("Enter");
    tmux.wait_for("torrent added", Duration::from_secs(10));
    let seeding = tmux.wait_row("album", "Seeding", Duration::from_secs(60));
    assert!(seeding.contains("100%"), "{seeding}");
    for f in ["a.bin", "b.bin", "c.bin"] {
        common::compare_files(&sw.src.join("album").join(f), &dst.join("album").join(f)).unwrap();
    }
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

fn add_through_dialog_again(tmux: &TmuxPane, sw: &Swarm) {
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.type_text(&sw.torrent.display().to_string());
    tmux.keys("Enter");
    tmux.wait_for("is already added: selected it", Duration::from_secs(10));
}

/// A file set to skip before the download starts is neither created nor fetched, and the
/// other files complete (the engine's `SetFilePriority`).
#[test]
fn tui_skipped_file_is_not_created_nor_fetched_under_tmux() {
    let sw = swarm(None);
    let (tmux, dst, _port) = start_empty(&sw, 80, 24, "skip");
    add_through_dialog(&tmux, &sw, true);
    tmux.wait_row("album", "Paused", Duration::from_secs(10));
    tmux.keys("Enter");
    tmux.wait_for("Info hash", Duration::from_secs(5));
    tmux.keys("Tab");
    tmux.keys("Tab");
    tmux.wait_for("c.bin", Duration::from_secs(5));
    // the last row is c.bin, b.bin above it: normal → low → skip
    tmux.keys("End");
    tmux.keys("k");
    tmux.keys("-");
    tmux.keys("-");
    let files = tmux.wait_until("b.bin set to skip", Duration::from_secs(10), |s| {
        s.lines().any(|l| l.contains("b.bin") && l.contains("skip"))
    });
    assert!(
        files
            .lines()
            .any(|l| l.contains("a.bin") && l.contains("normal")),
        "{files}"
    );
    tmux.keys("p");
    // a.bin and c.bin complete; b.bin stays at 0 % and is never created
    let done = tmux.wait_until("a.bin and c.bin complete", Duration::from_secs(60), |s| {
        ["a.bin", "c.bin"]
            .iter()
            .all(|f| s.lines().any(|l| l.contains(f) && l.contains("100%")))
    });
    assert!(
        done.lines()
            .any(|l| l.contains("b.bin") && l.contains("0.0%") && l.contains("skip")),
        "{done}"
    );
    for f in ["a.bin", "c.bin"] {
        common::compare_files(&sw.src.join("album").join(f), &dst.join("album").join(f)).unwrap();
    }
    assert!(
        !dst.join("album").join("b.bin").exists(),
        "a skipped file is not created"
    );
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

#[test]
fn without_a_terminal_it_points_to_download_and_creates_nothing() {
    let dir = temp_dir();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    let out = Command::new(common::rat::bin())
        .env("XDG_STATE_HOME", &state)
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run ratorrent");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("ratorrent download"),
        "{err}"
    );
    assert!(!state.exists(), "no log file is created");
    assert!(!data.exists(), "no session state is created");
}

/// The TUI checks `[keys]` and `[colors]` when it starts: entries it cannot use stop it
/// before the terminal changes (no alternate screen, no raw mode, no log file), with the
/// file, each entry's line, its key, what is wrong and what is allowed.
#[test]
fn bad_keys_and_colors_stop_the_tui_before_the_terminal_changes() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "# mine\n[keys]\npause = \"c\"\n[colors]\ndown = \"pink\"\n",
    )
    .unwrap();
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let cmd = format!(
        "{} --config {}; echo \"exit=$?\"; sleep 60",
        common::rat::bin(),
        config.display()
    );
    let tmux = start(
        "bad-keys",
        &cmd,
        &[("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)],
        250,
        20,
    );
    let screen = tmux.wait_for("exit=1", Duration::from_secs(20));
    // wrapped at 250 columns at most once: join the screen's lines
    let text = screen.lines().collect::<String>();
    for needle in [
        "ratorrent: error: invalid config file",
        "config.toml",
        "line 3: [keys] pause: \"c\" is bound to both pause and recheck",
        "line 5: [colors] down: unknown colour \"pink\": use default, black,",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{screen}");
    }
    assert_eq!(
        text.matches("[keys] pause").count(),
        1,
        "one clash is told once, with its contexts:\n{screen}"
    );
    assert!(
        screen.lines().any(|l| l.starts_with("exit=1")),
        "the shell's next line starts at column 0 (no raw mode left behind):\n{screen}"
    );
    assert!(!state.exists(), "no log file is created");
    assert!(!data_home.exists(), "no session state is created");
}

/// A `columns` name that is no column stops the TUI like the file's other errors: the
/// file, the key, and the names there are.
#[test]
fn a_bad_column_name_names_the_config_file() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "columns = [\"name\", \"bogus\"]\n").unwrap();
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let cmd = format!(
        "{} --config {}; echo \"exit=$?\"; sleep 60",
        common::rat::bin(),
        config.display()
    );
    let tmux = start(
        "bad-columns",
        &cmd,
        &[("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)],
        250,
        20,
    );
    let screen = tmux.wait_for("exit=1", Duration::from_secs(20));
    let text = screen.lines().collect::<String>();
    for needle in [
        "ratorrent: error: invalid config file",
        "config.toml: columns: no column is called \"bogus\"",
        "(the columns: added, name, size,",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{screen}");
    }
    assert!(!data_home.exists(), "no session state is created");
}

#[test]
fn resizing_redraws_the_whole_layout() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("listen_port = {}\n", free_port())).unwrap();
    let state = dir.path().join("state");
    let cmd = format!("{} --config {}", common::rat::bin(), config.display());
    let data_home = dir.path().join("data-home");
    let tmux = start(
        "resize",
        &cmd,
        &[("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)],
        80,
        24,
    );
    tmux.wait_for("No torrents yet", Duration::from_secs(20));
    for (w, h) in [(120u16, 40u16), (60, 15), (80, 24)] {
        let st = Command::new("tmux")
            .args([
                "-L",
                &tmux.socket,
                "resize-window",
                "-t",
                "t",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .status()
            .expect("resize-window");
        assert!(st.success());
        let screen = tmux.wait_until(
            &format!("the {w}x{h} layout"),
            Duration::from_secs(5),
            |s| {
                let lines: Vec<&str> = s.lines().collect();
                lines.len() >= usize::from(h)
                    && lines[usize::from(h) - 1].contains("↓ 0 B/s")
                    && lines[0].starts_with(" all 0")
                    && lines
                        .iter()
                        .all(|l| unicode_width::UnicodeWidthStr::width(*l) <= usize::from(w))
            },
        );
        assert_eq!(
            screen.matches("No torrents yet").count(),
            1,
            "no leftovers:\n{screen}"
        );
    }
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

/// Five broken torrents on the command line: the message line counts them and says where
/// to read why, whole at 80 and 120 columns; the session log holds every reason.
#[test]
fn failed_adds_are_counted_and_each_reason_is_in_the_session_log() {
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let dir = temp_dir();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, format!("listen_port = {}\n", free_port())).unwrap();
        let mut cmd = format!("{} --config {}", common::rat::bin(), config.display());
        for name in ["a", "b", "c", "d", "e"] {
            let path = dir.path().join(format!("{name}.torrent"));
            std::fs::write(&path, b"not bencode at all").unwrap();
            cmd.push_str(&format!(" {}", path.display()));
        }
        let tmux = start(&format!("failed-adds-{w}"), &cmd, &[], w, h);
        let screen = tmux.wait_for("5 torrents not added", Duration::from_secs(20));
        let message = screen
            .lines()
            .find(|l| l.contains("5 torrents not added"))
            .unwrap();
        assert!(
            message.contains("5 torrents not added (why: e, session log)"),
            "{w}x{h}: the count and the key are read whole:\n{screen}"
        );
        tmux.keys("e");
        tmux.wait_until("five refusals in the log", Duration::from_secs(10), |s| {
            ["a", "b", "c", "d", "e"]
                .iter()
                .all(|name| s.contains(&format!("{name}.torrent")))
        });
        tmux.keys("q");
        assert!(tmux.wait_exit(Duration::from_secs(10)));
    }
}

/// A run killed with `kill -9` leaves the terminal in the alternate screen with its text;
/// the next start in the same terminal clears it instead of drawing over it.
#[test]
fn the_screen_is_cleared_on_start() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("listen_port = {}\n", free_port())).unwrap();
    let cmd = format!(
        "printf '\\033[?1049h'; for i in $(seq 1 40); do echo LEFTOVER-LEFTOVER-LEFTOVER-LEFTOVER-LEFTOVER-LEFTOVER; done; exec {} --config {}",
        common::rat::bin(),
        config.display()
    );
    let tmux = start("cleared", &cmd, &[], 80, 24);
    let screen = tmux.wait_for("No torrents yet", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let screen = format!("{screen}\n{}", tmux.capture());
    assert!(
        !screen.contains("LEFTOVER"),
        "old text shows through:\n{screen}"
    );
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

/// The list's sort and state filter come back after a restart (the TUI's own file in the
/// state directory): sorted by name, the later-added `alpha` is first again at once.
#[test]
fn the_sort_and_filter_are_kept_across_restarts() {
    let dir = temp_dir();
    let mut torrents = Vec::new();
    for name in ["zeta.bin", "alpha.bin"] {
        let data = dir.path().join(name);
        std::fs::write(&data, vec![7u8; 40_000]).unwrap();
        let t = dir.path().join(format!("{name}.torrent"));
        std::fs::write(
            &t,
            ratorrent::metainfo::TorrentBuilder::new(&data)
                .build()
                .unwrap(),
        )
        .unwrap();
        torrents.push(t);
    }
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "listen_port = {}\nconfirm_quit = false\ndownload_dir = \"{}\"\n",
            free_port(),
            dir.path().join("dst").display()
        ),
    )
    .unwrap();
    let state = dir.path().join("state");
    let data_home = dir.path().join("data-home");
    let env = [("XDG_STATE_HOME", &state), ("XDG_DATA_HOME", &data_home)];
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let cmd = format!(
        "{} --no-dht --config {} {} {}",
        common::rat::bin(),
        config.display(),
        torrents[0].display(),
        torrents[1].display()
    );
    let first_row = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("zeta.bin") || l.contains("alpha.bin"))
            .map(|l| l.contains("alpha.bin"))
    };
    let tmux = start("view1", &cmd, &env, 120, 24);
    let screen = tmux.wait_for("alpha.bin", Duration::from_secs(20));
    assert_eq!(first_row(&screen), Some(false), "added order: {screen}");
    tmux.keys("s");
    let screen = tmux.wait_for("Name▲", Duration::from_secs(5));
    assert_eq!(first_row(&screen), Some(true), "by name: {screen}");
    tmux.keys("f");
    tmux.wait_for("Downloading", Duration::from_secs(5));
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
    assert!(data_home.join("ratorrent").join("tui-view.toml").is_file());

    // no torrents on the command line: the session brings them back, sorted as left
    let cmd = format!(
        "{} --no-dht --config {}",
        common::rat::bin(),
        config.display()
    );
    let tmux = start("view2", &cmd, &env, 120, 24);
    let screen = tmux.wait_for("Name▲", Duration::from_secs(20));
    let screen = if screen.contains("zeta.bin") {
        screen
    } else {
        tmux.wait_for("zeta.bin", Duration::from_secs(10))
    };
    assert_eq!(first_row(&screen), Some(true), "kept: {screen}");
    assert!(screen.contains("Downloading"), "filter kept: {screen}");
    tmux.keys("q");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

/// Issue 17 under tmux at 80×24: complete data added through the dialog with "skip hash
/// check" ticked seeds at once (no check state on the way), General counts its unchecked
/// pieces; `z` and `Z` switch sequential download and first and last pieces first on, and
/// General shows the piece order.
#[test]
fn tui_skip_check_add_seeds_at_once_and_z_switches_the_piece_order_under_tmux() {
    let sw = swarm(None);
    let (tmux, _dst, _port) = start_empty(&sw, 80, 24, "skipcheck");
    tmux.keys("a");
    tmux.wait_for("Add a torrent", Duration::from_secs(5));
    tmux.type_text(&sw.torrent.display().to_string());
    // save in the seeder's folder, where the complete data is
    tmux.keys("Down");
    tmux.type_text(&sw.src.display().to_string());
    for _ in 0..3 {
        tmux.keys("Down");
    }
    tmux.keys("Space");
    tmux.wait_for("[x] Skip hash check", Duration::from_secs(5));
    tmux.keys("Enter");
    tmux.wait_for("torrent added", Duration::from_secs(10));
    let seeding = tmux.wait_row("album", "Seeding", Duration::from_secs(10));
    assert!(seeding.contains("100%"), "{seeding}");
    tmux.keys("Enter");
    let general = tmux.wait_for("Unchecked", Duration::from_secs(5));
    assert!(
        general.contains("48 pieces, each hashed before it is first sent (c: check all)"),
        "{general}"
    );
    tmux.keys("z");
    tmux.wait_for(
        "Piece order  sequential (pieces in order)",
        Duration::from_secs(5),
    );
    tmux.keys("Z");
    let both = tmux.wait_for(
        "Piece order  sequential, first and last pieces of each file first",
        Duration::from_secs(5),
    );
    assert!(both.contains("Unchecked"), "{both}");
    // the torrent's log: added, then seeding; no check ran
    for _ in 0..6 {
        tmux.keys("Tab");
    }
    let log = tmux.wait_for("added (info hash", Duration::from_secs(5));
    assert!(log.contains("Seeding"), "{log}");
    assert!(!log.contains("checked") && !log.contains("Check"), "{log}");
    tmux.keys("q");
    tmux.wait_for("Quit ratorrent?", Duration::from_secs(5));
    tmux.keys("y");
    assert!(tmux.wait_exit(Duration::from_secs(10)));
}

#[test]
fn tui_creates_a_torrent_of_a_folder_with_n_and_libtorrent_downloads_it_under_tmux() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let files = [
        FileSpec::new("mine/a.bin", 1 << 20),
        FileSpec::new("mine/sub/b.bin", 300_001),
    ];
    payload::write_tree(&src, &files, 0x4e).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "listen_port = {}\ndownload_dir = \"{}\"\n",
            free_port(),
            dir.path().join("downloads").display()
        ),
    )
    .unwrap();
    let cmd = format!("{} --config {}", common::rat::bin(), config.display());
    let state = dir.path().join("state");
    let tmux = start("create", &cmd, &[("XDG_STATE_HOME", &state)], 80, 24);
    tmux.wait_for("No torrents yet", Duration::from_secs(20));

    tmux.keys("N");
    tmux.wait_for("Create a torrent and seed it", Duration::from_secs(5));
    // an empty folder is refused by the engine, on the message line
    let empty = src.join("nothing");
    std::fs::create_dir(&empty).unwrap();
    tmux.type_text(&empty.display().to_string());
    tmux.keys("Enter");
    tmux.wait_for("nothing to share", Duration::from_secs(10));
    assert!(!src.join("nothing.torrent").exists());

    tmux.keys("N");
    tmux.wait_for("Create a torrent and seed it", Duration::from_secs(5));
    tmux.type_text(&src.join("mine").display().to_string());
    tmux.keys("Down");
    tmux.keys("Down");
    tmux.type_text(&tracker.url());
    tmux.keys("Enter");
    tmux.wait_row("mine", "Seeding", Duration::from_secs(20));
    let torrent = src.join("mine.torrent");
    let meta = ratorrent::metainfo::Metainfo::from_file(&torrent).unwrap();
    assert_eq!(meta.version(), ratorrent::metainfo::MetaVersion::Hybrid);

    let ip = Ipv4Addr::new(127, 0, 0, 4);
    let dst = dir.path().join("lt");
    let mut leecher = LtPeer::leech(&common::LeechArgs::new(
        &torrent,
        &dst,
        ip,
        free_port_on(ip),
    ));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), tmux.capture()));
    common::compare_trees(&src.join("mine"), &dst.join("mine")).unwrap();
}
