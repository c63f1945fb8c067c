//! The watch folder against a real in-process session: what is dropped is added and
//! renamed, what is broken is renamed `.invalid`, duplicates are reported once, a file
//! being written is not read half-way, the folder may go away and come back, and
//! thousands of files dropped at once all end `.added`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use ratorrent::config::engine::EngineConfig;
use ratorrent::engine::session::{self, SessionHandle};
use ratorrent::metainfo::TorrentBuilder;
use ratorrent::watch::{self, SETTLE, WatchOptions};

fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

async fn start_session(tmp: &Path) -> SessionHandle {
    let config = EngineConfig {
        listen_port: 0,
        download_dir: tmp.join("dl"),
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..EngineConfig::default()
    };
    session::start(config).await.expect("session starts")
}

fn spawn_watcher(dir: &Path, handle: &SessionHandle) -> tokio::task::JoinHandle<()> {
    let opts = WatchOptions {
        dir: dir.to_path_buf(),
        seed: true,
    };
    tokio::spawn(watch::run(opts, handle.client.clone()))
}

/// A real .torrent (TorrentBuilder) over a small file named `name` with `content`.
fn built_torrent(src: &Path, name: &str, content: &[u8]) -> Vec<u8> {
    std::fs::create_dir_all(src).unwrap();
    let file = src.join(name);
    std::fs::write(&file, content).unwrap();
    TorrentBuilder::new(&file).build().unwrap()
}

