//! Alternative speed limits in a real session: switched by the command against a real
//! libtorrent seeder over loopback (the download slows to the alternative limit and speeds
//! up again), and switched by the schedule with the session's local clock set one second
//! before a boundary (no waiting on the wall clock's hours).

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, Snapshot};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::config::schedule::{AltSpeedSchedule, Days, parse_clock_time};
use ratorrent::engine::alt_speed::OffsetClock;

const ALT: u64 = 200 << 10; // 200 KiB/s
const SIZE: u64 = 8 << 20; // 8 MiB: 40 s at the alternative limit

fn config(download_dir: std::path::PathBuf) -> EngineConfig {
    EngineConfig {
        download_dir,
        listen_port: 0,
        dht: DhtConfig::off(),
        alt_download_rate_limit: ALT,
        alt_upload_rate_limit: ALT,
        ..EngineConfig::default()
    }
}

/// Wait until `f` holds for the latest snapshot.
async fn until(
    client: &ratorrent::api::Client,
    within: Duration,
    what: &str,
    f: impl Fn(&Snapshot) -> bool,
) -> Arc<Snapshot> {
    let end = Instant::now() + within;
    loop {
        let s = client.snapshot();
        if f(&s) {
            return s;
        }
        assert!(
            Instant::now() < end,
            "{what}: not within {within:?}: {:?}",
            s.global
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_slows_a_real_download_to_the_alternative_limit_and_back() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("f.bin", SIZE)], 7).unwrap();
    let torrent = dir.path().join("f.torrent");
    make_torrent(
        &src.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let ip = Ipv4Addr::new(127, 0, 0, 5);
    let _seeder = LtPeer::seed(&SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));

    let dst = dir.path().join("dst");
    let h = ratorrent::engine::session::start(config(dst.clone()))
        .await
        .unwrap();
    h.client.set_alt_speed(true).await.unwrap();
    until(&h.client, Duration::from_secs(5), "alt on", |s| {
        s.global.alt_speed && s.global.down_limit == ALT
    })
    .await;
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    let done = |s: &Snapshot| s.row(id).map_or(0, |r| r.done);
    // the first bytes (and the limiter's burst) come in
    until(&h.client, Duration::from_secs(20), "first bytes", |s| {
        done(s) > 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (t0, d0) = (Instant::now(), done(&h.client.snapshot()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (t1, d1) = (Instant::now(), done(&h.client.snapshot()));
    let rate = (d1 - d0) as f64 / (t1 - t0).as_secs_f64();
    println!("alternative limit {ALT} B/s: measured {rate:.0} B/s");
    // snapshots come at most twice a second and a piece counts when verified (64 KiB):
    // allow 50% over; far below the megabytes a second loopback gives unlimited
    assert!(
        rate <= ALT as f64 * 1.5,
        "download at {rate:.0} B/s with the alternative limit at {ALT}"
    );
    assert!(d1 < SIZE, "finished while limited");

    // off: back to the normal pair (unlimited here), the rest comes at once
    h.client.set_alt_speed(false).await.unwrap();
    let off = Instant::now();
    let s = until(
        &h.client,
        Duration::from_secs(15),
        "done after alt off",
        |s| done(s) == SIZE,
    )
    .await;
    let took = off.elapsed();
    println!(
        "alternative speeds off: the remaining {} bytes in {took:?}",
        SIZE - d1
    );
    assert!(!s.global.alt_speed && s.global.down_limit == 0);
    // at 200 KiB/s the rest would take over 20 s
    assert!(took < Duration::from_secs(15));
    common::compare_files(&src.join("f.bin"), &dst.join("f.bin")).unwrap();
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_switches_at_its_boundaries_and_keeps_the_normal_limits() {
    let dir = temp_dir();
    let mut config = config(dir.path().join("dl"));
    config.download_rate_limit = 3 << 20;
    config.upload_rate_limit = 1 << 20;
    config.alt_speed_schedule = AltSpeedSchedule {
        enabled: true,
        from: parse_clock_time("18:00").unwrap(),
        to: parse_clock_time("18:01").unwrap(),
        days: Days::EVERY_DAY,
    };
    // local time: one second before 18:00, a Monday
    let start = chrono::NaiveDate::from_ymd_opt(2026, 12, 7)
        .unwrap()
        .and_hms_opt(17, 59, 59)
        .unwrap();
    let clock = Arc::new(OffsetClock::starting_at(start));
    let state = dir.path().join("state");
    let h = ratorrent::engine::session::start_with_clock(config.clone(), Some(&state), clock)
        .await
        .unwrap();
    let g = h.client.snapshot().global.clone();
    assert!(!g.alt_speed, "17:59:59 is before the window");
    assert_eq!((g.down_limit, g.up_limit), (3 << 20, 1 << 20));
    let t = Instant::now();
    until(&h.client, Duration::from_secs(5), "on at 18:00", |s| {
        s.global.alt_speed && (s.global.down_limit, s.global.up_limit) == (ALT, ALT)
    })
    .await;
    println!("on by the schedule after {:?}", t.elapsed());
    // by hand off: holds until the next boundary (18:01, a minute away)
    h.client.set_alt_speed(false).await.unwrap();
    let s = until(&h.client, Duration::from_secs(5), "off by hand", |s| {
        !s.global.alt_speed
    })
    .await;
    assert_eq!((s.global.down_limit, s.global.up_limit), (3 << 20, 1 << 20));
    let events = h.client.recent_events().await.unwrap();
    let said: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == ratorrent::api::EventKind::AltSpeed)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].contains("on by the schedule"), "{said:?}");
    assert!(said[1].contains("off by hand"), "{said:?}");
    h.client.set_alt_speed(true).await.unwrap();
    h.shutdown().await.unwrap();

    // the switch is kept across a restart (no schedule this time) and the normal pair with it
    config.alt_speed_schedule.enabled = false;
    let h = ratorrent::engine::session::start_with_state(config, &state)
        .await
        .unwrap();
    let g = h.client.snapshot().global.clone();
    assert!(
        g.alt_speed && (g.down_limit, g.up_limit) == (ALT, ALT),
        "{g:?}"
    );
    h.client.set_alt_speed(false).await.unwrap();
    until(
        &h.client,
        Duration::from_secs(5),
        "normal limits back",
        |s| (s.global.down_limit, s.global.up_limit) == (3 << 20, 1 << 20),
    )
    .await;
    h.shutdown().await.unwrap();
}
