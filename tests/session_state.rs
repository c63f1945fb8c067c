//! The session state across restarts (in-process engine, real libtorrent peers): the list,
//! states, totals, limits and priorities come back; a complete torrent seeds again without
//! its data being hashed; a torrent whose files changed is rechecked; a second session on
//! the same state is refused; damaged state is reported and the other torrents kept.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use common::client::wait_rows;
use common::payload::{self, FileSpec};
use common::{LeechArgs, LtPeer, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, EventKind, TorrentId, TorrentRow, TorrentState};
use ratorrent::engine::session::{self, SessionHandle};

fn config(dir: &Path) -> ratorrent::config::engine::EngineConfig {
    ratorrent::config::engine::EngineConfig {
        download_dir: dir.to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    }
}

async fn add(h: &SessionHandle, torrent: &Path, paused: bool) -> TorrentId {
    let request = AddRequest::new(torrent.to_path_buf()).paused(paused);
    h.client.add(request).await.unwrap()
}

async fn wait_row(
    h: &SessionHandle,
    what: &str,
    ok: impl Fn(&[std::sync::Arc<TorrentRow>]) -> bool,
) {
    wait_rows(&h.client, what, Duration::from_secs(30), ok).await;
}

async fn checked_events(h: &SessionHandle) -> usize {
    h.client
        .recent_events()
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Checked && e.message.contains("pieces verified"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_states_totals_and_limits_come_back_and_a_complete_torrent_seeds_without_a_check() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("a.bin", 3 << 20)], 1).unwrap();
    payload::write_tree(&data, &[FileSpec::new("b.bin", 1 << 20)], 2).unwrap();
    let ta = dir.path().join("a.torrent");
    let tb = dir.path().join("b.torrent");
    make_torrent(&data.join("a.bin"), &ta, &tracker.url(), Some(64 * 1024));
    make_torrent(&data.join("b.bin"), &tb, &tracker.url(), Some(64 * 1024));

    // run 1: a seeds (after its check) and uploads to a real leecher; b is paused
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    let a = add(&h, &ta, false).await;
    let b = add(&h, &tb, true).await;
    h.client.set_torrent_limits(a, 0, 50 << 20).await.unwrap();
    wait_row(&h, "a seeding", |rows| {
        rows.iter()
            .any(|r| r.id == a && r.state == TorrentState::Seeding)
    })
    .await;
    let ip = Ipv4Addr::new(127, 0, 0, 5);
    let dst = dir.path().join("leech");
    let ta2 = ta.clone();
    tokio::task::spawn_blocking(move || {
        let mut l = LtPeer::leech(&LeechArgs::new(&ta2, &dst, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(60)).unwrap();
    })
    .await
    .unwrap();
    wait_row(&h, "uploaded counted", |rows| {
        rows.iter().any(|r| r.id == a && r.uploaded >= 3 << 20)
    })
    .await;
    let before: Vec<TorrentRow> = h
        .client
        .snapshot()
        .rows
        .iter()
        .map(|r| (**r).clone())
        .collect();
    assert!(checked_events(&h).await >= 1, "run 1 hashed a's data");
    h.shutdown().await.unwrap();

    // run 2, no torrents given: the list is there at once, a seeds again without a check
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    let first = h.client.snapshot().rows.len();
    assert_eq!(first, 2, "listed before anything is hashed or connected");
    wait_row(&h, "a seeding, b paused", |rows| {
        rows.len() == 2
            && rows[0].state == TorrentState::Seeding
            && rows[1].state == TorrentState::Paused
    })
    .await;
    let after: Vec<TorrentRow> = h
        .client
        .snapshot()
        .rows
        .iter()
        .map(|r| (**r).clone())
        .collect();
    assert_eq!(
        after[0].name,
        before.iter().find(|r| r.id == a).unwrap().name
    );
    assert_eq!(
        after[1].name,
        before.iter().find(|r| r.id == b).unwrap().name
    );
    assert!(
        after[0].uploaded >= 3 << 20,
        "all-time upload kept: {}",
        after[0].uploaded
    );
    assert_eq!(after[0].up_limit, 50 << 20, "per-torrent limit kept");
    assert_eq!(
        after[0].added_at,
        before.iter().find(|r| r.id == a).unwrap().added_at
    );
    assert_eq!(after[0].pieces_have, after[0].pieces_total);
    assert_eq!(checked_events(&h).await, 0, "no data was hashed in run 2");
    h.shutdown().await.unwrap();

    // run 3: a's file changed while we were away: rechecked, and found wrong where changed
    let f = data.join("a.bin");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&f, &bytes).unwrap();
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    wait_row(&h, "a rechecked: one piece to fetch again", |rows| {
        rows.len() == 2
            && rows[0].state == TorrentState::Downloading
            && rows[0].pieces_have + 1 == rows[0].pieces_total
    })
    .await;
    assert_eq!(checked_events(&h).await, 1, "a, and only a, was hashed");
    // a second session on the same state is refused, clearly
    let e = session::start_with_state(config(&data), &state)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already running"), "{e:#}");
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_state_is_reported_and_the_torrents_come_back_rechecked() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("c.bin", 1 << 20)], 3).unwrap();
    let tc = dir.path().join("c.torrent");
    make_torrent(&data.join("c.bin"), &tc, &tracker.url(), Some(64 * 1024));
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    add(&h, &tc, false).await;
    wait_row(&h, "c seeding", |rows| {
        rows.iter().any(|r| r.state == TorrentState::Seeding)
    })
    .await;
    h.shutdown().await.unwrap();

    for damage in ["garbage", "truncated"] {
        let db = state.join("state.redb");
        let len = std::fs::metadata(&db).unwrap().len();
        match damage {
            "garbage" => std::fs::write(&db, vec![0xa5; len as usize]).unwrap(),
            _ => std::fs::OpenOptions::new()
                .write(true)
                .open(&db)
                .unwrap()
                .set_len(len / 3)
                .unwrap(),
        }
        let h = session::start_with_state(config(&data), &state)
            .await
            .unwrap();
        wait_row(&h, "c back and seeding", |rows| {
            rows.len() == 1 && rows[0].state == TorrentState::Seeding
        })
        .await;
        h.shutdown().await.unwrap();
    }
}

/// Session rate limits set live (the TUI's `L`) come back after a restart; once the config
/// file's own limits change, the config wins (an edited file is not silently overridden).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_limits_set_live_come_back_until_the_config_changes() {
    let dir = temp_dir();
    let (data, state) = (dir.path().join("data"), dir.path().join("state"));
    let limits = |h: &SessionHandle| {
        let g = h.client.snapshot().global.clone();
        (g.down_limit, g.up_limit)
    };
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    assert_eq!(limits(&h), (0, 0));
    h.client.set_limits(3 << 20, 512 << 10).await.unwrap();
    h.shutdown().await.unwrap();

    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    assert_eq!(limits(&h), (3 << 20, 512 << 10), "live limits restored");
    h.shutdown().await.unwrap();

    let edited = ratorrent::config::engine::EngineConfig {
        download_rate_limit: 1 << 20,
        ..config(&data)
    };
    let h = session::start_with_state(edited, &state).await.unwrap();
    assert_eq!(limits(&h), (1 << 20, 0), "the edited config wins");
    h.shutdown().await.unwrap();
}
