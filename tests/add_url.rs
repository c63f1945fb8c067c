//! Adding a torrent by the http(s) URL of its .torrent file (issue 15), through the real
//! binary against a small HTTP server on 127.0.0.1 in this test: the fetched torrent
//! downloads from a libtorrent seeder; a redirect to a magnet link is added as that link;
//! a 404, a body that is not a torrent, a body over the .torrent reader's cap, a server
//! that never answers and a `file://` URL are each refused with the reason (exit 1), the
//! URL's passkey masked everywhere; a refusal reaches the session log.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    LtPeer, SeedArgs, TestTracker, compare_trees, free_port, free_port_on, make_torrent, temp_dir,
};
use ratorrent::api::{AddRequest, AddSource, ClientError, EventKind};
use ratorrent::engine::session;
use ratorrent::metainfo::MAX_TORRENT_FILE_BYTES;

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const PASSKEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// What the server answers for a path (the query is ignored).
#[derive(Clone)]
enum Answer {
    /// 200 with this body, served as `text/html` (the content type is not trusted).
    Body(Vec<u8>),
    /// A status with a short body.
    Status(u16, &'static str),
    /// 302 to this location.
    Redirect(String),
    /// 200 announcing this many bytes, then sending a few.
    Claims(u64),
    /// Accept, read the request, never answer.
    Silent,
}

/// A tiny HTTP/1.1 server on 127.0.0.1 (one thread per connection, `Connection: close`);
/// `url(path)` names a path on it.
struct Server {
    port: u16,
}

impl Server {
    fn start(routes: HashMap<&'static str, Answer>) -> Server {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes = Arc::new(routes);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let routes = Arc::clone(&routes);
                std::thread::spawn(move || serve(conn, &routes));
            }
        });
        Server { port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn serve(mut conn: TcpStream, routes: &HashMap<&'static str, Answer>) {
    conn.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut request = Vec::new();
    let mut buf = [0u8; 2048];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let target = text.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or(target);
    let head = |status: &str, extra: &str, len: u64| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\n{extra}Content-Length: {len}\r\nConnection: close\r\n\r\n"
        )
    };
    let _ = match routes.get(path) {
        Some(Answer::Body(body)) => conn
            .write_all(head("200 OK", "", body.len() as u64).as_bytes())
            .and_then(|()| conn.write_all(body)),
        Some(Answer::Status(code, body)) => conn
            .write_all(head(&format!("{code} Whatever"), "", body.len() as u64).as_bytes())
            .and_then(|()| conn.write_all(body.as_bytes())),
        Some(Answer::Redirect(to)) => {
            conn.write_all(head("302 Found", &format!("Location: {to}\r\n"), 0).as_bytes())
        }
        Some(Answer::Claims(len)) => conn
            .write_all(head("200 OK", "", *len).as_bytes())
            .and_then(|()| conn.write_all(b"d8:announce")),
        Some(Answer::Silent) => {
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        }
        None => conn.write_all(head("404 Not Found", "", 0).as_bytes()),
    };
}

/// A small multi-file payload, its .torrent (announcing to a test tracker) and a libtorrent
/// seeder of it on 127.0.0.2.
struct Swarm {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    torrent: std::path::PathBuf,
    dst: std::path::PathBuf,
    info_hash: ratorrent::metainfo::InfoHash,
    _tracker: TestTracker,
}

fn swarm() -> Swarm {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("src").join("payload");
    let files = [
        FileSpec::new("a.bin", 300_000),
        FileSpec::new("sub/b.bin", 200_001),
    ];
    payload::write_tree(&data, &files, 0x15).unwrap();
    let torrent = dir.path().join("payload.torrent");
    let info_hash = make_torrent(&data, &torrent, &tracker.url(), Some(16 * 1024));
    Swarm {
        dst: dir.path().join("dst"),
        _dir: dir,
        data,
        torrent,
        info_hash,
        _tracker: tracker,
    }
}

fn seeder(s: &Swarm) -> LtPeer {
    LtPeer::seed(&SeedArgs::new(
        &s.torrent,
        s.data.parent().unwrap(),
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ))
}

/// `ratorrent download URL -o DIR` with `extra_config`.
fn download(url: &str, dst: &Path, extra_config: &str) -> Rat {
    let port = free_port().to_string();
    Rat::spawn(
        &[
            "download",
            url,
            "-o",
            dst.to_str().unwrap(),
            "--port",
            &port,
        ],
        extra_config,
    )
}

