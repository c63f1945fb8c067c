//! Moving a torrent's files: within a file system, across file systems (a tmpfs), a move
//! that fails for lack of space (nothing left at the target, the torrent goes on from where
//! it was), and "set location" for files the user moved (rechecked, then seeding). After
//! each, a real libtorrent leecher downloads from the new place.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use common::client::wait_row;
use common::mounts::Mount;
use common::payload;
use common::{LeechArgs, LtPeer, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, TorrentId, TorrentRow, TorrentState};
use ratorrent::engine::session::{self, SessionHandle};

async fn wait(h: &SessionHandle, id: TorrentId, what: &str, ok: impl Fn(&TorrentRow) -> bool) {
    wait_row(&h.client, id, what, Duration::from_secs(60), ok).await;
}

async fn leech(torrent: &Path, into: &Path, ip: u8) {
    let (t, d) = (torrent.to_path_buf(), into.to_path_buf());
    tokio::task::spawn_blocking(move || {
        let ip = Ipv4Addr::new(127, 0, 0, ip);
        let mut l = LtPeer::leech(&LeechArgs::new(&t, &d, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(60)).unwrap();
    })
    .await
    .unwrap();
}

async fn mv(h: &SessionHandle, id: TorrentId, to: &Path, move_data: bool) {
    h.client
        .move_storage(id, to.to_path_buf(), move_data)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_move_within_and_across_file_systems_and_failures_leave_nothing_behind() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let home = dir.path().join("home");
    let layout = payload::multi_file_layout(6 << 20);
    payload::write_tree(&home.join("p"), &layout, 8).unwrap();
    let pristine = dir.path().join("pristine");
    payload::write_tree(&pristine.join("p"), &layout, 8).unwrap();
    let torrent = dir.path().join("p.torrent");
    make_torrent(&home.join("p"), &torrent, &tracker.url(), Some(64 * 1024));
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: home.clone(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    let seeding = |r: &TorrentRow| r.state == TorrentState::Seeding;
    wait(&h, id, "seeding", seeding).await;

    // 1. same file system: renamed
    let second = dir.path().join("second");
    mv(&h, id, &second, true).await;
    wait_moved(&h, 1).await;
    wait(&h, id, "seeding from the new folder", seeding).await;
    assert!(!home.join("p").exists(), "nothing left behind");
    common::compare_trees(&pristine.join("p"), &second.join("p")).unwrap();
    leech(&torrent, &dir.path().join("l1"), 3).await;
    common::compare_trees(&pristine.join("p"), &dir.path().join("l1/p")).unwrap();

    // 2. a target too small: the move fails, nothing at the target, still seeding
    let small = dir.path().join("small");
    std::fs::create_dir_all(&small).unwrap();
    let small_mount = Mount::tmpfs(&small, "2m");
    mv(&h, id, &small, true).await;
    wait_event(&h, "moving failed").await;
    wait(&h, id, "back to seeding", seeding).await;
    let left: Vec<_> = walk(&small);
    assert!(
        left.is_empty(),
        "a failed move leaves nothing at the target: {left:?}"
    );
    common::compare_trees(&pristine.join("p"), &second.join("p")).unwrap();
    drop(small_mount);

    // 3. across file systems: copied, sizes checked, source deleted
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let _big = Mount::tmpfs(&other, "64m");
    mv(&h, id, &other, true).await;
    wait_moved(&h, 2).await;
    wait(&h, id, "seeding from the other file system", seeding).await;
    assert!(!second.join("p").exists());
    common::compare_trees(&pristine.join("p"), &other.join("p")).unwrap();
    leech(&torrent, &dir.path().join("l2"), 4).await;
    common::compare_trees(&pristine.join("p"), &dir.path().join("l2/p")).unwrap();

    // 4. set location: the user moved the files; the torrent is pointed there and rechecks
    let by_hand = dir.path().join("by-hand");
    std::fs::create_dir_all(&by_hand).unwrap();
    copy_tree(&other.join("p"), &by_hand.join("p"));
    std::fs::remove_dir_all(other.join("p")).unwrap();
    mv(&h, id, &by_hand, false).await;
    wait(&h, id, "rechecked and seeding", |r| {
        r.state == TorrentState::Seeding && r.pieces_have == r.pieces_total
    })
    .await;
    leech(&torrent, &dir.path().join("l3"), 5).await;
    common::compare_trees(&pristine.join("p"), &dir.path().join("l3/p")).unwrap();
    h.shutdown().await.unwrap();
}

/// A torrent with none of its files at its save folder (it failed there: the folder cannot
/// be created) is moved to a folder that holds a file at its file's path: the move is
/// refused (it would take that file for its own, unverified, and download over it), with
/// the hint to move without moving the files. A different user file stays byte-identical;
/// the same data, pointed at without moving, is checked and seeds without downloading
/// anything (a libtorrent seeder is there to download from, were it taken as missing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_a_torrent_without_its_data_never_overwrites_a_file_at_the_target() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let len = 1 << 20;
    let src = dir.path().join("src");
    payload::write_tree(&src, &[payload::FileSpec::new("f.bin", len)], 1).unwrap();
    let torrent = dir.path().join("f.torrent");
    make_torrent(
        &src.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let ip = Ipv4Addr::new(127, 0, 0, 6);
    let _seeder = LtPeer::seed(&common::SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));
    // a user file of the same name and size, other bytes
    let user = dir.path().join("user");
    payload::write_tree(&user, &[payload::FileSpec::new("f.bin", len)], 2).unwrap();
    let user_bytes = std::fs::read(user.join("f.bin")).unwrap();
    // the torrent's own, complete data
    let have = dir.path().join("have");
    copy_tree(&src, &have);
    // a save folder that cannot be created (as /proc/zz): the torrent stops in Error
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"a file, not a folder").unwrap();
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dir.path().join("unused"),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let hint = "move without moving the files";
    let request = AddRequest::new(torrent.clone()).download_dir(Some(blocker.join("sub")));
    let id = h.client.add(request).await.unwrap();
    let failed = |r: &TorrentRow| r.state == TorrentState::Error;
    wait(&h, id, "failed: no folder there", failed).await;

    // 1. different data at the target: refused, the user's file untouched
    mv(&h, id, &user, true).await;
    wait_count(&h, hint, 1).await;
    let paused = |r: &TorrentRow| r.state == TorrentState::Paused;
    wait(&h, id, "paused after the refused move", paused).await;
    assert!(
        std::fs::read(user.join("f.bin")).unwrap() == user_bytes,
        "the user's file is byte-identical"
    );

    // 2. the same data at the target: refused with the hint too; pointed at without
    // moving, it is checked and seeds without downloading anything
    mv(&h, id, &have, true).await;
    wait_count(&h, hint, 2).await;
    wait(&h, id, "paused after the refused move", paused).await;
    mv(&h, id, &have, false).await;
    wait(&h, id, "checked", |r| {
        r.pieces_have == r.pieces_total && r.state != TorrentState::Checking
    })
    .await;
    h.client.resume(id).await.unwrap();
    let row = wait_row(
        &h.client,
        id,
        "checked and seeding",
        Duration::from_secs(60),
        |r| r.state == TorrentState::Seeding && r.pieces_have == r.pieces_total,
    )
    .await;
    assert_eq!(row.downloaded, 0, "nothing downloaded again");
    common::compare_trees(&src, &have).unwrap();
    assert!(std::fs::read(user.join("f.bin")).unwrap() == user_bytes);
    h.shutdown().await.unwrap();
}

