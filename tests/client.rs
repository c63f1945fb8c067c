//! The client handle against a real in-process session on a temporary folder: adds are
//! answered with an id or the engine's reason, commands show in the next snapshots and in
//! the event stream, and once the session is shut down every request says the engine is
//! gone.

mod common;

use std::path::Path;
use std::time::Duration;

use common::client::{wait_row, wait_rows};
use ratorrent::api::{
    AddError, AddRequest, AddSource, ClientError, EventKind, TorrentId, TorrentState,
};
use ratorrent::config::engine::EngineConfig;
use ratorrent::engine::session;
use ratorrent::metainfo::TorrentBuilder;

const WITHIN: Duration = Duration::from_secs(30);

fn config(dir: &Path) -> EngineConfig {
    EngineConfig {
        listen_port: 0,
        download_dir: dir.to_path_buf(),
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..EngineConfig::default()
    }
}

/// A .torrent of a 100 KiB file `name` that lies complete in `dir`.
fn torrent(dir: &Path, name: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, vec![0x42; 100 << 10]).unwrap();
    let t = dir.join(format!("{name}.torrent"));
    std::fs::write(&t, TorrentBuilder::new(&file).build().unwrap()).unwrap();
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_are_answered_and_commands_reach_the_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let h = session::start(config(data)).await.unwrap();
    let client = h.client.clone();
    let mut events = client.subscribe();

    // an add answers with the new id; the torrent's data is there, so it seeds
    let ta = torrent(data, "a.bin");
    let a = client.add(AddRequest::new(ta.clone())).await.unwrap();
    wait_row(&client, a, "a seeding", WITHIN, |r| {
        r.state == TorrentState::Seeding
    })
    .await;

    // the same torrent again: refused, naming the torrent already there
    let again = client.add(AddRequest::new(ta)).await;
    assert!(
        matches!(again, Err(ClientError::Refused(AddError::AlreadyAdded { id, .. })) if id == a),
        "{again:?}"
    );
    // not a torrent: refused, saying why
    let junk = data.join("junk.torrent");
    std::fs::write(&junk, b"not bencode").unwrap();
    match client.add(AddRequest::new(junk)).await {
        Err(ClientError::Refused(AddError::Invalid(why))) => {
            assert!(why.contains("junk.torrent"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    // a magnet link, added paused: listed at once under its display name
    let link = format!("magnet:?xt=urn:btih:{}&dn=from+a+link", "ab".repeat(20));
    let request = AddRequest::new(AddSource::Magnet(link)).paused(true);
    let m = client.add(request).await.unwrap();
    assert_ne!(m, a);
    let row = wait_row(&client, m, "magnet listed", WITHIN, |r| {
        r.state == TorrentState::Paused
    })
    .await;
    assert_eq!(row.name, "from a link");

    // pause, limits, resume: each shows in a later snapshot
    client.pause(a).await.unwrap();
    wait_row(&client, a, "a paused", WITHIN, |r| {
        r.state == TorrentState::Paused
    })
    .await;
    client.set_limits(5 << 20, 1 << 20).await.unwrap();
    client.set_torrent_limits(a, 0, 300 << 10).await.unwrap();
    let snap = client
        .wait_for(|s| s.global.down_limit == 5 << 20 && s.global.up_limit == 1 << 20)
        .await
        .unwrap();
    assert_eq!(snap.global.listen_port, h.listen_port);
    wait_row(&client, a, "torrent limit", WITHIN, |r| {
        r.up_limit == 300 << 10
    })
    .await;
    client.resume(a).await.unwrap();
    wait_row(&client, a, "a seeding again", WITHIN, |r| {
        r.state == TorrentState::Seeding
    })
    .await;

    // remove: gone from the list, files kept; the event stream and the history say so
    client.remove(m, false).await.unwrap();
    wait_rows(&client, "magnet removed", WITHIN, |rows| {
        rows.iter().all(|r| r.id != m)
    })
    .await;
    assert!(data.join("a.bin").exists());
    let removed = tokio::time::timeout(WITHIN, async {
        loop {
            let e = events.recv().await.unwrap();
            if e.kind == EventKind::Removed {
                return e;
            }
        }
    })
    .await
    .expect("a Removed event");
    assert_eq!(removed.torrent, Some(m));
    let history = client.recent_events().await.unwrap();
    let added: Vec<Option<TorrentId>> = history
        .iter()
        .filter(|e| e.kind == EventKind::Added)
        .map(|e| e.torrent)
        .collect();
    assert_eq!(added, [Some(a), Some(m)], "{history:#?}");

    // shutdown is confirmed; afterwards the engine is gone for every request
    client.shutdown().await.unwrap();
    tokio::time::timeout(WITHIN, h.task).await.unwrap().unwrap();
    assert_eq!(
        client.add(AddRequest::new(data.join("b.torrent"))).await,
        Err(ClientError::EngineGone)
    );
    assert_eq!(client.pause(a).await, Err(ClientError::EngineGone));
    assert_eq!(client.shutdown().await, Err(ClientError::EngineGone));
    assert!(client.wait_for(|_| false).await.is_err());
    // the last snapshot stays readable
    assert!(client.snapshot().row(a).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_ends_when_every_client_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let h = session::start(config(dir.path())).await.unwrap();
    let session::SessionHandle { client, task, .. } = h;
    let second = client.clone();
    drop(client);
    // one client left: the session still answers
    assert!(second.recent_events().await.is_ok());
    drop(second);
    tokio::time::timeout(WITHIN, task)
        .await
        .expect("the session task ends")
        .unwrap();
}
