//! Unsafe names are never printed raw (issue 16 item 3): for torrents whose name or file
//! paths hold `..`, `/` or `\` inside a component (a hidden parent), absolute paths, drive
//! letters, control characters, text-direction controls, bytes that are not UTF-8, names of
//! only dots, empty components, duplicates and over-long names, `ratorrent info` and the
//! TUI (list, General tab, Files tab) show the name and paths used on disk and say what was
//! changed. Through the real binary; the torrents are built here, in every variant of the
//! class (also in the `path.utf-8` / `name.utf-8` fields, which are preferred).

mod common;
mod path_support;

use std::path::Path;
use std::time::Duration;

use common::tmux::TmuxPane;
use path_support::B;

const PIECE: u64 = 16 * 1024;

fn s(b: &[u8]) -> B {
    B::S(b.to_vec())
}

fn path(parts: &[&[u8]]) -> B {
    B::L(parts.iter().map(|p| s(p)).collect())
}

/// A dictionary (written with its keys sorted).
fn d(pairs: Vec<(&str, B)>) -> B {
    B::D(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

/// One file of a built torrent: path components and length in bytes.
type FileEntry<'a> = (&'a [&'a [u8]], u64);

/// A multi-file torrent named `name` with `files` (path components, length), every file
/// `length` bytes; `utf8` puts the names in `name.utf-8` / `path.utf-8` beside harmless
/// legacy fields, as some generators do.
fn multi(name: &[u8], files: &[FileEntry], utf8: bool) -> Vec<u8> {
    let total: u64 = files.iter().map(|(_, l)| l).sum();
    let entries = files
        .iter()
        .map(|(p, l)| {
            let mut entry = vec![("length", B::I(*l as i64))];
            if utf8 {
                entry.push(("path", path(&[b"legacy"])));
                entry.push(("path.utf-8", path(p)));
            } else {
                entry.push(("path", path(p)));
            }
            d(entry)
        })
        .collect();
    let mut info = vec![
        ("files", B::L(entries)),
        ("piece length", B::I(PIECE as i64)),
        ("pieces", B::S(vec![7; 20 * total.div_ceil(PIECE) as usize])),
    ];
    if utf8 {
        info.push(("name", s(b"legacy")));
        info.push(("name.utf-8", s(name)));
    } else {
        info.push(("name", s(name)));
    }
    d(vec![("info", d(info))]).encode()
}

/// A single-file torrent named `name`, 1000 bytes.
fn single(name: &[u8]) -> Vec<u8> {
    let info = vec![
        ("length", B::I(1000)),
        ("name", s(name)),
        ("piece length", B::I(PIECE as i64)),
        ("pieces", B::S(vec![7; 20])),
    ];
    d(vec![("info", d(info))]).encode()
}

/// `ratorrent info` of `torrent` (written to a file first): its standard output.
fn info(dir: &Path, file: &str, torrent: &[u8]) -> String {
    let p = dir.join(file);
    std::fs::write(&p, torrent).unwrap();
    let out = common::rat::command(dir)
        .arg("info")
        .arg(&p)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{file}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Nothing of the torrent's raw unsafe text reaches the terminal.
fn assert_nothing_raw(what: &str, out: &str) {
    for bad in [
        "../", "/../", "..\\", "\\", "\u{1b}", "\u{7}", "\r", "\u{202e}", "\u{0}", "C:\\", "C:/",
    ] {
        assert!(!out.contains(bad), "{what}: {bad:?} printed:\n{out}");
    }
    for word in out.split_whitespace() {
        assert!(!word.ends_with("/.."), "{what}: {word:?} printed:\n{out}");
    }
}

#[test]
fn info_prints_the_paths_used_and_what_was_changed() {
    let home = common::temp_dir();
    let long = format!("{}.mkv", "x".repeat(300));
    let long = [long.as_bytes()];
    let rtl = ["\u{202e}gnp.exe\0".as_bytes()];
    // what, files, the path used, what `info` says was changed
    let cases: Vec<(&str, Vec<FileEntry>, &str, &str)> = vec![
        (
            "parent",
            vec![(&[b"..", b"..", b"etc", b"passwd"], 10)],
            "t/etc/passwd",
            "'..' dropped",
        ),
        (
            "hidden parent",
            vec![(&[b"foo/../../../bar", b"x"], 10)],
            "t/foo......bar/x",
            "'..' joined to a name by slashes neutralised",
        ),
        (
            "hidden parent, backslashes",
            vec![(&[b"..\\..\\win.ini"], 10)],
            "t/....win.ini",
            "'..' joined to a name by slashes neutralised",
        ),
        (
            "absolute",
            vec![(&[b"/etc/cron.d", b"job"], 10)],
            "t/etccron.d/job",
            "absolute path made relative",
        ),
        (
            "absolute, one component",
            vec![(&[b"/", b"/", b"bar"], 10)],
            "t/bar",
            "absolute path made relative",
        ),
        (
            "drive, absolute",
            vec![(&[b"C:\\Windows", b"x"], 10)],
            "t/C:Windows/x",
            "absolute path made relative",
        ),
        (
            "drive letter",
            vec![(&[b"D:", b"x"], 10)],
            "t/D_/x",
            "drive letter",
        ),
        (
            "slash inside",
            vec![(&[b"a/b"], 10)],
            "t/ab",
            "slashes inside a name removed",
        ),
        (
            "terminal escape",
            vec![(&[b"red\x1b[31m\x07.txt"], 10)],
            "t/red_[31m_.txt",
            "control characters replaced by '_'",
        ),
        (
            "carriage return",
            vec![(&[b"Icon\r"], 10)],
            "t/Icon_",
            "control characters replaced by '_'",
        ),
        (
            "right-to-left override and NUL",
            vec![(&rtl, 10)],
            "t/gnp.exe",
            "NUL and text-direction characters removed",
        ),
        (
            "not UTF-8",
            vec![(&[b"caf\xff.txt"], 10)],
            "t/caf_.txt",
            "bytes that are not UTF-8 replaced by '_'",
        ),
        (
            "only dots",
            vec![(&[b"...", b"x"], 10)],
            "t/_/x",
            "a name of only dots and spaces replaced by '_'",
        ),
        (
            "empty and dot",
            vec![(&[b"", b".", b"x"], 10)],
            "t/x",
            "empty or '.' folder dropped",
        ),
        (
            "nothing left",
            vec![(&[b"..", b"."], 10), (&[b"ok"], 10)],
            "t/_",
            "nothing usable left: named '_'",
        ),
        (
            "duplicate",
            vec![(&[b"a.bin"], 10), (&[b"A.bin"], 10)],
            "t/A.1.bin",
            "a counter added: another file has the same path",
        ),
        (
            "long",
            vec![(&long, 10)],
            ".mkv",
            "name longer than 240 bytes shortened",
        ),
    ];
    for (what, files, used, why) in &cases {
        for utf8 in [false, true] {
            if utf8 && *what == "not UTF-8" {
                continue; // a `path.utf-8` that is not UTF-8 is ignored: `path` is used
            }
            let what = format!("{what}{}", if utf8 { " (path.utf-8)" } else { "" });
            let out = info(home.path(), "t.torrent", &multi(b"t", files, utf8));
            let line = out
                .lines()
                .find(|l| l.contains(used) && l.contains("(changed from the torrent's path: "))
                .unwrap_or_else(|| panic!("{what}: no line with {used:?} and the change:\n{out}"));
            assert!(line.contains(why), "{what}: {why:?} not in {line:?}");
            assert!(out.contains("Name:          t\n"), "{what}:\n{out}");
            assert_nothing_raw(&what, &out);
        }
    }
}

#[test]
fn info_prints_the_name_used_and_what_was_changed() {
    let home = common::temp_dir();
    for (what, name, used, why) in [
        (
            "parent",
            &b"../sample.bin"[..],
            "..sample.bin",
            "'..' joined to a name by slashes neutralised",
        ),
        (
            "absolute",
            b"/tmp/x.bin",
            "tmpx.bin",
            "absolute path made relative",
        ),
        (
            "escape",
            b"\x1b]0;pwned\x07.iso",
            "_]0;pwned_.iso",
            "control characters replaced by '_'",
        ),
        (
            "dot dot",
            b"..",
            "",
            "'..' dropped; nothing usable left: named after the info hash",
        ),
        ("drive", b"C:", "C_", "drive letter"),
    ] {
        for torrent in [single(name), multi(name, &[(&[b"f"], 10)], false)] {
            let out = info(home.path(), "n.torrent", &torrent);
            let line = out.lines().next().unwrap();
            assert!(line.starts_with("Name:          "), "{what}: {out}");
            assert!(line.contains(used), "{what}: {used:?} not in {line:?}");
            assert!(
                line.contains(&format!("(changed from the torrent's name: {why}")),
                "{what}: {line:?}"
            );
            assert_nothing_raw(what, &out);
        }
    }
    // a nameless torrent is named after its info hash, in the list of files too
    let out = info(home.path(), "n.torrent", &single(b".."));
    let hash = out
        .lines()
        .find_map(|l| l.strip_prefix("Info hash v1:  "))
        .unwrap()
        .to_owned();
    assert!(
        out.starts_with(&format!("Name:          {hash}  (")),
        "{out}"
    );
    assert!(out.contains(&format!("\n  {hash}  1000 bytes\n")), "{out}");
    // a safe name is printed as it is, with no note
    let out = info(
        home.path(),
        "n.torrent",
        &multi(b"Album", &[(&[b"01.flac"], 10)], false),
    );
    assert!(out.starts_with("Name:          Album\n"), "{out}");
    assert!(out.contains("\n  Album/01.flac  10 bytes\n"), "{out}");
    assert!(!out.contains("changed"), "{out}");
}

/// The TUI shows the name used in the list and the General tab (with a "Renamed" line
/// saying what was changed) and the paths used in the Files tab, each with what was
/// changed; the raw names never reach the screen.
#[test]
fn tui_shows_the_names_used_and_what_was_changed() {
    let dir = common::temp_dir();
    let torrent = dir.path().join("hostile.torrent");
    std::fs::write(
        &torrent,
        multi(
            b"../../top",
            &[
                (&[b"..", b"..", b"etc", b"passwd"], 100),
                (&[b"sub/../../evil.sh"], 100),
                (&[b"bell\x07\x1b[2J.txt"], 100),
            ],
            false,
        ),
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("listen_port = {}\n", common::free_port())).unwrap();
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
        "unsafe",
        &cmd,
        &[
            ("LANG", Path::new("C.UTF-8")),
            ("XDG_STATE_HOME", &state),
            ("XDG_DATA_HOME", &data_home),
        ],
        140,
        30,
    );
    let list = tmux.wait_for("....top", Duration::from_secs(20));
    assert!(!list.contains("../"), "{list}");

    tmux.keys("Enter");
    let general = tmux.wait_for("Renamed", Duration::from_secs(10));
    assert!(general.contains("....top"), "{general}");
    assert!(
        general.contains("changed from the torrent's name: '..' joined to a name by slashes"),
        "{general}"
    );
    assert!(!general.contains("../"), "{general}");

    // General -> Peers -> Files
    tmux.keys("Tab");
    tmux.wait_for("no peers connected", Duration::from_secs(10));
    tmux.keys("Tab");
    let files = tmux.wait_for("passwd", Duration::from_secs(10));
    for needle in [
        "etc/",
        "passwd  (changed: '..' dropped)",
        "sub....evil.sh  (changed: '..' joined to a name by slashes",
        "bell__[2J.txt  (changed: control characters replaced by '_')",
    ] {
        assert!(files.contains(needle), "{needle:?} not in\n{files}");
    }
    assert!(!files.contains("../"), "{files}");
    tmux.keys("Escape");
    tmux.keys("q");
    tmux.wait_until("quit or the question", Duration::from_secs(10), |s| {
        s.contains("Quit ratorrent?") || !tmux.alive()
    });
    if tmux.alive() {
        tmux.keys("y");
    }
    assert!(tmux.wait_exit(Duration::from_secs(10)), "quit");
    // nothing was written outside the download folder
    assert!(!dir.path().join("etc").exists() && !dir.path().join("top").exists());
}
