//! Piece order against a real libtorrent seeder over loopback (issue 17): sequential
//! download verifies pieces in index order, also after a restart (the setting is kept);
//! switched on while a rarest-first download runs, the pieces that follow are the lowest
//! missing ones; "first and last pieces first" on a multi-file torrent verifies the first
//! and last piece of every file before any piece in between.
//!
//! What is asserted is what the engine records: the focused torrent's piece map in its
//! snapshots (verified pieces), sampled while the download runs (the seeder is slowed so
//! that there are many samples), never timings.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::client::wait_row;
use common::payload::{self, FileSpec};
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, Client, PieceState, Snapshot, TorrentId, TorrentState};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::engine::session;

/// How far from index order ([`disorder`]) a snapshot may be: the seeder reads the blocks
/// it sends on several disk threads and we hash pieces on several, so a piece may be
/// verified a moment after the ones requested behind it (one such straggler is one, however
/// many pieces overtook it: CI once saw piece 24 of 96 still out while 25..=35 were in), and
/// when both ends dial each other at once the connection kept cancels and re-asks, but the
/// blocks already on the wire still come (a few pieces early). Random order (rarest first
/// among equals) is dozens away at every point measured below.
const SLACK: usize = 8;

fn config(download_dir: PathBuf) -> EngineConfig {
    EngineConfig {
        download_dir,
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    }
}

/// A libtorrent seeder of `torrent` (data in `src`) that uploads at most `rate` bytes/s.
fn slow_seeder(torrent: &Path, src: &Path, last_octet: u8, rate: u64) -> LtPeer {
    let ip = Ipv4Addr::new(127, 0, 0, last_octet);
    let mut args = SeedArgs::new(torrent, src, ip, free_port_on(ip));
    args.upload_limit = Some(rate);
    LtPeer::seed(&args)
}

/// The verified pieces in a snapshot's detail of torrent `id`.
fn verified(s: &Snapshot, id: TorrentId) -> Option<Vec<bool>> {
    let d = s.detail.as_ref().filter(|d| d.id == id)?;
    Some(d.pieces.iter().map(|p| *p == PieceState::Have).collect())
}

/// How far `have` is from pieces 0..k for some k: the fewest pieces to flip to get there
/// (missing below k plus verified from k on). A piece that came late is one, a piece that
/// came early is one (e.g. blocks already on the wire when requests were cancelled); random
/// order is dozens.
fn disorder(have: &[bool]) -> usize {
    let mut best = have.iter().filter(|h| **h).count(); // k = 0
    let mut cost = best;
    for h in have {
        // moving k past this piece: a verified one stops counting, a missing one starts
        if *h {
            cost -= 1;
        } else {
            cost += 1;
        }
        best = best.min(cost);
    }
    best
}

/// How far `have` is from a prefix of the pieces: verified pieces past the first missing
/// one (0 for pieces 0..k exactly).
fn out_of_order(have: &[bool]) -> usize {
    let first_missing = have.iter().position(|h| !h).unwrap_or(have.len());
    have[first_missing..].iter().filter(|h| **h).count()
}

/// Every piece map published for torrent `id` until its row says `until` (or `within`
/// runs out: a panic).
async fn sample_until(
    client: &Client,
    id: TorrentId,
    within: Duration,
    mut until: impl FnMut(&Snapshot) -> bool,
) -> Vec<Vec<bool>> {
    let mut rx = client.snapshots();
    let mut samples = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let s: Arc<Snapshot> = rx.borrow_and_update().clone();
        if let Some(v) = verified(&s, id)
            && samples.last() != Some(&v)
        {
            samples.push(v);
        }
        if until(&s) {
            return samples;
        }
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => {}
            _ => panic!(
                "not reached within {within:?}; {} samples; row {:?}",
                samples.len(),
                client.snapshot().row(id)
            ),
        }
    }
}

/// `#` for a verified piece, `.` for another.
fn map(have: &[bool]) -> String {
    have.iter().map(|h| if *h { '#' } else { '.' }).collect()
}

