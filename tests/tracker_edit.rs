//! Bulk tracker edits against real trackers and a real libtorrent peer: two torrents that
//! announce to tracker A with passkey P1 are moved to tracker B with passkey P2 in one
//! find/replace; the next announces go to B (with P2), A hears nothing but `stopped`
//! after the edit; a libtorrent seeder known only to B is found through it; the edit
//! survives a restart. Per-torrent add, edit and remove go through the same command.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::client::wait_row;
use common::payload::{self, FileSpec};
use common::tracker::Event;
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{TorrentId, TorrentState, TrackerEdit, TrackerEditError, TrackerEditOutcome};
use ratorrent::config::engine::EngineConfig;
use ratorrent::engine::session;
use ratorrent::metainfo::InfoHash;

fn config(dir: &Path) -> EngineConfig {
    EngineConfig {
        download_dir: dir.to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..EngineConfig::default()
    }
}

/// Announces of `ih` to `t` after `since` other than `stopped`.
fn regular_after(t: &TestTracker, ih: &InfoHash, since: Instant) -> Vec<String> {
    t.announces_for(ih)
        .into_iter()
        .filter(|a| a.at > since && a.event != Event::Stopped)
        .map(|a| format!("{:?} {}", a.event, a.query))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_moves_two_torrents_to_the_new_tracker_and_passkey_and_survives_a_restart() {
    let a = TestTracker::start();
    let b = TestTracker::start();
    // long intervals: the only announces after the start are the ones the edit causes
    a.set_interval(600);
    b.set_interval(600);
    let dir = temp_dir();
    let (src, data, state) = (
        dir.path().join("src"),
        dir.path().join("data"),
        dir.path().join("state"),
    );
    payload::write_tree(
        &src,
        &[
            FileSpec::new("one.bin", 1 << 20),
            FileSpec::new("two.bin", 512 << 10),
        ],
        21,
    )
    .unwrap();
    let url_a = format!("{}?passkey=P1", a.url());
    let (mut ids_hash, mut files) = (Vec::new(), Vec::new());
    for name in ["one", "two"] {
        let t = dir.path().join(format!("{name}.torrent"));
        let ih = make_torrent(
            &src.join(format!("{name}.bin")),
            &t,
            &url_a,
            Some(32 * 1024),
        );
        ids_hash.push(ih);
        files.push(t);
    }
    // the same info dictionary announcing to B only: the seeder is listed by B alone
    let seed_torrent = dir.path().join("one-b.torrent");
    let ih_b = make_torrent(
        &src.join("one.bin"),
        &seed_torrent,
        &b.url(),
        Some(32 * 1024),
    );
    assert_eq!(
        ih_b, ids_hash[0],
        "the announce URL is not part of the info hash"
    );
    let ip = Ipv4Addr::new(127, 0, 0, 11);
    let _seeder = LtPeer::seed(&SeedArgs::new(&seed_torrent, &src, ip, free_port_on(ip)));
    b.wait_for_announce(Duration::from_secs(15), |x| x.info_hash == ih_b)
        .unwrap();

    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    let mut ids: Vec<TorrentId> = Vec::new();
    for f in &files {
        ids.push(
            h.client
                .add(ratorrent::api::AddRequest::new(f.clone()))
                .await
                .unwrap(),
        );
    }
    for ih in &ids_hash {
        a.wait_for_announce(Duration::from_secs(15), |x| {
            x.info_hash == *ih && x.event == Event::Started && x.query.contains("passkey=P1")
        })
        .unwrap();
    }
    let find = format!("{}/announce?passkey=P1", a.addr());
    let replace = format!("{}/announce?passkey=P2", b.addr());
    let edit = TrackerEdit::Replace {
        find: find.clone(),
        replace: replace.clone(),
    };
    // a dry run counts and changes nothing
    let counted = h
        .client
        .edit_trackers(ids.clone(), edit.clone(), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        counted,
        TrackerEditOutcome {
            urls: 2,
            torrents: 2
        }
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(b.announces_for(&ids_hash[1]).is_empty(), "{}", b.describe());
    // a replacement that makes a bad URL is refused whole
    let bad = TrackerEdit::Replace {
        find: "http://".into(),
        replace: "gopher://".into(),
    };
    let refused = h
        .client
        .edit_trackers(ids.clone(), bad, false)
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(TrackerEditError::InvalidUrl(..))),
        "{refused:?}"
    );

    let edited_at = Instant::now();
    let done = h
        .client
        .edit_trackers(ids.clone(), edit, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        done,
        TrackerEditOutcome {
            urls: 2,
            torrents: 2
        }
    );
    for ih in &ids_hash {
        b.wait_for_announce(Duration::from_secs(10), |x| {
            x.info_hash == *ih
                && x.at > edited_at
                && x.event == Event::Started
                && x.query.contains("passkey=P2")
        })
        .unwrap();
        // A got its `stopped` (the tier was in its swarm), nothing else
        a.wait_for_announce(Duration::from_secs(10), |x| {
            x.info_hash == *ih && x.at > edited_at && x.event == Event::Stopped
        })
        .unwrap();
    }
    // the seeder only B lists is found through the new URL: torrent one completes
    wait_row(
        &h.client,
        ids[0],
        "one seeding",
        Duration::from_secs(30),
        |r| r.state == TorrentState::Seeding,
    )
    .await;
    payload::compare_files(&src.join("one.bin"), &data.join("one.bin")).unwrap();
    for ih in &ids_hash {
        assert_eq!(regular_after(&a, ih, edited_at), Vec::<String>::new());
    }
    // the passkey never reaches the log
    let events = h.client.recent_events().await.unwrap();
    let edits: Vec<&str> = events
        .iter()
        .filter(|e| e.message.contains("tracker edited"))
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert!(
        edits.iter().all(|m| !m.contains("P1") && !m.contains("P2")),
        "{edits:?}"
    );
    h.shutdown().await.unwrap();

    // run 2: the edited lists are what the torrents announce to
    let restarted = Instant::now();
    let h = session::start_with_state(config(&data), &state)
        .await
        .unwrap();
    for ih in &ids_hash {
        b.wait_for_announce(Duration::from_secs(15), |x| {
            x.info_hash == *ih && x.at > restarted && x.query.contains("passkey=P2")
        })
        .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for ih in &ids_hash {
        let after: Vec<_> = a
            .announces_for(ih)
            .into_iter()
            .filter(|x| x.at > restarted)
            .collect();
        assert!(after.is_empty(), "A heard {after:?}");
    }
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_edit_and_remove_one_torrents_trackers() {
    let a = TestTracker::start();
    let b = TestTracker::start();
    let c = TestTracker::start();
    a.set_interval(600);
    let dir = temp_dir();
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("s.bin", 256 << 10)], 5).unwrap();
    let t = dir.path().join("s.torrent");
    let ih = make_torrent(&data.join("s.bin"), &t, &a.url(), Some(32 * 1024));
    let h = session::start(config(&data)).await.unwrap();
    let id = h
        .client
        .add(ratorrent::api::AddRequest::new(t))
        .await
        .unwrap();
    a.wait_for_announce(Duration::from_secs(15), |x| x.info_hash == ih)
        .unwrap();
    let edit = |e: TrackerEdit| {
        let client = h.client.clone();
        async move { client.edit_trackers(vec![id], e, false).await.unwrap() }
    };
    // add B: it hears `started` at once
    let r = edit(TrackerEdit::Add(vec![b.url(), a.url()]))
        .await
        .unwrap();
    assert_eq!(
        r,
        TrackerEditOutcome {
            urls: 1,
            torrents: 1
        },
        "A is there already"
    );
    b.wait_for_announce(Duration::from_secs(10), |x| {
        x.info_hash == ih && x.event == Event::Started
    })
    .unwrap();
    // edit B into C
    assert_eq!(
        edit(TrackerEdit::Edit {
            old: b.url(),
            new: a.url()
        })
        .await,
        Err(TrackerEditError::Exists(a.url()))
    );
    assert!(matches!(
        edit(TrackerEdit::Edit {
            old: "http://127.0.0.1:1/none".into(),
            new: c.url()
        })
        .await,
        Err(TrackerEditError::NotFound(_))
    ));
    let edited = Instant::now();
    edit(TrackerEdit::Edit {
        old: b.url(),
        new: c.url(),
    })
    .await
    .unwrap();
    c.wait_for_announce(Duration::from_secs(10), |x| {
        x.info_hash == ih && x.event == Event::Started
    })
    .unwrap();
    b.wait_for_announce(Duration::from_secs(10), |x| {
        x.at > edited && x.event == Event::Stopped
    })
    .unwrap();
    // remove A: its `stopped`, then the torrent announces to C only
    let removed = Instant::now();
    let r = edit(TrackerEdit::Remove(vec![a.url()])).await.unwrap();
    assert_eq!(r.urls, 1);
    a.wait_for_announce(Duration::from_secs(10), |x| {
        x.at > removed && x.event == Event::Stopped
    })
    .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let snap =
        common::client::wait_snapshot(&h.client, "one tracker", Duration::from_secs(5), |s| {
            s.detail.as_ref().is_some_and(|d| d.trackers.len() == 1)
        })
        .await;
    assert_eq!(snap.detail.as_ref().unwrap().trackers[0].url, c.url());
    assert!(regular_after(&a, &ih, removed).is_empty());
    assert!(regular_after(&b, &ih, edited).is_empty());
    h.shutdown().await.unwrap();
}
