//! `app/setPreferences` changes the running session, and the TUI shows the same truth:
//! queueing on holds torrents as `queuedDL` (and the queue moves work), off releases them;
//! the session's seeding goal stops a seeding torrent (`pausedUP`); the DHT starts and
//! stops (its row in `torrents/trackers`, `dht` in the preferences); the default save path
//! takes the next add. No network beyond loopback (the DHT has no bootstrap nodes).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::payload;
use common::qbt::{RatWeb, Web};
use serde_json::Value;

async fn state(web: &Web, hash: &str) -> Value {
    web.get("torrents/info", &[("hashes", hash)]).await.json()[0].clone()
}

async fn wait_state(web: &Web, hash: &str, want: &[&str], timeout: Duration) -> Value {
    let start = Instant::now();
    loop {
        let t = state(web, hash).await;
        if want.contains(&t["state"].as_str().unwrap_or_default()) {
            return t;
        }
        assert!(
            start.elapsed() < timeout,
            "{hash}: {} not in {want:?}",
            t["state"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn set(web: &Web, json: &str) {
    let r = web.post("app/setPreferences", &[("json", json)]).await;
    assert_eq!(r.status, 200, "{json}: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferences_change_the_running_session() {
    let rat = RatWeb::start("prefs", "admin", "pw", "");
    let mut web = Web::new(&rat.base);
    let r = web
        .post("auth/login", &[("username", "admin"), ("password", "pw")])
        .await;
    web.cookie = r.sid();

    // queueing: three magnet links (no peers: they fetch metadata forever)
    let hashes: Vec<String> = (1..=3u8)
        .map(|i| format!("{:02x}", i * 17).repeat(20))
        .collect();
    for (i, h) in hashes.iter().enumerate() {
        let link = format!("magnet:?xt=urn:btih:{h}&dn=queued{i}");
        assert_eq!(
            web.post("torrents/add", &[("urls", &link)]).await.body,
            "Ok."
        );
    }
    for h in &hashes {
        assert_eq!(state(&web, h).await["state"], "metaDL");
        assert_eq!(
            state(&web, h).await["priority"],
            0,
            "no place while queueing is off"
        );
    }
    set(
        &web,
        r#"{"queueing_enabled": true, "max_active_downloads": 1, "max_active_torrents": 1}"#,
    )
    .await;
    let prefs = web.get("app/preferences", &[]).await.json();
    assert_eq!(prefs["queueing_enabled"], true);
    assert_eq!(prefs["max_active_downloads"], 1);
    wait_state(&web, &hashes[0], &["metaDL"], Duration::from_secs(5)).await;
    for h in &hashes[1..] {
        wait_state(&web, h, &["queuedDL"], Duration::from_secs(5)).await;
    }
    assert_eq!(state(&web, &hashes[2]).await["priority"], 3);
    rat.pane
        .wait_row("queued2", "Queued", Duration::from_secs(5));
    // the last to the top: it runs, the first waits
    let top = web
        .post("torrents/topPrio", &[("hashes", &hashes[2])])
        .await;
    assert_eq!(top.status, 200);
    wait_state(&web, &hashes[2], &["metaDL"], Duration::from_secs(5)).await;
    wait_state(&web, &hashes[0], &["queuedDL"], Duration::from_secs(5)).await;
    // off: everything runs again
    set(&web, r#"{"queueing_enabled": false}"#).await;
    for h in &hashes {
        wait_state(&web, h, &["metaDL"], Duration::from_secs(5)).await;
    }
    assert_eq!(
        web.post("torrents/topPrio", &[("hashes", &hashes[0])])
            .await
            .status,
        409
    );
    web.post(
        "torrents/delete",
        &[("hashes", &hashes.join("|")), ("deleteFiles", "false")],
    )
    .await;

    // the DHT: off at start, on, off (no bootstrap node: it only binds its socket)
    let public = "ee".repeat(20);
    let link = format!("magnet:?xt=urn:btih:{public}&dn=public");
    web.post("torrents/add", &[("urls", &link)]).await;
    let dht_row = |t: Value| t.as_array().unwrap()[0].clone();
    let trackers = web
        .get("torrents/trackers", &[("hash", &public)])
        .await
        .json();
    assert_eq!(dht_row(trackers)["status"], 0);
    set(&web, r#"{"dht": true}"#).await;
    let start = Instant::now();
    while web.get("app/preferences", &[]).await.json()["dht"] != true {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the DHT never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let trackers = web
        .get("torrents/trackers", &[("hash", &public)])
        .await
        .json();
    assert_eq!(
        dht_row(trackers)["status"],
        2,
        "working for a public torrent"
    );
    set(&web, r#"{"dht": false}"#).await;
    assert_eq!(web.get("app/preferences", &[]).await.json()["dht"], false);
    web.post(
        "torrents/delete",
        &[("hashes", &public), ("deleteFiles", "false")],
    )
    .await;

    // the default save path: the next add without one goes there
    let elsewhere = rat.dl.join("elsewhere");
    let elsewhere_text = elsewhere.display().to_string();
    set(
        &web,
        &serde_json::json!({ "save_path": elsewhere_text }).to_string(),
    )
    .await;
    assert_eq!(
        web.get("app/defaultSavePath", &[]).await.body,
        elsewhere_text
    );

    // a seeding goal: a torrent whose data is there seeds, then the session's ratio goal
    // of 0 stops it at once (Sonarr's "pausedUP and seed limit reached")
    let data = elsewhere.join("Doc.pdf");
    payload::write_file(&data, 300_000, 7).unwrap();
    let torrent: PathBuf = rat.dir.path().join("doc.torrent");
    let hash = common::make_torrent(
        &data,
        &torrent,
        "http://127.0.0.1:1/announce",
        Some(16 << 10),
    )
    .to_hex();
    let bytes = std::fs::read(&torrent).unwrap();
    let add = web
        .post_multipart("torrents/add", &[("torrents", "doc.torrent", &bytes)], &[])
        .await;
    assert_eq!(add.body, "Ok.");
    let t = wait_state(
        &web,
        &hash,
        &["stalledUP", "uploading"],
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(PathBuf::from(t["save_path"].as_str().unwrap()), elsewhere);
    set(
        &web,
        r#"{"max_ratio_enabled": true, "max_ratio": 0, "max_ratio_act": 0}"#,
    )
    .await;
    let prefs = web.get("app/preferences", &[]).await.json();
    assert_eq!(
        (
            prefs["max_ratio_enabled"].clone(),
            prefs["max_ratio"].clone()
        ),
        (Value::from(true), Value::from(0.0))
    );
    wait_state(&web, &hash, &["pausedUP"], Duration::from_secs(10)).await;
    rat.pane.wait_row("Doc.pdf", "Done", Duration::from_secs(5));
    // goal off again: a resume is allowed
    set(&web, r#"{"max_ratio_enabled": false}"#).await;
    web.post("torrents/resume", &[("hashes", &hash)]).await;
    wait_state(
        &web,
        &hash,
        &["stalledUP", "uploading"],
        Duration::from_secs(10),
    )
    .await;

    // the smaller endpoints: piece states, web seeds (none), peers by hand, save path
    let pieces = web
        .get("torrents/pieceStates", &[("hash", &hash)])
        .await
        .json();
    let pieces = pieces.as_array().unwrap();
    assert_eq!(pieces.len(), 300_000usize.div_ceil(16 << 10));
    assert!(pieces.iter().all(|p| p == 2), "{pieces:?}");
    assert_eq!(
        web.get("torrents/webseeds", &[("hash", &hash)])
            .await
            .json(),
        serde_json::json!([])
    );
    let peers = web
        .post(
            "torrents/addPeers",
            &[
                ("hashes", &hash),
                ("peers", "127.0.0.9:6881|[::1]:6881|bad"),
            ],
        )
        .await;
    assert_eq!(peers.json()[&hash]["added"], 2, "{}", peers.body);
    let moved = rat.dl.join("moved");
    let r = web
        .post(
            "torrents/setSavePath",
            &[("id", &hash), ("path", &moved.display().to_string())],
        )
        .await;
    assert_eq!(r.status, 200);
    let start = Instant::now();
    while !moved.join("Doc.pdf").exists() || data.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "not moved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t = wait_state(
        &web,
        &hash,
        &["stalledUP", "uploading"],
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        PathBuf::from(t["content_path"].as_str().unwrap()),
        moved.join("Doc.pdf")
    );
}