fn count(have: &[bool]) -> usize {
    have.iter().filter(|h| **h).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_download_verifies_pieces_in_index_order_and_is_kept_across_a_restart() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    // 96 pieces of 16 KiB from a seeder sending 384 KiB/s: about 4 s
    payload::write_tree(&src, &[FileSpec::new("seq.bin", 96 * 16 * 1024)], 21).unwrap();
    let torrent = dir.path().join("seq.torrent");
    make_torrent(
        &src.join("seq.bin"),
        &torrent,
        &tracker.url(),
        Some(16 * 1024),
    );
    let _seeder = slow_seeder(&torrent, &src, 31, 384 * 1024);
    let dst = dir.path().join("dst");
    let state = dir.path().join("state");

    let h = session::start_with_state(config(dst.clone()), &state)
        .await
        .unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).sequential(true))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let row = wait_row(&h.client, id, "listed", Duration::from_secs(5), |_| true).await;
    assert!(row.sequential && !row.first_last, "{row:?}");
    // up to a third of the pieces, then stop the session
    let first = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        verified(s, id).is_some_and(|v| count(&v) >= 32)
    })
    .await;
    h.shutdown().await.unwrap();

    // the same state: still sequential, and the rest comes in order too
    let h = session::start_with_state(config(dst.clone()), &state)
        .await
        .unwrap();
    let id =
        common::client::wait_rows(&h.client, "listed again", Duration::from_secs(10), |rows| {
            rows.len() == 1
        })
        .await
        .rows[0]
            .id;
    h.client.focus(Some(id)).await.unwrap();
    let second = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        s.row(id).is_some_and(|r| r.state == TorrentState::Seeding)
    })
    .await;
    let row = h.client.snapshot().row(id).cloned().unwrap();
    assert!(row.sequential, "kept across the restart: {row:?}");

    let samples: Vec<&Vec<bool>> = first.iter().chain(&second).collect();
    let partial = samples
        .iter()
        .filter(|v| count(v) > 0 && count(v) < v.len())
        .count();
    let worst = samples
        .iter()
        .max_by_key(|v| disorder(v))
        .map_or(String::new(), |v| map(v));
    println!(
        "{} piece maps, {partial} of them partial; most out of order: {worst}",
        samples.len(),
    );
    assert!(
        partial >= 4,
        "too few piece maps in mid-download to judge: {partial}"
    );
    for v in &samples {
        if disorder(v) > SLACK {
            for (i, v) in samples.iter().enumerate() {
                let phase = if i < first.len() { "before" } else { "after" };
                println!("{phase} the restart: {}", map(v));
            }
        }
        assert!(
            disorder(v) <= SLACK,
            "pieces verified out of index order: {}",
            map(v)
        );
    }
    h.shutdown().await.unwrap();
    payload::assert_trees_equal(&src, &dst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_switched_on_during_a_download_takes_the_lowest_missing_pieces_next() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    // 160 pieces of 16 KiB at 384 KiB/s: about 7 s
    payload::write_tree(&src, &[FileSpec::new("switch.bin", 160 * 16 * 1024)], 22).unwrap();
    let torrent = dir.path().join("switch.torrent");
    make_torrent(
        &src.join("switch.bin"),
        &torrent,
        &tracker.url(),
        Some(16 * 1024),
    );
    let _seeder = slow_seeder(&torrent, &src, 32, 384 * 1024);
    let dst = dir.path().join("dst");
    let h = session::start(config(dst.clone())).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();

    // rarest first (all pieces equally rare here: random order)
    let before = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        verified(s, id).is_some_and(|v| count(&v) >= 24)
    })
    .await;
    let at_switch = before.last().cloned().unwrap();
    assert!(
        out_of_order(&at_switch) > 16,
        "rarest first should not look sequential: {}",
        out_of_order(&at_switch)
    );
    h.client.set_sequential(vec![id], true).await.unwrap();
    wait_row(&h.client, id, "flag on", Duration::from_secs(5), |r| {
        r.sequential
    })
    .await;
    // the pieces requested before the switch (a pipeline of up to hundreds of blocks) may
    // come in at any time after it: they are left out of the order checked below
    let requested_before: Vec<usize> = h
        .client
        .snapshot()
        .detail
        .as_ref()
        .filter(|d| d.id == id)
        .map(|d| {
            (0..d.pieces.len())
                .filter(|&p| d.pieces[p] == PieceState::Downloading)
                .collect()
        })
        .unwrap_or_default();
    println!(
        "{} pieces requested before the switch",
        requested_before.len()
    );
    let settled = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        verified(s, id).is_some_and(|v| count(&v) >= count(&at_switch) + 48)
    })
    .await
    .pop()
    .unwrap();
    let after = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        verified(s, id).is_some_and(|v| count(&v) >= count(&settled) + 40)
    })
    .await;
    // what came after `settled` are the lowest pieces `settled` missed (of those requested
    // after the switch)
    let missing: Vec<usize> = (0..settled.len())
        .filter(|&p| !settled[p] && !requested_before.contains(&p))
        .collect();
    for v in &after {
        let new: Vec<usize> = missing.iter().copied().filter(|&p| v[p]).collect();
        // in the order of `missing`: which of them came
        let came: Vec<bool> = missing.iter().map(|&p| v[p]).collect();
        assert!(
            disorder(&came) <= SLACK,
            "after the switch, pieces past the lowest missing ones: {new:?} of {missing:?}"
        );
    }
    // and off again: the flag follows
    h.client.set_sequential(vec![id], false).await.unwrap();
    wait_row(&h.client, id, "flag off", Duration::from_secs(5), |r| {
        !r.sequential
    })
    .await;
    wait_row(&h.client, id, "complete", Duration::from_secs(40), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    let events = h.client.recent_events().await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.message.contains("sequential download on")),
        "the switch is in the event log"
    );
    h.shutdown().await.unwrap();
    payload::assert_trees_equal(&src, &dst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_and_last_piece_of_every_file_are_verified_before_the_pieces_between() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src").join("films");
    // five files of 10..18 pieces (16 KiB) at 256 KiB/s: about 4 s
    let sizes: [u64; 5] = [160, 208, 288, 176, 240].map(|k| k * 1024);
    let files: Vec<FileSpec> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| FileSpec::new(format!("part{i}.mkv"), len))
        .collect();
    payload::write_tree(&src, &files, 23).unwrap();
    let torrent = dir.path().join("films.torrent");
    make_torrent(&src, &torrent, &tracker.url(), Some(16 * 1024));
    let _seeder = slow_seeder(&torrent, &dir.path().join("src"), 33, 256 * 1024);
    let dst = dir.path().join("dst");
    let h = session::start(config(dst.clone())).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).first_last(true))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let row = wait_row(&h.client, id, "listed", Duration::from_secs(5), |_| true).await;
    assert!(row.first_last && !row.sequential, "{row:?}");

    // each file's first and last piece (files of 16 KiB multiples: no piece is shared)
    let detail = common::client::wait_snapshot(&h.client, "detail", Duration::from_secs(5), |s| {
        s.detail
            .as_ref()
            .is_some_and(|d| d.id == id && d.files.len() == 5)
    })
    .await
    .detail
    .clone()
    .unwrap();
    // the files' own piece ranges (the list is not in the torrent's order of files)
    let mut ends = Vec::new();
    for f in &detail.files {
        ends.push(f.piece_range.0 as usize);
        ends.push(f.piece_range.1 as usize);
    }
    let samples = sample_until(&h.client, id, Duration::from_secs(40), |s| {
        s.row(id).is_some_and(|r| r.state == TorrentState::Seeding)
    })
    .await;
    let partial = samples
        .iter()
        .filter(|v| count(v) > 0 && count(v) < v.len())
        .count();
    assert!(partial >= 3, "too few piece maps mid-download: {partial}");
    // while a file's first or last piece is missing, next to no piece between is verified
    // (random order would have verified most of them by the time the tenth end comes)
    let mut most_early = 0;
    for v in &samples {
        let middle = (0..v.len()).filter(|p| !ends.contains(p) && v[*p]).count();
        let ends_had = ends.iter().filter(|&&p| v[p]).count();
        // two ends still out (one alone may be a straggler: see SLACK)
        if ends_had + 2 <= ends.len() {
            most_early = most_early.max(middle);
            assert!(
                middle <= SLACK,
                "{middle} pieces between verified before every file's first and last: {}",
                map(v)
            );
        }
    }
    println!(
        "{} piece maps ({partial} partial); at most {most_early} middle pieces before the ends",
        samples.len()
    );
    // once every end is in, most pieces between are still to come (in random order the
    // last end would come near the end of the download)
    let middles = samples[0].len() - ends.len();
    let first_all = samples
        .iter()
        .find(|v| ends.iter().all(|&p| v[p]))
        .expect("every end verified at last");
    let middle_then = (0..first_all.len())
        .filter(|p| !ends.contains(p) && first_all[*p])
        .count();
    println!("every end in: {}", map(first_all));
    assert!(
        middle_then * 2 < middles,
        "{middle_then} of {middles} pieces between were in before the last end"
    );
    // at run time: off, then on again (the picker follows; the flag shows it)
    h.client
        .set_first_last_piece_prio(vec![id], false)
        .await
        .unwrap();
    wait_row(&h.client, id, "flag off", Duration::from_secs(5), |r| {
        !r.first_last
    })
    .await;
    h.shutdown().await.unwrap();
    payload::assert_trees_equal(&src, &dst.join("films"));
}
