//! The download and seeding queue (`[queue]`) in real sessions against real libtorrent
//! seeders over loopback: with one download slot three torrents download one after
//! another in queue order; a dead torrent first in the queue becomes slow and stops
//! counting, so the others do not stall behind it; seeding slots, moves in the queue and
//! force start, all kept across a restart.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::client::wait_rows;
use common::payload::{self, FileSpec};
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, Command, QueueMove, TorrentId, TorrentRow, TorrentState};
use ratorrent::config::engine::{DhtConfig, EngineConfig, QueueConfig};
use ratorrent::engine::session;

fn config(download_dir: PathBuf, queue: QueueConfig) -> EngineConfig {
    EngineConfig {
        download_dir,
        listen_port: 0,
        dht: DhtConfig::off(),
        queue,
        ..EngineConfig::default()
    }
}

fn one_download() -> QueueConfig {
    QueueConfig {
        enabled: true,
        max_active_downloads: 1,
        ..QueueConfig::default()
    }
}

/// A payload `name` of `size` bytes under `src` and its torrent (64 KiB pieces).
fn payload(dir: &Path, src: &Path, name: &str, size: u64, seed: u64, tracker: &str) -> PathBuf {
    payload::write_tree(src, &[FileSpec::new(name, size)], seed).unwrap();
    let torrent = dir.join(format!("{name}.torrent"));
    make_torrent(&src.join(name), &torrent, tracker, Some(64 * 1024));
    torrent
}