#[test]
fn a_torrent_fetched_by_url_downloads_from_libtorrent() {
    let s = swarm();
    let _seeder = seeder(&s);
    let server = Server::start(HashMap::from([(
        "/dl/payload.torrent",
        Answer::Body(std::fs::read(&s.torrent).unwrap()),
    )]));
    let url = server.url(&format!("/dl/payload.torrent?passkey={PASSKEY}"));
    let mut rat = download(&url, &s.dst, "");
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    let out = rat.output();
    assert!(status.success(), "ratorrent exited with {status}\n{out}");
    compare_trees(&s.data, &s.dst.join("payload")).unwrap();
    assert!(
        out.contains(&format!(
            "fetching {}…",
            server.url("/dl/payload.torrent?passkey=***")
        )),
        "{out}"
    );
    assert!(out.contains("complete: payload"), "{out}");
    assert!(
        !out.contains(PASSKEY),
        "the passkey is never printed\n{out}"
    );
}

#[test]
fn a_redirect_to_a_magnet_link_is_added_as_that_link() {
    let s = swarm();
    let seeder = seeder(&s);
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=payload&x.pe={}",
        s.info_hash.to_hex(),
        seeder.addr()
    );
    let server = Server::start(HashMap::from([("/dl", Answer::Redirect(link))]));
    let mut rat = download(&server.url("/dl?id=7"), &s.dst, "");
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    let out = rat.output();
    assert!(status.success(), "ratorrent exited with {status}\n{out}");
    assert!(
        out.contains("Fetching metadata"),
        "added as a magnet link\n{out}"
    );
    compare_trees(&s.data, &s.dst.join("payload")).unwrap();
}

#[test]
fn every_failed_fetch_is_a_refused_add_with_its_reason() {
    let dir = temp_dir();
    let server = Server::start(HashMap::from([
        ("/gone.torrent", Answer::Status(404, "no such torrent")),
        (
            "/page.torrent",
            Answer::Body(b"<html>log in first</html>".to_vec()),
        ),
        ("/huge.torrent", Answer::Claims(MAX_TORRENT_FILE_BYTES + 1)),
        ("/slow.torrent", Answer::Silent),
    ]));
    let cases = [
        (server.url("/gone.torrent"), "HTTP 404"),
        (server.url("/page.torrent"), "not a valid torrent"),
        (
            server.url("/huge.torrent"),
            &format!("larger than {MAX_TORRENT_FILE_BYTES} bytes"),
        ),
        (server.url("/slow.torrent"), "no complete answer within 2 s"),
        (
            "file:///etc/passwd".to_owned(),
            "only http:// and https:// URLs can be fetched, not file://",
        ),
    ];
    // all at once: the slow one takes its 2 s while the others end
    let mut runs: Vec<(Rat, String, &str)> = cases
        .iter()
        .map(|(url, why)| {
            let url = if url.starts_with("http") {
                format!("{url}?passkey={PASSKEY}")
            } else {
                url.clone()
            };
            (
                download(&url, dir.path(), "add_url_timeout = 2\n"),
                url,
                *why,
            )
        })
        .collect();
    for (rat, url, why) in &mut runs {
        let status = rat.wait(Duration::from_secs(30)).unwrap();
        let out = rat.output();
        assert_eq!(status.code(), Some(1), "{url}\n{out}");
        let err = rat.stderr();
        assert!(err.contains(*why), "{url}: want {why:?}\n{out}");
        assert!(
            !out.contains(PASSKEY),
            "the passkey is never printed\n{out}"
        );
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fetch_reaches_the_session_log_with_the_url_masked() {
    let server = Server::start(HashMap::from([(
        "/gone.torrent",
        Answer::Status(404, "gone"),
    )]));
    let dir = temp_dir();
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dir.path().to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let url = server.url(&format!("/gone.torrent?passkey={PASSKEY}"));
    let refused = h
        .client
        .add(AddRequest::new(AddSource::Url(url)))
        .await
        .unwrap_err();
    let ClientError::Refused(e) = refused else {
        panic!("{refused:?}")
    };
    let masked = server.url("/gone.torrent?passkey=***");
    assert_eq!(
        e.to_string(),
        format!("{masked}: the server answered HTTP 404 Not Found")
    );
    let events = h.client.recent_events().await.unwrap();
    let logged: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == EventKind::AddRefused)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(logged, [format!("not added: {e}")]);
    assert!(h.client.snapshots().borrow().rows.is_empty());
    h.shutdown().await.unwrap();
}