/// A minimal single-file v1 torrent, bencoded by hand: distinct names give distinct info
/// hashes. No payload exists anywhere.
fn tiny_torrent(name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    write!(
        b,
        "d4:infod6:lengthi5e4:name{}:{name}12:piece lengthi16384e6:pieces20:",
        name.len()
    )
    .unwrap();
    b.extend_from_slice(&[0x5a; 20]);
    b.extend_from_slice(b"ee");
    b
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Wait until `dir` holds every name in `want`; returns the listing.
async fn wait_for_names(dir: &Path, want: &[&str], timeout: Duration) -> BTreeSet<String> {
    let start = Instant::now();
    loop {
        let now = names(dir);
        if want.iter().all(|w| now.contains(*w)) {
            return now;
        }
        assert!(
            start.elapsed() < timeout,
            "after {timeout:?}, {} holds {now:?}, not all of {want:?}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the session lists at least `n` torrents; returns their names.
async fn wait_for_rows(handle: &SessionHandle, n: usize, timeout: Duration) -> Vec<String> {
    let start = Instant::now();
    loop {
        let rows: Vec<String> = handle
            .client
            .snapshot()
            .rows
            .iter()
            .map(|r| r.name.clone())
            .collect();
        if rows.len() >= n {
            return rows;
        }
        assert!(
            start.elapsed() < timeout,
            "after {timeout:?} the session lists {} torrents, not {n}",
            rows.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn shutdown(handle: SessionHandle, watcher: tokio::task::JoinHandle<()>) {
    let _ = tokio::time::timeout(Duration::from_secs(10), handle.client.shutdown()).await;
    drop(handle);
    // the watcher ends by itself once the engine is gone
    tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the watcher ends when the session does")
        .unwrap();
}

const T: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_files_are_added_or_refused_and_renamed() {
    init_logging();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dir = tmp.path().join("watch");
    std::fs::create_dir(&dir).unwrap();

    // there before the watcher starts: picked up by its first scan
    std::fs::write(
        dir.join("early.torrent"),
        built_torrent(&src, "early.bin", b"early payload"),
    )
    .unwrap();
    let handle = start_session(tmp.path()).await;
    let watcher = spawn_watcher(&dir, &handle);
    wait_for_names(&dir, &["early.torrent.added"], T).await;

    // written in place (close after write), broken, a magnet, renamed in, ignored names
    let a = built_torrent(&src, "a.bin", b"alpha payload");
    std::fs::write(dir.join("a.torrent"), &a).unwrap();
    std::fs::write(dir.join("bad.torrent"), b"this is not bencode").unwrap();
    std::fs::write(
        dir.join("link.magnet"),
        "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=x\n",
    )
    .unwrap();
    let staged = tmp.path().join("moved.torrent");
    std::fs::write(&staged, built_torrent(&src, "moved.bin", b"moved payload")).unwrap();
    std::fs::rename(&staged, dir.join("moved.torrent")).unwrap();
    // a hard link (`cp -l` from a library): created complete, never written or closed
    let library = tmp.path().join("linked.torrent");
    std::fs::write(
        &library,
        built_torrent(&src, "linked.bin", b"linked payload"),
    )
    .unwrap();
    std::fs::hard_link(&library, dir.join("linked.torrent")).unwrap();
    std::fs::write(dir.join("broken.magnet"), "magnet:?dn=no-info-hash").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not a torrent, left alone").unwrap();
    std::fs::write(dir.join(".hidden.torrent"), &a).unwrap();
    wait_for_names(
        &dir,
        &[
            "a.torrent.added",
            "bad.torrent.invalid",
            "broken.magnet.invalid",
            "link.magnet.added",
            "linked.torrent.added",
            "moved.torrent.added",
        ],
        T,
    )
    .await;

    // both refusals are in the session log, the broken .magnet refused by the watch folder
    // itself as well as the broken .torrent refused by the engine
    let events = handle.client.recent_events().await.unwrap();
    let refused: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == ratorrent::api::EventKind::AddRefused)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (file, why) in [
        ("bad.torrent", "not a valid torrent"),
        ("broken.magnet", "has no \"xt=urn:btih:\""),
    ] {
        let want = format!("not added: {}: ", dir.join(file).display());
        assert!(
            refused
                .iter()
                .any(|m| m.starts_with(&want) && m.contains(why)),
            "{file}: {refused:?}"
        );
    }

    // the same torrent again, under another name: reported, renamed .added, not listed twice
    std::fs::write(dir.join("a-again.torrent"), &a).unwrap();
    wait_for_names(&dir, &["a-again.torrent.added"], T).await;

    // written slowly through one handle: never read before it is closed
    let slow = built_torrent(&src, "slow.bin", &vec![7u8; 100_000]);
    let (head, tail) = slow.split_at(slow.len() / 2);
    let mut f = std::fs::File::create(dir.join("slow.torrent")).unwrap();
    f.write_all(head).unwrap();
    f.flush().unwrap();
    tokio::time::sleep(SETTLE * 3).await;
    assert!(
        names(&dir).contains("slow.torrent"),
        "a half-written file was touched: {:?}",
        names(&dir)
    );
    f.write_all(&tail[..tail.len() / 2]).unwrap();
    tokio::time::sleep(SETTLE * 2).await;
    assert!(names(&dir).contains("slow.torrent"), "{:?}", names(&dir));
    f.write_all(&tail[tail.len() / 2..]).unwrap();
    drop(f);
    let all = wait_for_names(&dir, &["slow.torrent.added"], T).await;

    let want: BTreeSet<String> = [
        ".hidden.torrent",
        "a-again.torrent.added",
        "a.torrent.added",
        "bad.torrent.invalid",
        "broken.magnet.invalid",
        "early.torrent.added",
        "link.magnet.added",
        "linked.torrent.added",
        "moved.torrent.added",
        "notes.txt",
        "slow.torrent.added",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(all, want);

    // the magnet is listed by its dn while it waits for its metadata
    let mut rows = wait_for_rows(&handle, 6, T).await;
    rows.sort();
    assert_eq!(
        rows,
        [
            "a.bin",
            "early.bin",
            "linked.bin",
            "moved.bin",
            "slow.bin",
            "x"
        ]
    );
    assert!(library.exists(), "the linked original keeps its name");
    // nothing loops on its own renames: a while later nothing changed
    tokio::time::sleep(SETTLE * 3).await;
    assert_eq!(names(&dir), want);
    assert_eq!(handle.client.snapshot().rows.len(), 6);

    shutdown(handle, watcher).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_folder_is_created_and_one_deleted_is_watched_again_when_back() {
    init_logging();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("not-yet").join("watch");
    let handle = start_session(tmp.path()).await;
    let watcher = spawn_watcher(&dir, &handle);

    let t0 = Instant::now();
    while !dir.is_dir() {
        assert!(t0.elapsed() < T, "the watch folder was not created");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::write(dir.join("one.torrent"), tiny_torrent("one")).unwrap();
    wait_for_names(&dir, &["one.torrent.added"], T).await;

    std::fs::remove_dir_all(&dir).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !dir.exists(),
        "a deleted folder is not re-created behind the user's back"
    );
    std::fs::create_dir(&dir).unwrap();
    // dropped right away (the watcher is not watching yet): its scan finds it when back
    std::fs::write(dir.join("two.torrent"), tiny_torrent("two")).unwrap();
    wait_for_names(&dir, &["two.torrent.added"], T).await;
    // and the new folder is watched: a later drop is seen
    std::fs::write(dir.join("three.torrent"), tiny_torrent("three")).unwrap();
    wait_for_names(&dir, &["three.torrent.added"], T).await;

    let mut rows = wait_for_rows(&handle, 3, T).await;
    rows.sort();
    assert_eq!(rows, ["one", "three", "two"]);
    shutdown(handle, watcher).await;
}

/// Half are in the folder when the watcher starts, half are dropped while it adds the
/// first half. `RATORRENT_WATCH_N=10000` runs the library benchmark's size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_torrents_dropped_at_once_all_end_added() {
    init_logging();
    let n: usize = std::env::var("RATORRENT_WATCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let (at_start, dropped) = (n / 2, n - n / 2);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("watch");
    std::fs::create_dir(&dir).unwrap();
    let file = |i: usize| dir.join(format!("lib-{i:05}.torrent"));
    for i in 0..at_start {
        std::fs::write(file(i), tiny_torrent(&format!("lib-{i:05}"))).unwrap();
    }
    let handle = start_session(tmp.path()).await;
    let t0 = Instant::now();
    let watcher = spawn_watcher(&dir, &handle);
    // the second half lands while the first is being added: as fast as a `cp` can write
    for i in at_start..at_start + dropped {
        std::fs::write(file(i), tiny_torrent(&format!("lib-{i:05}"))).unwrap();
    }
    let total = n;
    let bound = Duration::from_secs(120).max(Duration::from_millis(30 * n as u64));
    loop {
        let now = names(&dir);
        let added = now.iter().filter(|n| n.ends_with(".torrent.added")).count();
        if added == total {
            assert_eq!(now.len(), total, "only .added files: {now:?}");
            break;
        }
        assert!(
            t0.elapsed() < bound,
            "after {bound:?} only {added} of {total} are .added"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_added = t0.elapsed();
    let rows = wait_for_rows(&handle, total, T).await;
    assert_eq!(rows.len(), total);
    let distinct: BTreeSet<&String> = rows.iter().collect();
    assert_eq!(distinct.len(), total, "each torrent is listed once");
    eprintln!(
        "{total} torrents: all .added after {:.2} s, listed after {:.2} s",
        all_added.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    shutdown(handle, watcher).await;
}
