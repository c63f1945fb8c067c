//! Seeding goals (share limits) against real peers: a torrent with a ratio goal of 1.0
//! seeding to a real libtorrent leecher stops once the leecher has one full copy, stays
//! stopped on resume-all, a resume by hand and a restart, and seeds again once its goal is
//! raised; a session goal with the remove action removes the torrent and keeps its files.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::client::wait_rows;
use common::payload::{self, FileSpec};
use common::{LeechArgs, LtPeer, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{
    AddRequest, Command, PauseCause, ShareLimits, TorrentId, TorrentRow, TorrentState,
};
use ratorrent::config::engine::{EngineConfig, GoalAction, SeedingConfig};
use ratorrent::engine::session::{self, SessionHandle};

fn config(dir: &Path, seeding: SeedingConfig) -> EngineConfig {
    EngineConfig {
        download_dir: dir.to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        seeding,
        ..EngineConfig::default()
    }
}

async fn row(h: &SessionHandle, id: TorrentId) -> TorrentRow {
    h.client
        .snapshot()
        .row(id)
        .cloned()
        .expect("the torrent is listed")
}

fn goal_stopped(r: &TorrentRow) -> bool {
    r.state == TorrentState::Paused
        && r.paused_by == Some(PauseCause::Goal("ratio 1.00 reached".into()))
}

async fn event_said(h: &SessionHandle, text: &str) -> bool {
    h.client
        .recent_events()
        .await
        .unwrap()
        .iter()
        .any(|e| e.message.contains(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ratio_goal_stops_after_one_copy_and_stays_stopped_across_restart() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    let size: u64 = 3 << 20;
    payload::write_tree(&data, &[FileSpec::new("g.bin", size)], 7).unwrap();
    let torrent = dir.path().join("g.torrent");
    make_torrent(
        &data.join("g.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );

    // run 1: the session has no goal; the torrent's own ratio goal is 1.0
    let h = session::start_with_state(config(&data, SeedingConfig::default()), &state)
        .await
        .unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    let one = ShareLimits {
        ratio: 1.0,
        ..ShareLimits::default()
    };
    h.client.set_share_limits(vec![id], one).await.unwrap();
    wait_rows(&h.client, "seeding", Duration::from_secs(15), |rows| {
        rows.iter()
            .any(|r| r.id == id && r.state == TorrentState::Seeding)
    })
    .await;
    h.client.focus(Some(id)).await.unwrap();

    let ip = Ipv4Addr::new(127, 0, 0, 7);
    let dst = dir.path().join("leech");
    let t2 = torrent.clone();
    let done_at = tokio::task::spawn_blocking(move || {
        let mut l = LtPeer::leech(&LeechArgs::new(&t2, &dst, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(30)).unwrap();
        Instant::now()
    })
    .await
    .unwrap();
    let snap = wait_rows(
        &h.client,
        "stopped by its goal",
        Duration::from_secs(12),
        |rows| rows.iter().any(|r| r.id == id && goal_stopped(r)),
    )
    .await;
    let took = done_at.elapsed();
    println!("stopped {took:?} after the leecher had its copy");
    let r = snap.row(id).unwrap();
    assert!(r.uploaded >= size, "one full copy went out: {}", r.uploaded);
    assert!(
        r.message
            .as_deref()
            .unwrap_or("")
            .contains("ratio 1.00 reached"),
        "{:?}",
        r.message
    );
    let goals = wait_rows(&h.client, "detail", Duration::from_secs(5), |_| true)
        .await
        .detail
        .clone()
        .expect("focused")
        .goals;
    assert_eq!(goals.ratio, Some(1.0));
    assert_eq!(goals.limits.ratio, 1.0);

    // resume-all and a resume by hand leave it stopped; the hand resume says why
    h.client.send(Command::ResumeAll).await.unwrap();
    h.client.resume(id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(goal_stopped(&row(&h, id).await), "{:?}", row(&h, id).await);
    assert!(event_said(&h, "ratio goal reached: raise the goal to seed on").await);
    // neither resumed it for a moment (it would have been stopped by its goal again)
    let stops = h
        .client
        .recent_events()
        .await
        .unwrap()
        .iter()
        .filter(|e| e.message.contains("ratio 1.00 reached: stopped seeding"))
        .count();
    assert_eq!(stops, 1, "stopped once, never resumed");
    h.shutdown().await.unwrap();

    // run 2, same state: still stopped by its goal, with its goal kept
    let h = session::start_with_state(config(&data, SeedingConfig::default()), &state)
        .await
        .unwrap();
    let id = wait_rows(&h.client, "listed", Duration::from_secs(10), |rows| {
        rows.len() == 1
    })
    .await
    .rows[0]
        .id;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let r = row(&h, id).await;
    assert!(goal_stopped(&r), "after the restart: {r:?}");
    h.client.resume(id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(goal_stopped(&row(&h, id).await));

    // a raised goal lets it seed again
    let three = ShareLimits {
        ratio: 3.0,
        ..ShareLimits::default()
    };
    h.client.set_share_limits(vec![id], three).await.unwrap();
    h.client.resume(id).await.unwrap();
    wait_rows(
        &h.client,
        "seeding again",
        Duration::from_secs(10),
        |rows| {
            rows.iter()
                .any(|r| r.id == id && r.state == TorrentState::Seeding)
        },
    )
    .await;
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_goal_with_the_remove_action_removes_the_torrent_and_keeps_its_files() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("r.bin", 1 << 20)], 9).unwrap();
    let torrent = dir.path().join("r.torrent");
    make_torrent(
        &data.join("r.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    // ratio 0: reached the moment it seeds
    let seeding = SeedingConfig {
        ratio_limit: 0.0,
        action: GoalAction::Remove,
        ..SeedingConfig::default()
    };
    let h = session::start(config(&data, seeding)).await.unwrap();
    let id = h.client.add(AddRequest::new(torrent)).await.unwrap();
    // the row may not be published yet when the add answers: wait for the goal's word
    let deadline = Instant::now() + Duration::from_secs(15);
    while !event_said(&h, "ratio 0.00 reached: removing it").await {
        assert!(Instant::now() < deadline, "no removal by the goal");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_rows(&h.client, "removed", Duration::from_secs(5), |rows| {
        !rows.iter().any(|r| r.id == id)
    })
    .await;
    assert!(event_said(&h, "removed (files kept)").await);
    assert!(
        data.join("r.bin").exists(),
        "the remove action keeps the files"
    );
    h.shutdown().await.unwrap();
}

#[test]
fn download_seed_ends_once_the_seeding_goal_is_reached() {
    // `ratorrent download --seed` with `[seeding] ratio_limit = 1.0`: seeds one copy to a
    // real libtorrent leecher, then exits 0 saying so
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("h.bin", 2 << 20)], 11).unwrap();
    let torrent = dir.path().join("h.torrent");
    let ih = make_torrent(
        &src.join("h.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let port = common::free_port();
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        src.to_str().unwrap(),
        port.to_string(),
    );
    let mut seeder = common::rat::Rat::spawn(
        &["download", t, "-o", o, "--port", &p, "--seed"],
        "[seeding]\nratio_limit = 1.0\n",
    );
    tracker
        .wait_for_announce(Duration::from_secs(15), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    let ip = Ipv4Addr::new(127, 0, 0, 8);
    let mut leecher = LtPeer::leech(&LeechArgs::new(
        &torrent,
        &dir.path().join("dst"),
        ip,
        free_port_on(ip),
    ));
    leecher
        .wait_done(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    let st = seeder
        .wait(Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("{e}\n{}", seeder.output()));
    assert!(st.success(), "{st}\n{}", seeder.output());
    assert!(
        seeder
            .stdout()
            .contains("h.bin: ratio 1.00 reached: done seeding"),
        "{}",
        seeder.output()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alt_upload_action_keeps_seeding_at_the_alternative_rate_across_a_restart() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    let size: u64 = 2 << 20;
    payload::write_tree(&data, &[FileSpec::new("a.bin", size)], 13).unwrap();
    let torrent = dir.path().join("a.torrent");
    make_torrent(
        &data.join("a.bin"),
        &torrent,
        &tracker.url(),
        Some(32 * 1024),
    );
    let alt: u64 = 96 * 1024;
    let cfg = || EngineConfig {
        alt_upload_rate_limit: alt,
        ..config(
            &data,
            SeedingConfig {
                ratio_limit: 1.0,
                action: GoalAction::AltUpload,
                ..SeedingConfig::default()
            },
        )
    };
    let h = session::start_with_state(cfg(), &state).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    wait_rows(&h.client, "seeding", Duration::from_secs(15), |rows| {
        rows.iter()
            .any(|r| r.id == id && r.state == TorrentState::Seeding)
    })
    .await;
    // leecher 1 takes one full copy at full speed
    let ip = Ipv4Addr::new(127, 0, 0, 9);
    let (t1, dst1) = (torrent.clone(), dir.path().join("leech1"));
    tokio::task::spawn_blocking(move || {
        let mut l = LtPeer::leech(&LeechArgs::new(&t1, &dst1, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(30)).unwrap();
    })
    .await
    .unwrap();
    let throttled = |r: &TorrentRow| {
        r.state == TorrentState::Seeding
            && r.message.as_deref() == Some("ratio 1.00 reached: seeding at the alternative rate")
    };
    wait_rows(
        &h.client,
        "at the alt rate",
        Duration::from_secs(15),
        |rows| rows.iter().any(|r| r.id == id && throttled(r)),
    )
    .await;
    assert!(
        event_said(&h, "ratio 1.00 reached: seeding at the alternative rate").await,
        "logged"
    );
    // leecher 2: still served, but under the alternative limit
    let ip2 = Ipv4Addr::new(127, 0, 0, 10);
    let args2 = LeechArgs::new(&torrent, &dir.path().join("leech2"), ip2, free_port_on(ip2));
    let mut l2 = tokio::task::spawn_blocking(move || LtPeer::leech(&args2))
        .await
        .unwrap();
    let start = Instant::now();
    loop {
        let r = row(&h, id).await;
        if r.uploaded > size + 64 * 1024 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "leecher 2 got nothing: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // past the bucket's burst: measure a few seconds
    let (u0, t0) = (row(&h, id).await.uploaded, Instant::now());
    tokio::time::sleep(Duration::from_secs(4)).await;
    let r = row(&h, id).await;
    let rate = (r.uploaded - u0) as f64 / t0.elapsed().as_secs_f64();
    println!("upload to leecher 2: {rate:.0} B/s (limit {alt})");
    assert!(throttled(&r), "{r:?}");
    assert!(rate > 0.0, "still seeding");
    assert!(
        rate < alt as f64 * 1.3,
        "{rate:.0} B/s over the limit {alt}"
    );
    assert_eq!(r.up_limit, 0, "its own upload limit stays none");
    h.shutdown().await.unwrap();
    l2.stop();

    // run 2: still over its goal, it seeds at the alternative rate again at once
    let h = session::start_with_state(cfg(), &state).await.unwrap();
    wait_rows(
        &h.client,
        "at the alt rate again",
        Duration::from_secs(15),
        |rows| rows.iter().any(|r| throttled(r)),
    )
    .await;
    // a raised goal gives it its own rate back
    let id = h.client.snapshot().rows[0].id;
    let three = ShareLimits {
        ratio: 3.0,
        ..ShareLimits::default()
    };
    h.client.set_share_limits(vec![id], three).await.unwrap();
    wait_rows(&h.client, "own rate", Duration::from_secs(5), |rows| {
        rows.iter()
            .any(|r| r.state == TorrentState::Seeding && r.message.is_none())
    })
    .await;
    assert!(event_said(&h, "goal raised: seeding at its own upload rate again").await);
    h.shutdown().await.unwrap();
}
