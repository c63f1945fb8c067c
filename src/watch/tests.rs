use super::*;
use crate::api::{Command, Snapshot};
use std::sync::atomic::AtomicUsize;

/// A client whose commands go to `tx` (the stand-in engine publishes nothing).
fn client(tx: mpsc::Sender<Command>) -> Client {
    let (_, snapshots) = tokio::sync::watch::channel(Arc::new(Snapshot::default()));
    Client::new(tx, snapshots, &tokio::sync::broadcast::channel(1).0)
}

#[test]
fn names_are_classified_by_extension_hidden_and_suffix() {
    use FileKind::*;
    for (name, kind) in [
        ("ubuntu.torrent", Torrent),
        ("Ubuntu.TORRENT", Torrent),
        ("a b [x].torrent", Torrent),
        ("link.magnet", Magnet),
        ("LINK.Magnet", Magnet),
        // our own renames
        ("ubuntu.torrent.added", Ignored),
        ("ubuntu.torrent.invalid", Ignored),
        ("ubuntu.torrent.2.added", Ignored),
        ("link.magnet.invalid", Ignored),
        // hidden and temp files of rsync, editors, downloaders
        (".ubuntu.torrent", Ignored),
        (".ubuntu.torrent.Xa81b2", Ignored),
        ("ubuntu.torrent.part", Ignored),
        ("ubuntu.torrent~", Ignored),
        ("ubuntu.torrent.tmp", Ignored),
        // no name before the extension, other files
        (".torrent", Ignored),
        (".magnet", Ignored),
        ("torrent", Ignored),
        ("notes.txt", Ignored),
        ("", Ignored),
    ] {
        assert_eq!(classify(OsStr::new(name)), kind, "{name:?}");
    }
}

#[cfg(unix)]
#[test]
fn non_utf8_names_are_classified_too() {
    use std::os::unix::ffi::OsStrExt;
    assert_eq!(
        classify(OsStr::from_bytes(b"\xff\xfe.torrent")),
        FileKind::Torrent
    );
    assert_eq!(
        classify(OsStr::from_bytes(b"\xff.torrent.added")),
        FileKind::Ignored
    );
}

#[test]
fn renames_append_the_suffix_and_never_overwrite() {
    let p = Path::new("/w/ubuntu.torrent");
    assert_eq!(
        renamed(p, Outcome::Added, |_| false),
        PathBuf::from("/w/ubuntu.torrent.added")
    );
    assert_eq!(
        renamed(p, Outcome::Invalid, |_| false),
        PathBuf::from("/w/ubuntu.torrent.invalid")
    );
    let taken = [
        PathBuf::from("/w/ubuntu.torrent.added"),
        PathBuf::from("/w/ubuntu.torrent.2.added"),
    ];
    let to = renamed(p, Outcome::Added, |q| taken.iter().any(|t| t == q));
    assert_eq!(to, PathBuf::from("/w/ubuntu.torrent.3.added"));
    // every name the watcher gives is one it ignores: its renames cannot loop
    for t in taken.iter().chain([&to]) {
        assert_eq!(classify(t.file_name().unwrap()), FileKind::Ignored);
    }
    let m = renamed(Path::new("/w/x.magnet"), Outcome::Invalid, |_| false);
    assert_eq!(m, PathBuf::from("/w/x.magnet.invalid"));
    assert_eq!(classify(m.file_name().unwrap()), FileKind::Ignored);
}

#[test]
fn magnet_files_hold_one_uri() {
    let hex = "0123456789abcdef0123456789abcdef01234567";
    let uri = format!("magnet:?xt=urn:btih:{hex}&dn=Some+Name");
    for text in [uri.clone(), format!("\n  {uri}  \r\n\n")] {
        let m = parse_magnet_file(&text).unwrap();
        assert_eq!(m.info_hash.to_hex(), hex);
        assert_eq!(m.display_name(), "Some Name");
    }
    for (text, why) in [
        ("", "empty"),
        (" \n\n", "empty"),
        ("http://example.org/x.torrent", "not a magnet"),
        ("magnet:?dn=x", "xt=urn:btih:"),
        ("magnet:?xt=a\nmagnet:?xt=b", "more than one line"),
    ] {
        let e = parse_magnet_file(text).unwrap_err();
        assert!(e.contains(why), "{text:?}: {e}");
    }
}

/// A stand-in engine: answers each add by file name after a short delay, and records
/// how many adds it held unanswered at once.
async fn fake_engine(
    mut rx: mpsc::Receiver<Command>,
    max_held: Arc<AtomicUsize>,
    adds: Arc<AtomicUsize>,
) {
    let mut held: Vec<(
        AddRequest,
        tokio::sync::oneshot::Sender<Result<TorrentId, AddError>>,
    )> = Vec::new();
    loop {
        let got = tokio::time::timeout(Duration::from_millis(20), rx.recv()).await;
        match got {
            Ok(Some(Command::Add(req, Some(reply)))) => {
                adds.fetch_add(1, Ordering::SeqCst);
                held.push((req, reply));
                max_held.fetch_max(held.len(), Ordering::SeqCst);
                continue;
            }
            Ok(Some(_)) => continue,
            Ok(None) => return,
            Err(_) => {}
        }
        for (req, reply) in held.drain(..) {
            let name = match &req.source {
                AddSource::File(p) => p.file_name().unwrap().to_string_lossy().to_string(),
                AddSource::Magnet(m) | AddSource::Url(m) => m.clone(),
                AddSource::Data { name, .. } => name.clone(),
                AddSource::Create(c) => c.path.display().to_string(),
            };
            let answer = if name.starts_with("dup") {
                Err(AddError::AlreadyAdded {
                    id: TorrentId(7),
                    name: "x".into(),
                    info_hash: "00".repeat(20),
                    merged: None,
                })
            } else if name.starts_with("bad") {
                Err(AddError::Invalid(format!("{name}: not a torrent")))
            } else if name.starts_with("store") {
                Err(AddError::Storage(format!("{name}: unsafe path")))
            } else if name.starts_with("stop") {
                Err(AddError::ShuttingDown)
            } else {
                Ok(TorrentId(1))
            };
            let _ = reply.send(answer);
        }
    }
}