fn state_of(rows: &[Arc<TorrentRow>], id: TorrentId) -> TorrentState {
    rows.iter()
        .find(|r| r.id == id)
        .map_or(TorrentState::Error, |r| r.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_download_slot_three_torrents_download_one_after_another() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let size: u64 = 4 << 20;
    let mut seeders = Vec::new();
    let mut torrents = Vec::new();
    for i in 0..3u8 {
        let name = format!("q{i}.bin");
        let t = payload(
            dir.path(),
            &src,
            &name,
            size,
            11 + u64::from(i),
            &tracker.url(),
        );
        let ip = Ipv4Addr::new(127, 0, 0, 20 + i);
        // 4 MiB/s each: a download takes about a second, long enough to see overlaps
        let mut args = SeedArgs::new(&t, &src, ip, free_port_on(ip));
        args.upload_limit = Some(4 << 20);
        seeders.push(LtPeer::seed(&args));
        torrents.push(t);
    }
    let dst = dir.path().join("dst");
    let h = session::start(config(dst.clone(), one_download()))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for t in &torrents {
        ids.push(h.client.add(AddRequest::new(t.clone())).await.unwrap());
    }
    // watch every snapshot: never two downloading at once; the order they finish in
    let mut rx = h.client.snapshots();
    let mut finished: Vec<TorrentId> = Vec::new();
    let mut most_downloading = 0;
    let mut queued_seen = false;
    let end = Instant::now() + Duration::from_secs(60);
    while finished.len() < ids.len() {
        assert!(
            Instant::now() < end,
            "not all done: {:#?}",
            h.client.snapshot().rows
        );
        let _ = tokio::time::timeout(Duration::from_millis(200), rx.changed()).await;
        let s = rx.borrow_and_update().clone();
        let downloading = s
            .rows
            .iter()
            .filter(|r| r.state == TorrentState::Downloading)
            .count();
        most_downloading = most_downloading.max(downloading);
        queued_seen |= s
            .rows
            .iter()
            .any(|r| r.state == TorrentState::QueuedDownload);
        assert!(s.global.queueing);
        for r in s.rows.iter() {
            if r.state == TorrentState::Seeding && !finished.contains(&r.id) {
                finished.push(r.id);
            }
        }
    }
    println!(
        "finished in order {finished:?} (added {ids:?}); at most {most_downloading} downloading"
    );
    assert_eq!(
        most_downloading, 1,
        "one download slot: one download at a time"
    );
    assert!(queued_seen, "the others waited as Queued");
    assert_eq!(finished, ids, "they ran in queue order (the order added)");
    let s = h.client.snapshot();
    let places: Vec<u32> = ids.iter().map(|id| s.row(*id).unwrap().queue_pos).collect();
    assert_eq!(places, [1, 2, 3]);
    for i in 0..3 {
        let name = format!("q{i}.bin");
        common::payload::compare_files(&src.join(&name), &dst.join(&name)).unwrap();
    }
    h.client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_torrent_first_in_the_queue_does_not_stall_the_others() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    // the dead one: no seeder anywhere
    let dead = payload(
        dir.path(),
        &dir.path().join("nowhere"),
        "dead.bin",
        1 << 20,
        3,
        &tracker.url(),
    );
    let mut seeders = Vec::new();
    let mut live = Vec::new();
    for i in 0..2u8 {
        let name = format!("l{i}.bin");
        let t = payload(
            dir.path(),
            &src,
            &name,
            2 << 20,
            21 + u64::from(i),
            &tracker.url(),
        );
        let ip = Ipv4Addr::new(127, 0, 0, 30 + i);
        seeders.push(LtPeer::seed(&SeedArgs::new(&t, &src, ip, free_port_on(ip))));
        live.push(t);
    }
    let queue = QueueConfig {
        slow_torrent_inactive_timer: 2,
        ..one_download()
    };
    let h = session::start(config(dir.path().join("dst"), queue))
        .await
        .unwrap();
    let dead_id = h.client.add(AddRequest::new(dead)).await.unwrap();
    let started = Instant::now();
    let mut ids = Vec::new();
    for t in &live {
        ids.push(h.client.add(AddRequest::new(t.clone())).await.unwrap());
    }
    // at first the dead one holds the one slot
    let s = wait_rows(
        &h.client,
        "the dead one runs",
        Duration::from_secs(10),
        |rows| state_of(rows, dead_id) == TorrentState::Downloading,
    )
    .await;
    if started.elapsed() < Duration::from_millis(1500) {
        assert_eq!(
            state_of(&s.rows, ids[0]),
            TorrentState::QueuedDownload,
            "{:#?}",
            s.rows
        );
    }
    // then it is slow (2 s under 2 KiB/s): it stops counting and both others complete
    wait_rows(
        &h.client,
        "both live ones seed",
        Duration::from_secs(60),
        |rows| {
            ids.iter()
                .all(|id| state_of(rows, *id) == TorrentState::Seeding)
        },
    )
    .await;
    let took = started.elapsed();
    println!("both live torrents done {took:?} after the dead one started");
    assert!(
        took >= Duration::from_secs(2),
        "the slow window was waited for: {took:?}"
    );
    let rows = h.client.snapshot().rows.clone();
    assert_eq!(
        state_of(&rows, dead_id),
        TorrentState::Downloading,
        "the dead one keeps running (it is slow, not stopped)"
    );
    h.client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeding_slots_moves_and_force_start_survive_a_restart() {
    let dir = temp_dir();
    let data = dir.path().join("data");
    let state = dir.path().join("state");
    let mut torrents = Vec::new();
    for i in 0..3u8 {
        // complete data in the download folder: each is a seed after its check
        let name = format!("s{i}.bin");
        torrents.push(payload(
            dir.path(),
            &data,
            &name,
            256 << 10,
            40 + u64::from(i),
            "http://127.0.0.1:1/announce",
        ));
    }
    let queue = QueueConfig {
        enabled: true,
        max_active_uploads: 1,
        ..QueueConfig::default()
    };
    let h = session::start_with_state(config(data.clone(), queue.clone()), &state)
        .await
        .unwrap();
    let mut ids = Vec::new();
    for t in &torrents {
        ids.push(h.client.add(AddRequest::new(t.clone())).await.unwrap());
    }
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let is = |rows: &[Arc<TorrentRow>], want: [TorrentState; 3]| {
        ids.iter().zip(want).all(|(id, w)| state_of(rows, *id) == w)
    };
    use TorrentState::{QueuedSeed as Q, Seeding as S};
    wait_rows(
        &h.client,
        "one seeding slot",
        Duration::from_secs(15),
        |rows| is(rows, [S, Q, Q]),
    )
    .await;
    // the last one to the top: it takes the slot
    h.client
        .send(Command::QueueMove {
            ids: vec![c],
            to: QueueMove::Top,
        })
        .await
        .unwrap();
    let snap = wait_rows(&h.client, "c first", Duration::from_secs(10), |rows| {
        is(rows, [Q, Q, S])
    })
    .await;
    let places: Vec<u32> = [a, b, c]
        .iter()
        .map(|id| snap.row(*id).unwrap().queue_pos)
        .collect();
    assert_eq!(places, [2, 3, 1]);
    // b force started: it seeds beside c, and is not counted
    h.client
        .send(Command::SetForceStart {
            ids: vec![b],
            forced: true,
        })
        .await
        .unwrap();
    let snap = wait_rows(&h.client, "b forced", Duration::from_secs(10), |rows| {
        is(rows, [Q, S, S])
    })
    .await;
    assert!(snap.row(b).unwrap().forced);
    // one place down for c (below a): a takes the one slot
    h.client
        .send(Command::QueueMove {
            ids: vec![c],
            to: QueueMove::Down,
        })
        .await
        .unwrap();
    wait_rows(
        &h.client,
        "a first again",
        Duration::from_secs(10),
        |rows| is(rows, [S, S, Q]),
    )
    .await;
    h.shutdown().await.unwrap();

    // a restart keeps the order (a, c, b), the force start and so who runs
    let h = session::start_with_state(config(data.clone(), queue), &state)
        .await
        .unwrap();
    let snap = wait_rows(&h.client, "restored", Duration::from_secs(20), |rows| {
        rows.len() == 3
            && rows.iter().filter(|r| r.state == S).count() == 2
            && rows.iter().filter(|r| r.state == Q).count() == 1
    })
    .await;
    let by_name = |n: &str| {
        snap.rows
            .iter()
            .find(|r| r.name == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} restored: {:#?}", snap.rows))
    };
    let (ra, rb, rc) = (by_name("s0.bin"), by_name("s1.bin"), by_name("s2.bin"));
    assert_eq!(
        [ra.queue_pos, rc.queue_pos, rb.queue_pos],
        [1, 2, 3],
        "the queue order came back"
    );
    assert!(rb.forced && rb.state == S, "{rb:?}");
    assert_eq!(ra.state, S);
    assert_eq!(rc.state, Q);
    h.shutdown().await.unwrap();
}

/// Queue places stay dense and in order through adds (which take the last place without a
/// sort of the whole queue), a removal (the places after it move up), a move, a restart
/// (records with their keys), and an add after the restart (after every kept key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn places_follow_adds_removals_moves_and_a_restart_without_gaps() {
    let dir = temp_dir();
    let data = dir.path().join("data");
    let state = dir.path().join("state");
    let mut torrents = Vec::new();
    for i in 0..6u8 {
        let name = format!("p{i}.bin");
        torrents.push(payload(
            dir.path(),
            &dir.path().join("src"),
            &name,
            64 << 10,
            60 + u64::from(i),
            "http://127.0.0.1:1/announce",
        ));
    }
    let queue = QueueConfig {
        enabled: true,
        ..QueueConfig::default()
    };
    let places = |snap: &ratorrent::api::Snapshot, names: &[&str]| -> Vec<u32> {
        names
            .iter()
            .map(|n| {
                snap.rows
                    .iter()
                    .find(|r| r.name == *n)
                    .map_or(0, |r| r.queue_pos)
            })
            .collect()
    };
    let h = session::start_with_state(config(data.clone(), queue.clone()), &state)
        .await
        .unwrap();
    let mut ids = Vec::new();
    for t in &torrents[..5] {
        let mut req = AddRequest::new(t.clone());
        req.paused = true;
        ids.push(h.client.add(req).await.unwrap());
    }
    let names = ["p0.bin", "p1.bin", "p2.bin", "p3.bin", "p4.bin"];
    let snap = wait_rows(&h.client, "five placed", Duration::from_secs(10), |rows| {
        rows.len() == 5 && rows.iter().all(|r| r.queue_pos > 0)
    })
    .await;
    assert_eq!(places(&snap, &names), [1, 2, 3, 4, 5]);
    // p1 leaves: the places after it move up
    h.client.remove(ids[1], false).await.unwrap();
    let rest = ["p0.bin", "p2.bin", "p3.bin", "p4.bin"];
    let snap = wait_rows(&h.client, "four left", Duration::from_secs(10), |rows| {
        rows.len() == 4 && rows.iter().all(|r| r.queue_pos <= 4)
    })
    .await;
    assert_eq!(places(&snap, &rest), [1, 2, 3, 4]);
    // p4 to the top
    h.client
        .send(Command::QueueMove {
            ids: vec![ids[4]],
            to: QueueMove::Top,
        })
        .await
        .unwrap();
    let snap = wait_rows(&h.client, "p4 first", Duration::from_secs(10), |rows| {
        rows.iter().any(|r| r.name == "p4.bin" && r.queue_pos == 1)
    })
    .await;
    assert_eq!(places(&snap, &rest), [2, 3, 4, 1]);
    h.shutdown().await.unwrap();

    // restored in the same order; a new add goes last
    let h = session::start_with_state(config(data.clone(), queue), &state)
        .await
        .unwrap();
    let snap = wait_rows(&h.client, "restored", Duration::from_secs(20), |rows| {
        rows.len() == 4 && rows.iter().all(|r| r.queue_pos > 0)
    })
    .await;
    assert_eq!(places(&snap, &rest), [2, 3, 4, 1]);
    let mut req = AddRequest::new(torrents[5].clone());
    req.paused = true;
    h.client.add(req).await.unwrap();
    let snap = wait_rows(&h.client, "p5 added", Duration::from_secs(10), |rows| {
        rows.len() == 5 && rows.iter().all(|r| r.queue_pos > 0)
    })
    .await;
    assert_eq!(
        places(&snap, &["p0.bin", "p2.bin", "p3.bin", "p4.bin", "p5.bin"]),
        [2, 3, 4, 1, 5]
    );
    h.shutdown().await.unwrap();
}
