//! Disk faults under a running session, against real libtorrent seeders (root only: real
//! tmpfs and read-only mounts, as in CI). A full disk, a read-only folder and a file deleted
//! mid-download stop only the torrent concerned, with the cause and what to do; the other
//! torrents go on; resuming after the fix works without a restart and ends byte-exact. The
//! disk guard pauses a download before its volume is full and resumes it when space returns.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::client::wait_row;
use common::mounts::Mount;
use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir,
};
use ratorrent::api::{AddRequest, TorrentErrorKind, TorrentId, TorrentRow, TorrentState};
use ratorrent::engine::session::{self, SessionHandle};

struct Payload {
    torrent: PathBuf,
    src: PathBuf,
    name: String,
    _seeder: LtPeer,
}

fn payload(dir: &Path, name: &str, len: u64, seed: u64, ip: u8, rate: Option<u64>) -> Payload {
    let tracker_url = TRACKER.with(|t| t.url());
    let src = dir.join(format!("src-{name}"));
    payload::write_tree(&src, &[FileSpec::new(name, len)], seed).unwrap();
    let torrent = dir.join(format!("{name}.torrent"));
    make_torrent(&src.join(name), &torrent, &tracker_url, Some(64 * 1024));
    let ip = Ipv4Addr::new(127, 0, 0, ip);
    let mut args = SeedArgs::new(&torrent, &src, ip, free_port_on(ip));
    args.upload_limit = rate;
    Payload {
        torrent,
        src,
        name: name.into(),
        _seeder: LtPeer::seed(&args),
    }
}

thread_local! {
    static TRACKER: TestTracker = TestTracker::start();
}