async fn wait_for(dir: &Path, want: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if want.iter().all(|w| names.iter().any(|n| n == w)) || Instant::now() > deadline {
            return names;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_decide_the_suffix_and_adds_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("watch");
    std::fs::create_dir(&dir).unwrap();
    let mut want = Vec::new();
    for i in 0..30 {
        std::fs::write(dir.join(format!("ok{i:02}.torrent")), b"x").unwrap();
        want.push(format!("ok{i:02}.torrent.added"));
    }
    for (name, end) in [
        ("dup.torrent", "dup.torrent.added"),
        ("bad.torrent", "bad.torrent.invalid"),
        ("store.torrent", "store.torrent.invalid"),
        ("m.magnet", "m.magnet.added"),
    ] {
        let magnet = format!("magnet:?xt=urn:btih:{}", "ab".repeat(20));
        std::fs::write(dir.join(name), magnet).unwrap();
        want.push(end.to_string());
    }
    std::fs::write(dir.join("notes.txt"), b"left alone").unwrap();
    want.push("notes.txt".into());
    want.sort();

    let (tx, rx) = mpsc::channel(256);
    let max_held = Arc::new(AtomicUsize::new(0));
    let adds = Arc::new(AtomicUsize::new(0));
    let engine = tokio::spawn(fake_engine(rx, max_held.clone(), adds.clone()));
    let opts = WatchOptions {
        dir: dir.clone(),
        seed: true,
    };
    let watcher = tokio::spawn(run(opts, client(tx)));
    let want_ref: Vec<&str> = want.iter().map(String::as_str).collect();
    let names = wait_for(&dir, &want_ref).await;
    assert_eq!(names, want);
    // every file reached the engine once, the magnet too
    assert_eq!(adds.load(Ordering::SeqCst), 34);
    let held = max_held.load(Ordering::SeqCst);
    assert!(
        (1..=MAX_IN_FLIGHT).contains(&held),
        "{held} adds in flight at once"
    );

    // an engine that shuts down ends the watcher and leaves the file for next time
    std::fs::write(dir.join("stop.torrent"), b"x").unwrap();
    tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the watcher stops when the engine shuts down")
        .unwrap();
    assert!(dir.join("stop.torrent").exists());
    engine.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_lost_to_a_full_queue_are_recovered_by_a_rescan() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("watch");
    std::fs::create_dir(&dir).unwrap();
    let (tx, rx) = mpsc::channel(256);
    let max_held = Arc::new(AtomicUsize::new(0));
    let adds = Arc::new(AtomicUsize::new(0));
    let engine = tokio::spawn(fake_engine(rx, max_held.clone(), adds.clone()));
    let opts = WatchOptions {
        dir: dir.clone(),
        seed: false,
    };
    // a queue of 4 events cannot hold the ~5 events of each of 300 files
    let watcher = tokio::spawn(run_with_queue(opts, client(tx), 4));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut want = Vec::new();
    for i in 0..300 {
        std::fs::write(dir.join(format!("f{i:03}.torrent")), b"x").unwrap();
        want.push(format!("f{i:03}.torrent.added"));
    }
    let want_ref: Vec<&str> = want.iter().map(String::as_str).collect();
    let names = wait_for(&dir, &want_ref).await;
    assert_eq!(names, want);
    assert_eq!(adds.load(Ordering::SeqCst), 300, "each file is added once");
    assert!(max_held.load(Ordering::SeqCst) <= MAX_IN_FLIGHT);
    watcher.abort();
    engine.abort();
}

#[test]
fn the_burst_summary_counts_files_already_in_the_session_apart_from_added_ones() {
    let one = Tally {
        added: 1,
        ..Tally::default()
    };
    assert_eq!(one.line(), None, "one file gets its own line only");
    let t = Tally {
        added: 2,
        duplicate: 3,
        invalid: 1,
        other: 0,
    };
    assert_eq!(
        t.line().unwrap(),
        "watch folder: 6 files handled: 2 added, 3 already in the session, 1 invalid, 0 gone or not renamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_already_in_the_session_is_renamed_added_and_handled_as_a_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let (tx, rx) = mpsc::channel(16);
    let engine = tokio::spawn(fake_engine(
        rx,
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    ));
    let c = client(tx);
    let dup = tmp.path().join("dup.torrent");
    std::fs::write(&dup, b"x").unwrap();
    assert!(matches!(
        handle(&dup, FileKind::Torrent, &c, false).await,
        Handled::Duplicate
    ));
    assert!(tmp.path().join("dup.torrent.added").exists());
    let ok = tmp.path().join("ok.torrent");
    std::fs::write(&ok, b"x").unwrap();
    assert!(matches!(
        handle(&ok, FileKind::Torrent, &c, false).await,
        Handled::Done(Outcome::Added)
    ));
    engine.abort();
}