/// Wait until `n` "files moved" events were logged.
async fn wait_moved(h: &SessionHandle, n: usize) {
    wait_count(h, "files moved to", n).await;
}

async fn wait_event(h: &SessionHandle, needle: &str) {
    wait_count(h, needle, 1).await;
}

async fn wait_count(h: &SessionHandle, needle: &str, n: usize) {
    for _ in 0..600 {
        let events = h.client.recent_events().await.unwrap();
        if events.iter().filter(|e| e.message.contains(needle)).count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events = h.client.recent_events().await.unwrap();
    let log: Vec<&str> = events.iter().map(|e| e.message.as_str()).collect();
    panic!("no {n} events saying {needle:?}; the log: {log:#?}");
}

fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
                out.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (s, d) = (e.path(), to.join(e.file_name()));
        if s.is_dir() {
            copy_tree(&s, &d);
        } else {
            std::fs::copy(&s, &d).unwrap();
        }
    }
}

/// A magnet link still fetching its metadata has no files to move: its save folder is
/// set at once, but only to a folder that can be made; one that cannot (under `/proc`) is
/// refused with the reason in the log, and the folder stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_magnet_without_metadata_takes_only_a_save_folder_that_can_be_made() {
    let dir = temp_dir();
    let home = dir.path().join("home");
    let h = session::start(engine_config(home.to_str().unwrap()))
        .await
        .unwrap();
    let link = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=m";
    let id = h
        .client
        .add(AddRequest::new(ratorrent::api::AddSource::Magnet(
            link.to_owned(),
        )))
        .await
        .unwrap();
    wait(&h, id, "fetching metadata", |r| {
        r.state == TorrentState::FetchingMetadata
    })
    .await;
    let bad = Path::new("/proc/ratorrent-cannot-make-this/dl");
    mv(&h, id, bad, true).await;
    wait_event(
        &h,
        "cannot use /proc/ratorrent-cannot-make-this/dl as its save folder",
    )
    .await;
    let good = dir.path().join("elsewhere").join("dl");
    mv(&h, id, &good, true).await;
    wait_event(&h, &format!("save folder set to {}", good.display())).await;
    assert!(good.is_dir(), "the folder was made");
    let events = h.client.recent_events().await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| e.message.contains("save folder set to /proc")),
        "the unusable folder was never taken"
    );
    h.shutdown().await.unwrap();
}