async fn start(min_free: u64) -> SessionHandle {
    let config = ratorrent::config::engine::EngineConfig {
        listen_port: 0,
        min_free_space: min_free,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    session::start(config).await.unwrap()
}

async fn add(h: &SessionHandle, p: &Payload, dir: &Path) -> TorrentId {
    let request = AddRequest::new(p.torrent.clone()).download_dir(Some(dir.to_path_buf()));
    h.client.add(request).await.unwrap()
}

async fn wait(
    h: &SessionHandle,
    id: TorrentId,
    what: &str,
    ok: impl Fn(&TorrentRow) -> bool,
) -> TorrentRow {
    wait_row(&h.client, id, what, Duration::from_secs(90), ok).await
}

async fn stop(h: SessionHandle) {
    h.shutdown().await.unwrap();
}

fn same(p: &Payload, dir: &Path) {
    common::compare_files(&p.src.join(&p.name), &dir.join(&p.name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_stops_only_that_torrent_and_resume_after_freeing_space_completes_it() {
    let dir = temp_dir();
    let full = dir.path().join("full");
    let other = dir.path().join("other");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let mount = Mount::tmpfs(&full, "4m");
    let a = payload(dir.path(), "a.bin", 12 << 20, 1, 2, None);
    let b = payload(dir.path(), "b.bin", 6 << 20, 2, 3, None);
    let h = start(0).await;
    let ia = add(&h, &a, &full).await;
    let ib = add(&h, &b, &other).await;
    let row = wait(&h, ia, "a fails: disk full", |r| {
        r.state == TorrentState::Error
    })
    .await;
    let e = row.error.expect("a cause");
    assert_eq!(e.kind, TorrentErrorKind::NoSpace, "{e:?}");
    assert!(
        e.kind.hint().contains("free some space"),
        "{}",
        e.kind.hint()
    );
    wait(&h, ib, "b goes on", |r| r.state == TorrentState::Seeding).await;
    same(&b, &other);
    // the user frees space; resume, no restart
    mount.resize_tmpfs("32m");
    h.client.resume(ia).await.unwrap();
    wait(&h, ia, "a completes after the fix", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    same(&a, &full);
    let disk_lines = h
        .client
        .recent_events()
        .await
        .unwrap()
        .iter()
        .filter(|e| e.torrent == Some(ia) && e.message.contains("space"))
        .count();
    assert!(disk_lines <= 3, "one error line, not fifty: {disk_lines}");
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_folder_stops_the_torrent_and_resume_after_making_it_writable_completes_it() {
    let dir = temp_dir();
    let backing = dir.path().join("backing");
    let ro = dir.path().join("ro");
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&ro).unwrap();
    let mount = Mount::read_only_bind(&backing, &ro);
    let a = payload(dir.path(), "r.bin", 4 << 20, 3, 4, None);
    let h = start(0).await;
    let ia = add(&h, &a, &ro).await;
    let row = wait(&h, ia, "read-only", |r| r.state == TorrentState::Error).await;
    let e = row.error.unwrap();
    assert!(
        matches!(
            e.kind,
            TorrentErrorKind::ReadOnly | TorrentErrorKind::PermissionDenied
        ),
        "{e:?}"
    );
    mount.make_writable();
    h.client.resume(ia).await.unwrap();
    wait(&h, ia, "completes once writable", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    same(&a, &ro);
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_deleted_mid_download_is_an_error_not_complete_and_resume_fetches_it_again() {
    let dir = temp_dir();
    let dst = dir.path().join("dst");
    let a = payload(dir.path(), "d.bin", 8 << 20, 4, 5, Some(2 << 20));
    let h = start(0).await;
    let ia = add(&h, &a, &dst).await;
    wait(&h, ia, "under way", |r| r.done > 1 << 20).await;
    std::fs::remove_dir_all(&dst).unwrap();
    let row = wait(&h, ia, "files missing", |r| r.state == TorrentState::Error).await;
    assert_eq!(row.error.unwrap().kind, TorrentErrorKind::FilesMissing);
    std::fs::create_dir_all(&dst).unwrap();
    h.client.resume(ia).await.unwrap();
    wait(&h, ia, "fetched again", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    same(&a, &dst);
    stop(h).await;
}

/// Complete data for a single-file torrent `name` under `dir/seed`, with no other seeder:
/// returns (the .torrent, the data folder).
fn own_data(dir: &Path, name: &str, len: u64, seed: u64) -> (PathBuf, PathBuf) {
    let data = dir.join("seed");
    payload::write_tree(&data, &[FileSpec::new(name, len)], seed).unwrap();
    let torrent = dir.join(format!("{name}.torrent"));
    let url = TRACKER.with(|t| t.url());
    make_torrent(&data.join(name), &torrent, &url, Some(64 * 1024));
    (torrent, data)
}

/// A libtorrent leecher on 127.0.0.`ip` for `torrent`, into `dir`.
fn leecher(torrent: &Path, dir: &Path, ip: u8) -> LtPeer {
    let ip = Ipv4Addr::new(127, 0, 0, ip);
    LtPeer::leech(&LeechArgs::new(torrent, dir, ip, free_port_on(ip)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verified_file_deleted_while_seeding_stops_the_torrent_as_files_missing() {
    let dir = temp_dir();
    let (torrent, data) = own_data(dir.path(), "s.bin", 2 << 20, 7);
    let h = start(0).await;
    let request = AddRequest::new(torrent.clone()).download_dir(Some(data.clone()));
    let id = h.client.add(request).await.unwrap();
    wait(&h, id, "seeding", |r| r.state == TorrentState::Seeding).await;
    std::fs::remove_file(data.join("s.bin")).unwrap();
    let _leech = leecher(&torrent, &dir.path().join("leech"), 7);
    let row = wait(&h, id, "files missing, not 99.8% Downloading", |r| {
        r.state == TorrentState::Error
    })
    .await;
    let e = row.error.expect("a cause");
    assert_eq!(e.kind, TorrentErrorKind::FilesMissing, "{e:?}");
    assert!(e.message.contains("s.bin"), "names the file: {}", e.message);
    assert!(
        e.kind.hint().contains("put the files back"),
        "{}",
        e.kind.hint()
    );
    // putting the file back and resuming rechecks and seeds again
    payload::write_tree(&data, &[FileSpec::new("s.bin", 2 << 20)], 7).unwrap();
    h.client.resume(id).await.unwrap();
    wait(&h, id, "rechecked and seeding", |r| {
        r.state == TorrentState::Seeding && r.pieces_have == r.pieces_total
    })
    .await;
    stop(h).await;
}

/// A recheck (`c`) of a seeding torrent whose file was deleted warns that the verified
/// pieces are gone and why, instead of quietly starting a download from 0 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recheck_that_finds_the_files_gone_says_so() {
    let dir = temp_dir();
    let (torrent, data) = own_data(dir.path(), "r.bin", 1 << 20, 8);
    let h = start(0).await;
    let request = AddRequest::new(torrent.clone()).download_dir(Some(data.clone()));
    let id = h.client.add(request).await.unwrap();
    wait(&h, id, "seeding", |r| r.state == TorrentState::Seeding).await;
    let mut events = h.client.subscribe();
    std::fs::remove_file(data.join("r.bin")).unwrap();
    h.client.recheck(id).await.unwrap();
    let warned = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await {
                Ok(ev) if ev.message.contains("pieces verified before are gone") => break ev,
                Ok(_) => {}
                Err(e) => panic!("events ended: {e}"),
            }
        }
    })
    .await
    .expect("a warning within 30 s");
    assert_eq!(warned.torrent, Some(id));
    assert_eq!(warned.level, ratorrent::api::EventLevel::Warn);
    assert!(
        warned
            .message
            .contains("16 pieces verified before are gone (1 of 1 files missing)"),
        "{}",
        warned.message
    );
    stop(h).await;
}

/// Announces of `ih` with `event=started` received after `since`.
fn started_since(ih: &ratorrent::metainfo::InfoHash, since: std::time::Instant) -> Vec<String> {
    TRACKER.with(|t| {
        t.announces_for(ih)
            .into_iter()
            .filter(|a| a.at >= since && a.event == common::Event::Started)
            .map(|a| format!("started left={:?}", a.left))
            .collect()
    })
}

/// A complete torrent whose file was moved away while it was paused is noticed before it
/// announces (a stat, no hashing): resuming it, and starting the session with it, fails it
/// as "files missing" naming the file, with no `started` to the tracker; a failed torrent
/// keeps its verified pieces across a restart although its files changed; putting the file
/// back and resuming rechecks it and seeds. Real tracker, in-process sessions on one state
/// folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_moved_away_is_files_missing_on_resume_and_on_start_never_announced_as_had() {
    let dir = temp_dir();
    let (torrent, data) = own_data(dir.path(), "big.bin", 3 << 20, 9);
    let ih = ratorrent::metainfo::Metainfo::load(&torrent)
        .unwrap()
        .info_hash;
    let state = dir.path().join("state");
    let config = || ratorrent::config::engine::EngineConfig {
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let file = data.join("big.bin");
    let away = dir.path().join("away.bin");
    let missing = |r: &TorrentRow, what: &str| {
        assert_eq!(r.state, TorrentState::Error, "{what}: {r:?}");
        let e = r.error.as_ref().expect("a cause");
        assert_eq!(e.kind, TorrentErrorKind::FilesMissing, "{what}: {e:?}");
        assert!(e.message.contains("big.bin"), "{what}: {}", e.message);
        assert_eq!(
            r.pieces_have, r.pieces_total,
            "{what}: verified pieces kept"
        );
        println!(
            "{what}: {:?} {:?}: {}; {}/{} pieces",
            r.state, e.kind, e.message, r.pieces_have, r.pieces_total
        );
    };

    // 1. resume of a paused complete torrent
    let h = session::start_with_state(config(), &state).await.unwrap();
    let request = AddRequest::new(torrent.clone()).download_dir(Some(data.clone()));
    let id = h.client.add(request).await.unwrap();
    wait(&h, id, "seeding", |r| r.state == TorrentState::Seeding).await;
    h.client.pause(id).await.unwrap();
    wait(&h, id, "paused", |r| r.state == TorrentState::Paused).await;
    std::fs::rename(&file, &away).unwrap();
    let since = std::time::Instant::now();
    h.client.resume(id).await.unwrap();
    let row = wait(&h, id, "files missing", |r| r.state != TorrentState::Paused).await;
    missing(&row, "resumed");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(started_since(&ih, since), Vec::<String>::new());
    stop(h).await;

    // 2. a restart: still failed, pieces kept (the file is gone: its times changed)
    let h = session::start_with_state(config(), &state).await.unwrap();
    let id = h.client.snapshot().rows[0].id;
    let row = wait(&h, id, "restored", |r| r.state == TorrentState::Error).await;
    missing(&row, "restarted failed");
    // the file back: resuming rechecks, then seeds
    std::fs::rename(&away, &file).unwrap();
    h.client.resume(id).await.unwrap();
    wait(&h, id, "rechecked and seeding", |r| {
        r.state == TorrentState::Seeding && r.pieces_have == r.pieces_total
    })
    .await;
    stop(h).await;

    // 3. on start: quit while seeding, the file moved away, start again
    std::fs::rename(&file, &away).unwrap();
    let since = std::time::Instant::now();
    let h = session::start_with_state(config(), &state).await.unwrap();
    let id = h.client.snapshot().rows[0].id;
    let row = wait(&h, id, "failed on start", |r| {
        !matches!(r.state, TorrentState::Checking | TorrentState::Queued)
    })
    .await;
    missing(&row, "started");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(started_since(&ih, since), Vec::<String>::new());
    stop(h).await;
}

#[test]
fn headless_seeder_whose_file_is_deleted_exits_1_naming_the_cause() {
    let dir = temp_dir();
    let (torrent, data) = own_data(dir.path(), "h.bin", 2 << 20, 8);
    let port = free_port();
    let mut rat = Rat::download(&torrent, &data, port, &["--seed"]);
    rat.wait_stdout("seeding until interrupted", Duration::from_secs(60))
        .unwrap();
    std::fs::remove_file(data.join("h.bin")).unwrap();
    let _leech = leecher(&torrent, &dir.path().join("leech"), 8);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    let out = rat.output();
    assert_eq!(status.code(), Some(1), "exit 1: {out}");
    assert!(out.contains("h.bin"), "names the file: {out}");
    assert!(out.contains("put the files back"), "says what to do: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_guard_pauses_downloads_while_space_is_short_and_resumes_them_when_it_is_back() {
    let dir = temp_dir();
    let vol = dir.path().join("vol");
    std::fs::create_dir_all(&vol).unwrap();
    let mount = Mount::tmpfs(&vol, "36m");
    let a = payload(dir.path(), "g.bin", 16 << 20, 5, 6, Some(1 << 20));
    let h = start(30 << 20).await;
    let ia = add(&h, &a, &vol).await;
    let row = wait(&h, ia, "paused by the guard", |r| {
        r.state == TorrentState::Paused
    })
    .await;
    let msg = row.message.unwrap_or_default();
    assert!(
        msg.contains("free") && msg.contains("min_free_space"),
        "{msg}"
    );
    assert!(h.client.snapshot().global.free_space.is_some());
    mount.resize_tmpfs("256m");
    wait(&h, ia, "resumed by itself", |r| {
        r.state == TorrentState::Downloading
    })
    .await;
    wait(&h, ia, "completes", |r| r.state == TorrentState::Seeding).await;
    same(&a, &vol);
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_free_space_shown_follows_the_disk_while_nothing_downloads() {
    // the status bar's "free" figure: measured at start and then every 30 s, with no
    // download to watch and the guard off (it was measured once, then never again)
    let dir = temp_dir();
    let vol = dir.path().join("vol");
    std::fs::create_dir_all(&vol).unwrap();
    let _mount = Mount::tmpfs(&vol, "64m");
    let config = ratorrent::config::engine::EngineConfig {
        listen_port: 0,
        min_free_space: 0,
        download_dir: vol.clone(),
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let free = || h.client.snapshot().global.free_space;
    let end = Instant::now() + Duration::from_secs(10);
    while free().is_none() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = free().expect("free space measured at start");
    assert!(before > 60 << 20, "{before}");
    // another program fills 40 MiB of the volume
    std::fs::write(vol.join("other.bin"), vec![7u8; 40 << 20]).unwrap();
    let end = Instant::now() + Duration::from_secs(45);
    loop {
        let now = free().unwrap_or(before);
        if now < before - (30 << 20) {
            break;
        }
        assert!(
            Instant::now() < end,
            "free space still {now} after 45 s (was {before})"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop(h).await;
}
