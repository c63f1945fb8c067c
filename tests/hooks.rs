//! `on_added` / `on_complete` programs run by a real in-process session, without a shell:
//! a torrent whose name holds quotes, spaces, `$(touch x)` and backticks, downloaded into
//! a folder whose name holds a newline, from a real libtorrent seeder over loopback; a
//! python3 program records its arguments. Also: `on_added` does not run again after a
//! restart, `on_complete` not for a complete torrent restored or rechecked; a program past
//! `hook_timeout` is killed and logged; a missing program is logged as "could not start".

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::client::wait_rows;
use common::payload::{self, FileSpec};
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, EngineEvent, EventKind, EventLevel, TorrentId, TorrentState};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::engine::session::{self, SessionHandle};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// The torrent's name: everything a shell would act on.
const NAME: &str = "it's \"q\" a  b $(touch x) `touch y`;touch z";

/// A python3 program that appends one JSON line per run to the file given first: the
/// other arguments and the folder it runs in.
const RECORDER: &str = r#"import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"args": sys.argv[2:], "cwd": os.getcwd()}) + "\n")
"#;

fn config(download_dir: &Path) -> EngineConfig {
    EngineConfig {
        download_dir: download_dir.to_path_buf(),
        listen_port: 0,
        dht: DhtConfig::off(),
        hook_timeout: 10,
        ..EngineConfig::default()
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The runs recorded in `file` so far (none while it does not exist).
fn runs(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// Wait up to `within` for an event of torrent `id` of kind Hook matching `ok`.
async fn wait_hook_event(
    h: &SessionHandle,
    id: TorrentId,
    within: Duration,
    ok: impl Fn(&EngineEvent) -> bool,
) -> EngineEvent {
    let end = Instant::now() + within;
    loop {
        let events = h.client.recent_events().await.unwrap();
        if let Some(e) = events
            .iter()
            .find(|e| e.torrent == Some(id) && e.kind == EventKind::Hook && ok(e))
        {
            return e.clone();
        }
        assert!(
            Instant::now() < end,
            "no such Hook event in {within:?}; events: {:#?}",
            events
                .iter()
                .map(|e| (&e.kind, &e.message))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn hook_events(events: &[EngineEvent]) -> Vec<&EngineEvent> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Hook)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_get_each_argument_whole_run_once_and_nothing_in_a_name_is_executed() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = [
        FileSpec::new("a.bin", 300_000),
        FileSpec::new("sub/b.bin", 123_457),
    ];
    payload::write_tree(&src.join(NAME), &layout, 7).unwrap();
    let torrent = dir.path().join("t.torrent");
    let ih = make_torrent(&src.join(NAME), &torrent, &tracker.url(), Some(32 * 1024));
    let _seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        &src,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));

    // the download folder's name holds a newline and shell syntax too
    let dst: PathBuf = dir.path().join("down\nload $(touch x) 'dir'");
    std::fs::create_dir_all(&dst).unwrap();
    let state = dir.path().join("state");
    let script = dir.path().join("record.py");
    std::fs::write(&script, RECORDER).unwrap();
    let added_log = dir.path().join("added.jsonl");
    let complete_log = dir.path().join("complete.jsonl");
    let py = |log: &Path, args: &[&str]| {
        let mut v = strings(&["python3", script.to_str().unwrap(), log.to_str().unwrap()]);
        v.extend(strings(args));
        v
    };
    let cfg = EngineConfig {
        on_added: py(&added_log, &["%N", "%I", "%C"]),
        on_complete: py(
            &complete_log,
            &[
                "%N", "%F", "%R", "%D", "%C", "%Z", "%I", "%K", "%T", "%L", "%G", "%J", "name=%N",
                "100%%", "%x",
            ],
        ),
        ..config(&dst)
    };

    // run 1: added (on_added once), downloaded (on_complete once)
    let h = session::start_with_state(cfg.clone(), &state)
        .await
        .unwrap();
    // a category and tags (one with a space, one with shell syntax): %L and %G
    let id = h
        .client
        .add(
            AddRequest::new(torrent.clone())
                .category("tv/hd")
                .tags(vec!["cross seed".into(), "$(touch y)".into()]),
        )
        .await
        .unwrap();
    wait_rows(&h.client, "downloaded", Duration::from_secs(20), |rows| {
        rows.iter()
            .any(|r| r.id == id && r.pieces_total > 0 && r.pieces_have == r.pieces_total)
    })
    .await;
    let done = wait_hook_event(&h, id, Duration::from_secs(10), |e| {
        e.message.contains("on_complete")
    })
    .await;
    assert_eq!(done.level, EventLevel::Info, "{}", done.message);
    assert!(
        done.message.contains("exited with code 0"),
        "{}",
        done.message
    );
    let added = wait_hook_event(&h, id, Duration::from_secs(5), |e| {
        e.message.contains("on_added")
    })
    .await;
    assert_eq!(added.level, EventLevel::Info, "{}", added.message);

    // the category's folder under the download folder (as qBittorrent does)
    let save = dst.join("tv").join("hd");
    let content = save.join(NAME);
    let hex = ih.to_hex();
    let size: u64 = layout.iter().map(|f| f.len).sum();
    let complete = runs(&complete_log);
    assert_eq!(complete.len(), 1, "on_complete ran once: {complete:?}");
    let args: Vec<String> = serde_json::from_value(complete[0]["args"].clone()).unwrap();
    let want = vec![
        NAME.to_string(),
        content.to_str().unwrap().to_string(),
        content.to_str().unwrap().to_string(),
        save.to_str().unwrap().to_string(),
        "2".to_string(),
        size.to_string(),
        hex.clone(),
        hex.clone(),
        tracker.url(),
        "tv/hd".to_string(),
        "cross seed,$(touch y)".to_string(),
        String::new(), // %J: a v1 torrent has no v2 info hash
        format!("name={NAME}"),
        "100%".to_string(),
        "%x".to_string(),
    ];
    assert_eq!(args, want, "each element arrived as one exact argument");
    assert!(args[3].contains('\n'), "the newline reached the program");
    let added_runs = runs(&added_log);
    assert_eq!(added_runs.len(), 1, "on_added ran once: {added_runs:?}");
    assert_eq!(
        added_runs[0]["args"],
        serde_json::json!([NAME, hex, "2"]),
        "on_added's arguments"
    );

    // nothing in the name or the folder was executed, anywhere
    let cwd = PathBuf::from(complete[0]["cwd"].as_str().unwrap());
    for d in [
        cwd.as_path(),
        dir.path(),
        dst.as_path(),
        content.as_path(),
        &std::env::current_dir().unwrap(),
    ] {
        for f in ["x", "y", "z"] {
            assert!(!d.join(f).exists(), "{} was created", d.join(f).display());
        }
    }

    // a recheck of the complete data does not complete it again
    let checked = |events: &[EngineEvent]| {
        events
            .iter()
            .filter(|e| e.torrent == Some(id) && e.kind == EventKind::Checked)
            .count()
    };
    let checks_before = checked(&h.client.recent_events().await.unwrap());
    h.client.recheck(id).await.unwrap();
    let rechecked = Instant::now();
    loop {
        let events = h.client.recent_events().await.unwrap();
        if checked(&events) > checks_before {
            break;
        }
        assert!(
            rechecked.elapsed() < Duration::from_secs(10),
            "recheck did not finish"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_rows(
        &h.client,
        "seeding after the recheck",
        Duration::from_secs(10),
        |rows| {
            rows.iter()
                .any(|r| r.id == id && r.state == TorrentState::Seeding)
        },
    )
    .await;
    h.shutdown().await.unwrap();

    // run 2: restored complete, seeding: neither program runs again
    let h = session::start_with_state(cfg, &state).await.unwrap();
    wait_rows(
        &h.client,
        "restored and seeding",
        Duration::from_secs(10),
        |rows| rows.len() == 1 && rows[0].state == TorrentState::Seeding,
    )
    .await;
    // a program started now would have recorded itself well within this
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let events = h.client.recent_events().await.unwrap();
    assert!(
        hook_events(&events).is_empty(),
        "no program ran after the restart: {:?}",
        hook_events(&events)
    );
    h.shutdown().await.unwrap();
    assert_eq!(
        runs(&added_log).len(),
        1,
        "on_added not run for a restored torrent"
    );
    assert_eq!(
        runs(&complete_log).len(),
        1,
        "on_complete not run again (recheck, restore)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_past_the_timeout_is_killed_and_a_missing_one_could_not_start() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    payload::write_tree(&data, &[FileSpec::new("one.bin", 40_000)], 3).unwrap();
    let torrent = dir.path().join("one.torrent");
    make_torrent(
        &data.join("one.bin"),
        &torrent,
        &tracker.url(),
        Some(16 * 1024),
    );
    let dst = dir.path().join("dst");

    // a program that writes to stderr, then sleeps far past its 1 s
    let sleeper = strings(&[
        "python3",
        "-c",
        "import sys, time; sys.stderr.write('still busy\\n'); sys.stderr.flush(); time.sleep(30)",
    ]);
    let h = session::start(EngineConfig {
        on_added: sleeper,
        hook_timeout: 1,
        ..config(&dst)
    })
    .await
    .unwrap();
    let asked = Instant::now();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).paused(true))
        .await
        .unwrap();
    // the session answers while the program runs: it never waits on it
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    let e = wait_hook_event(&h, id, Duration::from_secs(10), |_| true).await;
    assert_eq!(e.level, EventLevel::Warn);
    assert!(
        e.message
            .contains("on_added program python3 killed after 1 s")
            && e.message.ends_with("stderr: still busy"),
        "{}",
        e.message
    );
    assert!(
        asked.elapsed() < Duration::from_secs(8),
        "{:?}",
        asked.elapsed()
    );
    h.shutdown().await.unwrap();

    let missing = dir.path().join("no such program");
    let h = session::start(EngineConfig {
        on_added: vec![missing.to_str().unwrap().to_string(), "%N".into()],
        ..config(&dst)
    })
    .await
    .unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent).paused(true))
        .await
        .unwrap();
    let e = wait_hook_event(&h, id, Duration::from_secs(10), |_| true).await;
    assert_eq!(e.level, EventLevel::Warn);
    assert!(
        e.message
            .contains("could not start: No such file or directory"),
        "{}",
        e.message
    );
    assert!(e.message.contains("no such program"), "{}", e.message);
    h.shutdown().await.unwrap();
}