/// A torrent whose save folder cannot be made (under `/proc`) fails when it starts, says
/// so once in the log (its state change was logged twice), and is moved out of the error
/// with move storage (then resumed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_folder_that_cannot_be_made_fails_once_and_a_move_fixes_it() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let dir = temp_dir();
    let torrent = one_file_torrent(dir.path(), "d.bin", 40_000);
    let config = engine_config("/proc/ratorrent-nope/dl");
    let h = session::start(config).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(ratorrent::api::AddSource::File(torrent)))
        .await
        .unwrap();
    wait(&h, id, "error", |r| r.state == TorrentState::Error).await;
    let events = h.client.recent_events().await.unwrap();
    let errors: Vec<&str> = events
        .iter()
        .filter(|e| e.message.contains("creating the save folder"))
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let good = dir.path().join("dl");
    mv(&h, id, &good, true).await;
    // moved out of the error it is paused, as after any move of a stopped torrent
    wait(&h, id, "paused", |r| r.state == TorrentState::Paused).await;
    h.client.resume(id).await.unwrap();
    wait(&h, id, "downloading again", |r| {
        r.state == TorrentState::Downloading
    })
    .await;
    assert!(good.is_dir());
    h.shutdown().await.unwrap();
}

/// A relative save folder (`-o dl`, a folder typed in the add dialog) is made absolute
/// against the folder the engine runs in, once: after a restart from elsewhere the torrent
/// still points at its data. (Added paused: nothing is created in the working folder.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_save_folders_are_made_absolute_when_given() {
    let dir = temp_dir();
    let torrent = one_file_torrent(dir.path(), "r.bin", 30_000);
    let config = engine_config("ratorrent-relative-default");
    let cwd = std::env::current_dir().unwrap();
    let h = session::start(config).await.unwrap();
    let add = |dir: Option<&str>| {
        let mut req = AddRequest::new(ratorrent::api::AddSource::File(torrent.clone()));
        req.paused = true;
        req.download_dir = dir.map(Into::into);
        req
    };
    let id = h.client.add(add(None)).await.unwrap();
    wait(&h, id, "the default folder, absolute", |r| {
        r.save_path == cwd.join("ratorrent-relative-default")
    })
    .await;
    h.client.remove(id, false).await.unwrap();
    let id = h.client.add(add(Some("rel/dir"))).await.unwrap();
    wait(&h, id, "the given folder, absolute", |r| {
        r.save_path == cwd.join("rel/dir")
    })
    .await;
    h.shutdown().await.unwrap();
    assert!(!cwd.join("ratorrent-relative-default").exists());
    assert!(!cwd.join("rel").exists());
}

/// A .torrent of one file `name` of `size` bytes written in `dir`; its path.
fn one_file_torrent(dir: &Path, name: &str, size: usize) -> std::path::PathBuf {
    let data = dir.join(name);
    std::fs::write(&data, vec![5u8; size]).unwrap();
    let torrent = dir.join(format!("{name}.torrent"));
    std::fs::write(
        &torrent,
        ratorrent::metainfo::TorrentBuilder::new(&data)
            .build()
            .unwrap(),
    )
    .unwrap();
    torrent
}

/// The engine's settings for these tests: downloads into `download_dir`, any port, no DHT.
fn engine_config(download_dir: &str) -> ratorrent::config::engine::EngineConfig {
    ratorrent::config::engine::EngineConfig {
        download_dir: download_dir.into(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    }
}
