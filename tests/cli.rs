//! The command line as a user meets it: exit codes and messages.

mod common;

use ratorrent::metainfo::TorrentBuilder;

/// Runs `ratorrent ARGS` with its config, data and state directories in a temporary one.
fn run(args: &[&str]) -> (i32, String, String) {
    let home = common::temp_dir();
    let out = common::rat::command(home.path())
        .args(args)
        .output()
        .expect("run ratorrent");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn info_prints_the_torrent_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("song.flac");
    std::fs::write(&data, vec![3u8; 100_000]).unwrap();
    let t = dir.path().join("song.torrent");
    std::fs::write(
        &t,
        TorrentBuilder::new(&data)
            .piece_length(32 * 1024)
            .announce("http://127.0.0.1:1/announce")
            .build()
            .unwrap(),
    )
    .unwrap();
    let (code, out, _) = run(&["info", t.to_str().unwrap()]);
    assert_eq!(code, 0);
    let ih = ratorrent::metainfo::Metainfo::from_file(&t)
        .unwrap()
        .info_hash
        .to_hex();
    for needle in [
        "song.flac",
        ih.as_str(),
        "4 x 32.0 KiB",
        "http://127.0.0.1:1/announce",
    ] {
        assert!(out.contains(needle), "{needle:?} missing from:\n{out}");
    }

    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/torrent");
    for (file, reason) in [
        (
            "t05-pieces-not-multiple-of-20.torrent",
            "not a multiple of 20",
        ),
        ("t06-int-leading-zero.torrent", "leading zero"),
        ("t07-depth-bomb-torrent.torrent", "nesting too deep"),
    ] {
        let (code, _, err) = run(&["info", &format!("{cases}/{file}")]);
        assert_eq!(code, 1, "{file}");
        assert!(err.contains(reason), "{file}: {err}");
    }
    let (code, _, err) = run(&["info", "/nonexistent.torrent"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent.torrent"), "{err}");
}

#[test]
fn bad_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "listen_port = 6881\nupload_slot = 3\n").unwrap();
    let (code, _, err) = run(&["--config", cfg.to_str().unwrap(), "download", "x.torrent"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("config.toml") && err.contains("line 2") && err.contains("upload_slot"),
        "{err}"
    );
}

/// `[keys]` and `[colors]` are the TUI's: headless commands do not use them, so a key
/// binding or colour the TUI would refuse does not stop `info`, `check` or `download` (as
/// a daemon ignores a GUI's settings); a table of the wrong shape is still the file's error.
#[test]
fn headless_commands_ignore_what_the_tui_would_refuse_in_keys_and_colors() {
    let dir = tempfile::tempdir().unwrap();
    let t = small_torrent(dir.path());
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[keys]\npause = \"c\"\nfly = \"Hyper-x\"\n[colors]\nsky = \"pink\"\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let (code, out, err) = run(&["--config", c, "info", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("d.bin"), "{out}");
    let (code, out, err) = run(&[
        "--config",
        c,
        "check",
        t.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!((code, out.trim()), (0, "4/4 pieces verified"), "{err}");

    std::fs::write(&cfg, "listen_port = 6881\n[keys]\npause = 5\n").unwrap();
    let (code, _, err) = run(&["--config", c, "info", t.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("config.toml") && err.contains("line 3") && err.contains("pause"),
        "{err}"
    );
}

#[test]
fn download_failures_exit_non_zero_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[dht]\nenabled = false\n").unwrap();
    let c = cfg.to_str().unwrap();
    let o = dir.path().to_str().unwrap();
    let (code, _, err) = run(&[
        "--config",
        c,
        "download",
        "/nonexistent.torrent",
        "-o",
        o,
        "--port",
        "0",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot read \"/nonexistent.torrent\""),
        "{err}"
    );

    // the listen port is taken
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let (code, _, err) = run(&[
        "--config",
        c,
        "download",
        "/nonexistent.torrent",
        "-o",
        o,
        "--port",
        &port,
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("cannot listen for peers on TCP port {port}")),
        "{err}"
    );

    // no peers at all: --timeout gives up with the progress reached
    let data = dir.path().join("d.bin");
    std::fs::write(&data, vec![1u8; 50_000]).unwrap();
    let t = dir.path().join("d.torrent");
    std::fs::write(&t, TorrentBuilder::new(&data).build().unwrap()).unwrap();
    let out_dir = dir.path().join("out");
    let (code, _, err) = run(&[
        "--config",
        c,
        "download",
        t.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--port",
        "0",
        "--timeout",
        "1",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("timed out after 1 s at 0.0% (0 B of "),
        "{err}"
    );
    assert!(
        err.contains("running the same command again checks the data on disk and goes on"),
        "{err}"
    );
}

#[test]
fn check_verifies_data_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.bin");
    std::fs::write(&data, (0..200_000u32).map(|i| i as u8).collect::<Vec<_>>()).unwrap();
    let t = dir.path().join("d.torrent");
    std::fs::write(
        &t,
        TorrentBuilder::new(&data)
            .piece_length(16_384)
            .build()
            .unwrap(),
    )
    .unwrap();
    let (code, out, _) = run(&["check", t.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!((code, out.trim()), (0, "13/13 pieces verified"));
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[20_000] ^= 1;
    std::fs::write(&data, bytes).unwrap();
    let (code, out, _) = run(&["check", t.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!((code, out.trim()), (1, "12/13 pieces verified"));
}

/// A one-file torrent of 50,000 bytes in `dir` (no tracker), its path.
fn small_torrent(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join("d.bin");
    std::fs::write(&data, vec![1u8; 50_000]).unwrap();
    let t = dir.join("d.torrent");
    std::fs::write(&t, TorrentBuilder::new(&data).build().unwrap()).unwrap();
    t
}

/// Issue 15 item 4: with less free space than `min_free_space`, `download` stops with
/// exit status 1 and the cause (said once), instead of printing the same "paused" line
/// every second for ever; `--wait-for-space` waits, saying so once.
#[test]
fn download_stops_with_the_cause_when_the_disk_guard_pauses_unless_told_to_wait() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    // more than any volume has free
    std::fs::write(
        &cfg,
        "min_free_space = 9000000000000000000\n[dht]\nenabled = false\n",
    )
    .unwrap();
    let t = small_torrent(dir.path());
    let out_dir = dir.path().join("out");
    let base = [
        "--config",
        cfg.to_str().unwrap(),
        "download",
        t.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--port",
        "0",
    ];
    let started = std::time::Instant::now();
    let mut args = base.to_vec();
    args.extend(["--timeout", "60"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(40),
        "waited for the timeout: {out}{err}"
    );
    assert!(
        err.contains("min_free_space") && err.contains("free on the volume"),
        "{err}"
    );
    assert!(err.contains("--wait-for-space"), "{err}");
    let all = format!("{out}{err}");
    assert_eq!(all.matches("free on the volume").count(), 1, "{all}");
    assert!(!all.contains("resume"), "{all}");

    // told to wait: it waits (here until --timeout), the pause said once
    let mut args = base.to_vec();
    args.extend(["--wait-for-space", "--timeout", "4"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("timed out after 4 s"), "{err}");
    assert!(err.contains("waiting for free space"), "{err}");
    let all = format!("{out}{err}");
    assert_eq!(all.matches("free on the volume").count(), 1, "{all}");
}

/// Issue 15: a headless error is printed once (not also as a log line before it), and
/// never says "resume" (a TUI word).
#[test]
fn download_errors_are_printed_once_and_never_say_resume() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[dht]\nenabled = false\n").unwrap();
    let bad = dir.path().join("bad.torrent");
    std::fs::write(&bad, b"d4:infoi1ee").unwrap();
    for torrent in ["/nonexistent.torrent", bad.to_str().unwrap()] {
        let (code, out, err) = run(&[
            "--config",
            cfg.to_str().unwrap(),
            "download",
            torrent,
            "-o",
            dir.path().to_str().unwrap(),
            "--port",
            "0",
        ]);
        assert_eq!(code, 1, "{out}{err}");
        assert_eq!(
            err.matches(torrent).count(),
            1,
            "printed more than once: {err}"
        );
        assert!(err.starts_with("ratorrent: error: "), "{err}");
        assert!(!format!("{out}{err}").contains("resume"), "{err}");
    }
}

/// Issue 15 item 8: `info` of a .torrent and of a magnet link use the same labels, and a
/// tracker passkey is printed in neither.
#[test]
fn info_has_the_same_labels_for_torrents_and_magnets_and_masks_passkeys() {
    let dir = tempfile::tempdir().unwrap();
    let passkey = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
    let tracker = format!("http://127.0.0.1:1/{passkey}/announce");
    let data = dir.path().join("song.flac");
    std::fs::write(&data, vec![3u8; 100_000]).unwrap();
    let t = dir.path().join("song.torrent");
    std::fs::write(
        &t,
        TorrentBuilder::new(&data)
            .piece_length(32 * 1024)
            .announce(&tracker)
            .build()
            .unwrap(),
    )
    .unwrap();
    let ih = ratorrent::metainfo::Metainfo::from_file(&t)
        .unwrap()
        .info_hash
        .to_hex();
    let (code, file_out, err) = run(&["info", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let link = format!("magnet:?xt=urn:btih:{ih}&dn=song.flac&tr={tracker}&x.pe=127.0.0.1:6881");
    let (code, magnet_out, err) = run(&["info", &link]);
    assert_eq!(code, 0, "{err}");
    for out in [&file_out, &magnet_out] {
        assert!(!out.contains(passkey), "passkey printed:\n{out}");
        assert!(out.contains("http://127.0.0.1:1/***/announce"), "{out}");
        for label in [
            "Name:          song.flac",
            "Info hash v1:  ",
            "Trackers:",
            "tier 1:",
        ] {
            assert!(out.contains(label), "{label:?} missing from:\n{out}");
        }
        assert!(out.contains(&ih), "{out}");
    }
    assert!(
        magnet_out.contains("Peers:         127.0.0.1:6881"),
        "{magnet_out}"
    );
}

/// Issue 15 item 9: every subcommand reads the config the same way: a `--config` file that
/// does not exist (or does not parse) is an error for `info` as for `check` and
/// `download`.
#[test]
fn every_subcommand_refuses_a_missing_or_broken_config() {
    let dir = tempfile::tempdir().unwrap();
    let t = small_torrent(dir.path());
    let t = t.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = dir.path().join("nope.toml");
    let missing = missing.to_str().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "upload_slot = 3\n").unwrap();
    let broken = broken.to_str().unwrap();
    for cfg in [missing, broken] {
        for args in [
            vec!["info", t],
            vec!["check", t, d],
            vec!["download", t, "-o", d, "--port", "0", "--timeout", "5"],
        ] {
            let mut all = vec!["--config", cfg];
            all.extend(args.iter().copied());
            let (code, out, err) = run(&all);
            assert_eq!(code, 1, "{all:?}: {out}{err}");
            let name = std::path::Path::new(cfg)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap();
            assert!(err.contains(name), "{all:?}: {err}");
        }
    }
    // without --config, info still works (no config file is fine)
    let (code, out, err) = run(&["info", t]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Issue 15 (minor): `check` given the torrent's own top folder instead of the folder
/// holding it says which path it expected.
#[test]
fn check_given_the_top_folder_says_which_path_it_expected() {
    let dir = tempfile::tempdir().unwrap();
    let album = dir.path().join("album");
    std::fs::create_dir(&album).unwrap();
    std::fs::write(album.join("a.flac"), vec![5u8; 40_000]).unwrap();
    std::fs::write(album.join("b.flac"), vec![6u8; 30_000]).unwrap();
    let t = dir.path().join("album.torrent");
    std::fs::write(
        &t,
        TorrentBuilder::new(&album)
            .piece_length(16_384)
            .build()
            .unwrap(),
    )
    .unwrap();
    let (code, out, _) = run(&["check", t.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!((code, out.trim()), (0, "5/5 pieces verified"));
    let (code, out, _) = run(&["check", t.to_str().unwrap(), album.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("0/5 pieces verified"), "{out}");
    let expected = album.join("album");
    assert!(
        out.contains(&format!("expected the data at {}", expected.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("give its parent, {}", dir.path().display())),
        "{out}"
    );
}

/// `download` of a torrent whose data is on disk already says so: not "complete in 0.0 s",
/// as if it had downloaded it.
#[test]
fn download_of_data_already_on_disk_says_already_complete() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.bin");
    std::fs::write(&data, vec![7u8; 300_000]).unwrap();
    let t = dir.path().join("d.torrent");
    std::fs::write(&t, TorrentBuilder::new(&data).build().unwrap()).unwrap();
    let (code, out, err) = run(&[
        "download",
        t.to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
        "--port",
        "0",
        "--no-dht",
        "--timeout",
        "30",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("complete"))
        .unwrap_or_else(|| panic!("no completion line: {out}"));
    assert!(
        line.starts_with("already complete: d.bin (293 KiB): its data was on disk"),
        "{line}"
    );
}

/// A warning about a torrent names it once: the engine's own message may start with the
/// name already (it read "d.bin: d.bin: tracker …").
#[test]
fn download_warnings_name_the_torrent_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.bin");
    std::fs::write(&data, vec![1u8; 50_000]).unwrap();
    // a tracker on a loopback port nobody listens on: the announce is refused at once
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/announce", dead.local_addr().unwrap());
    drop(dead);
    let t = dir.path().join("d.torrent");
    std::fs::write(
        &t,
        TorrentBuilder::new(&data).announce(url).build().unwrap(),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let (code, _, err) = run(&[
        "download",
        t.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--port",
        "0",
        "--no-dht",
        "--timeout",
        "3",
    ]);
    assert_eq!(code, 1);
    let warning = err
        .lines()
        .find(|l| l.starts_with("ratorrent: warning: ") && l.contains("tracker"))
        .unwrap_or_else(|| panic!("no tracker warning: {err}"));
    assert!(
        warning.starts_with("ratorrent: warning: d.bin: tracker "),
        "{warning}"
    );
}

/// A save folder that cannot be made (here under `/proc`, where nothing can be created)
/// stops `download` at once, before any peer comes, with the cause and one hint in the
/// command line's words: not "0 B free" (a pseudo file system has no space to measure), not
/// the TUI's keys, not two hints.
#[test]
fn download_into_a_folder_that_cannot_be_made_fails_at_once_with_one_hint() {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let t = small_torrent(dir.path());
    let started = std::time::Instant::now();
    let (code, _, err) = run(&[
        "download",
        t.to_str().unwrap(),
        "-o",
        "/proc/ratorrent-nope/dl",
        "--port",
        "0",
        "--no-dht",
        "--timeout",
        "30",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("ratorrent: error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(
        line.contains("creating the save folder /proc/ratorrent-nope/dl"),
        "{line}"
    );
    assert!(line.contains("pass -o with another one"), "{line}");
    assert!(!line.contains("m (move)"), "no TUI key: {line}");
    assert!(!line.contains("free"), "not a space problem: {line}");
    assert_eq!(
        line.matches("create the folder").count(),
        1,
        "one hint: {line}"
    );
    assert!(line.ends_with("then run the command again)"), "{line}");
}

#[test]
fn an_unknown_encryption_is_refused_with_the_three_values() {
    let (code, _, err) = run(&["--encryption", "forced", "info", "x.torrent"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("prefer") && err.contains("require") && err.contains("disable"),
        "{err}"
    );
}
