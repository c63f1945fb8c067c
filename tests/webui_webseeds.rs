//! The Web API's `torrents/webseeds` lists a torrent's web seeds (BEP 19) as qBittorrent
//! does (`[{"url": ...}]`), for a torrent added through `torrents/add` that downloads
//! from its web seed alone.

mod common;

use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::qbt::{RatWeb, Web};
use common::webseed::WebSeedServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torrents_webseeds_lists_the_web_seeds_of_a_torrent() {
    let rat = RatWeb::start("webseeds", "admin", "pw", "");
    let mut web = Web::new(&rat.base);
    let r = web
        .post("auth/login", &[("username", "admin"), ("password", "pw")])
        .await;
    web.cookie = r.sid();

    let src = tempfile::tempdir().unwrap();
    payload::write_tree(src.path(), &[FileSpec::new("doc.bin", 300_001)], 5).unwrap();
    let server = WebSeedServer::start(src.path());
    let torrent = src.path().join("doc.torrent");
    let ih = common::lt::make_web_seed_torrent(
        &src.path().join("doc.bin"),
        &torrent,
        "",
        Some(16 << 10),
        false,
        &[server.url()],
    );
    let hash = ih.to_hex();
    let bytes = std::fs::read(&torrent).unwrap();
    let r = web
        .post_multipart("torrents/add", &[("torrents", "doc.torrent", &bytes)], &[])
        .await;
    assert_eq!(r.body, "Ok.", "{r:?}");
    let start = Instant::now();
    loop {
        let t = web.get("torrents/info", &[("hashes", &hash)]).await.json();
        if t[0]["progress"].as_f64() == Some(1.0) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    common::compare_files(&src.path().join("doc.bin"), &rat.dl.join("doc.bin")).unwrap();
    assert_eq!(
        web.get("torrents/webseeds", &[("hash", &hash)])
            .await
            .json(),
        serde_json::json!([{ "url": server.url() }])
    );
}
