//! The bridge against a real engine (a session without state, port 0, no DHT) served on a
//! socket in a temporary folder.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::api::{AddError, AddRequest, ClientError, EventKind, TorrentState, TrackerEdit};
use crate::config::engine::{DhtConfig, EngineConfig};
use crate::control::server::{self, Server};
use crate::engine::session::{self, SessionHandle};

const WAIT: Duration = Duration::from_secs(20);

struct Daemon {
    _dir: tempfile::TempDir,
    root: PathBuf,
    socket: PathBuf,
    handle: SessionHandle,
    server: Server,
}

async fn daemon() -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("data")).unwrap();
    let config = EngineConfig {
        download_dir: root.join("data"),
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    };
    let handle = session::start(config).await.unwrap();
    let run = root.join("run");
    crate::control::prepare_socket_dir(&run).unwrap();
    let socket = run.join("control.sock");
    let listener = server::bind(&socket).unwrap();
    let server = server::serve(
        listener,
        handle.client.clone(),
        DaemonInfo {
            pid: std::process::id(),
            state_dir: root.clone(),
        },
    );
    Daemon {
        _dir: dir,
        root,
        socket,
        handle,
        server,
    }
}

/// A complete single-file torrent of 300 KiB in `root/data`, its .torrent in `root`.
fn torrent(root: &Path, name: &str) -> PathBuf {
    let data = root.join("data").join(name);
    let bytes: Vec<u8> = (0..300 * 1024u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&data, bytes).unwrap();
    let meta = crate::metainfo::create::TorrentBuilder::new(&data)
        .piece_length(16384)
        .build()
        .unwrap();
    let path = root.join(format!("{name}.torrent"));
    std::fs::write(&path, meta).unwrap();
    path
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_client_drives_the_engine_as_an_in_process_one_does() {
    let d = daemon().await;
    let remote = connect(&d.socket).await.unwrap();
    assert_eq!(remote.daemon.pid, std::process::id());
    assert_eq!(remote.daemon.state_dir, d.root);
    let client = &remote.client;
    let mut events = client.subscribe();
    // an add answers through the socket, and the snapshot shows it
    let path = torrent(&d.root, "a.bin");
    let id = within("add", client.add(AddRequest::new(path.clone())))
        .await
        .unwrap();
    let snap = within(
        "the torrent seeding",
        client.wait_for(|s| s.row(id).is_some_and(|r| r.state == TorrentState::Seeding)),
    )
    .await
    .unwrap();
    assert_eq!(snap.row(id).unwrap().name, "a.bin");
    let again = within("second add", client.add(AddRequest::new(path))).await;
    assert!(
        matches!(again, Err(ClientError::Refused(AddError::AlreadyAdded { id: same, .. })) if same == id),
        "{again:?}"
    );
    // events come through, and the history
    let added = within("an event", async {
        loop {
            let e = events.recv().await.unwrap();
            if e.kind == EventKind::Added {
                return e;
            }
        }
    })
    .await;
    assert_eq!(added.torrent, Some(id));
    let history = within("history", client.recent_events()).await.unwrap();
    assert!(history.iter().any(|e| e.seq == added.seq));
    // commands without an answer: limits, focus
    client.set_limits(1000, 2000).await.unwrap();
    client.focus(Some(id)).await.unwrap();
    within(
        "limits and the detail",
        client.wait_for(|s| {
            s.global.down_limit == 1000
                && s.global.up_limit == 2000
                && s.detail
                    .as_ref()
                    .is_some_and(|d| d.id == id && d.files.len() == 1)
        }),
    )
    .await
    .unwrap();
    let edit = TrackerEdit::Add(vec!["http://127.0.0.1:1/announce".into()]);
    let outcome = within("tracker edit", client.edit_trackers(vec![id], edit, true))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((outcome.urls, outcome.torrents), (1, 1));
    // the remote copy is the engine's snapshot, field for field
    within("the same snapshot both sides", async {
        loop {
            let (mine, theirs) = (client.snapshot(), d.handle.client.snapshot());
            if mine.seq == theirs.seq {
                assert_eq!(*mine, *theirs);
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // a shutdown asked over the socket is confirmed, then the connection closes
    within("shutdown", client.shutdown()).await.unwrap();
    within("the engine task", d.handle.task).await.unwrap();
    d.server.stop(Duration::from_secs(2)).await;
    within("closed", client.closed()).await;
    assert!(client.wait_for(|_| false).await.is_err());
    assert_eq!(client.pause(id).await, Err(ClientError::EngineGone));
}

/// Read the daemon's hello line from a raw connection.
async fn raw_hello(socket: &Path, hello: &[u8]) -> (String, tokio::io::BufReader<UnixStream>) {
    let mut s = UnixStream::connect(socket).await.unwrap();
    s.write_all(hello).await.unwrap();
    let mut r = tokio::io::BufReader::new(s);
    let mut line = String::new();
    within("hello", r.read_line(&mut line)).await.unwrap();
    (line, r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_versions_garbage_and_oversized_frames_close_only_their_connection() {
    let d = daemon().await;
    let (line, _) = raw_hello(&d.socket, b"ratorrent-control 999 ratorrent/9.9.9\n").await;
    assert!(
        line.starts_with(
            "ratorrent-control 2 refused this daemon speaks control protocol 2, the client 999"
        ),
        "{line}"
    );
    let (line, _) = raw_hello(&d.socket, b"GET / HTTP/1.1\r\n").await;
    assert!(
        line.contains("refused not a ratorrent control client"),
        "{line}"
    );
    let (line, _) = raw_hello(&d.socket, &[0xff; 9000]).await;
    assert!(line.contains("refused no hello line"), "{line}");
    for (frame, why) in [
        (u32::MAX.to_be_bytes().to_vec(), "over the limit"),
        (vec![0, 0, 0, 3, 0xff, 0xff, 0xff], "does not decode"),
    ] {
        let (line, mut r) = raw_hello(&d.socket, wire::client_hello().as_bytes()).await;
        assert!(line.contains(" ok pid="), "{line}");
        r.get_mut().write_all(&frame).await.unwrap();
        let mut buf = Vec::new();
        let closing = within("closing", async {
            loop {
                match wire::read_frame::<_, ServerMsg>(&mut r, &mut buf, MAX_SERVER_FRAME).await {
                    Ok(ServerMsg::Closing(reason)) => return reason,
                    Ok(_) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        })
        .await;
        assert!(closing.contains(why), "{closing}");
        let mut rest = Vec::new();
        within("eof", r.read_to_end(&mut rest)).await.unwrap();
    }
    // the engine and the socket still serve
    let remote = connect(&d.socket).await.unwrap();
    remote.client.set_limits(77, 0).await.unwrap();
    within(
        "limit",
        remote.client.wait_for(|s| s.global.down_limit == 77),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_of_another_version_is_named_by_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let answers = [
        "ratorrent-control 3 refused this daemon speaks control protocol 3, the client 2\n",
        "ratorrent-control 3 ok pid=1 state=/s\n",
        "ratorrent-control 2 refused too many connections to this daemon\n",
        "SSH-2.0-OpenSSH_9.2\n",
    ];
    let serving = tokio::spawn(async move {
        for answer in answers {
            let (s, _) = listener.accept().await.unwrap();
            let mut r = tokio::io::BufReader::new(s);
            let mut hello = String::new();
            r.read_line(&mut hello).await.unwrap();
            r.get_mut().write_all(answer.as_bytes()).await.unwrap();
        }
    });
    for _ in 0..2 {
        let e = connect(&path).await.unwrap_err();
        assert!(
            matches!(e, AttachError::Version { ours: 2, daemon: 3 }),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("the daemon speaks control protocol 3 and this ratorrent speaks 2"),
            "{e}"
        );
    }
    let e = connect(&path).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the daemon refused the connection: too many connections to this daemon"
    );
    let e = connect(&path).await.unwrap_err().to_string();
    assert!(
        e.contains("did not answer as a ratorrent daemon does"),
        "{e}"
    );
    serving.await.unwrap();
    let e = connect(&dir.path().join("none.sock"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cannot connect to the daemon's control socket"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_does_not_hold_the_engine_up() {
    let d = daemon().await;
    // attached, then stuck: it reads nothing more
    let (line, _stuck) = raw_hello(&d.socket, wire::client_hello().as_bytes()).await;
    assert!(line.contains(" ok "), "{line}");
    // megabytes of events for it (refused adds with long reasons): far more than the
    // socket's buffers hold
    let reason = "x".repeat(4000);
    for i in 0..1500 {
        d.handle
            .client
            .add_refused(
                AddSource::File(format!("/w/{i}.magnet").into()),
                reason.clone(),
            )
            .await
            .unwrap();
    }
    // the engine answers at once, and another client is served
    let t = std::time::Instant::now();
    let history = within("history", d.handle.client.recent_events())
        .await
        .unwrap();
    assert!(!history.is_empty());
    let remote = connect(&d.socket).await.unwrap();
    remote.client.set_limits(5, 6).await.unwrap();
    within("limits", remote.client.wait_for(|s| s.global.up_limit == 6))
        .await
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}
