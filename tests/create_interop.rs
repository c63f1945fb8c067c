//! `ratorrent create` against the clients people use (loopback): a torrent it makes of a
//! multi-file payload with empty files and odd sizes has the info hash(es)
//! `libtorrent.torrent_info` computes, and is accepted and downloaded byte-exact from a
//! ratorrent seeder by libtorrent (python3-libtorrent), qBittorrent (qbittorrent-nox) and
//! Transmission (transmission-cli): v1 by all three, hybrid and v2 by libtorrent and
//! qBittorrent. Transmission 3.00 (Debian 12's) reads no torrent with a `file tree`: it
//! refuses a hybrid libtorrent makes exactly as it refuses ours, which the test checks.
//!
//! Also the engine's create-and-seed ([`AddSource::Create`], the TUI's create dialog): a
//! hybrid made of a folder is written beside it and seeds at once, without a check, and a
//! libtorrent leecher downloads it byte-exact; a missing or empty folder and an existing
//! .torrent file are refused with the reason, and the session goes on.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::client::wait_row;
use common::payload::{self, FileSpec};
use common::qbt::{QbtNox, Web};
use common::rat::{self, Rat};
use common::{LeechArgs, LtPeer, TestTracker, compare_trees, free_port, free_port_on, temp_dir};
use ratorrent::api::{AddError, AddRequest, AddSource, ClientError, CreateSource, TorrentState};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::engine::session;
use ratorrent::metainfo::{InfoHash, MetaVersion, Metainfo};

const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

fn layout() -> Vec<FileSpec> {
    payload::multi_file_layout(3 << 20)
}

/// `ratorrent create` of `data` into `out` in `format`, 32 KiB pieces, announcing to
/// `tracker`; the torrent as read back.
fn create(data: &Path, out: &Path, format: &str, tracker: &str) -> Metainfo {
    let dir = temp_dir();
    let o = rat::command(dir.path())
        .args([
            "create",
            data.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .args(["--format", format, "--piece-size", "32K", "-t", tracker])
        .args(["--comment", "made by ratorrent create", "--no-date"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "create {format}: {}\n{text}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.starts_with(&format!("Created {}", out.display())),
        "{text}"
    );
    Metainfo::from_file(out).unwrap()
}

/// The v1 and v2 info hashes `libtorrent.torrent_info` computes for `torrent` (`None` for a
/// side it does not have).
fn libtorrent_hashes(torrent: &Path) -> (Option<String>, Option<String>) {
    common::require_libtorrent();
    let script = "import libtorrent as lt, sys\nti = lt.torrent_info(sys.argv[1])\nih = ti.info_hashes()\nprint(ih.v1 if ih.has_v1() else '-', ih.v2 if ih.has_v2() else '-')";
    let o = Command::new(common::lt::PYTHON)
        .args(["-c", script, torrent.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let mut parts = text.split(' ').map(|s| (s != "-").then(|| s.to_owned()));
    (parts.next().flatten(), parts.next().flatten())
}

/// `ratorrent download --seed` on the data; waits for its `left=0` announce.
fn seed(tracker: &TestTracker, torrent: &Path, data_dir: &Path, ih: InfoHash) -> (Rat, u16) {
    let port = free_port();
    let rat = Rat::download(torrent, data_dir, port, &["--seed"]);
    tracker
        .wait_for_announce(Duration::from_secs(60), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    (rat, port)
}

/// Poll until every file of `expected` is in `actual`, byte for byte (other files, such as
/// a client's padding files, are not looked at); `empty_too`: empty files as well
/// (Transmission 3 does not create them).
fn wait_files(
    expected: &Path,
    actual: &Path,
    within: Duration,
    empty_too: bool,
) -> Result<(), String> {
    let end = Instant::now() + within;
    let mut last = String::new();
    loop {
        let all =
            layout().iter().filter(|f| empty_too || f.len > 0).all(
                |f| match common::compare_files(&expected.join(&f.path), &actual.join(&f.path)) {
                    Ok(()) => true,
                    Err(e) => {
                        last = e.to_string();
                        false
                    }
                },
            );
        if all {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(last);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn libtorrent_leech(torrent: &Path, dst: &Path, seeder: u16, data: &Path, rat: &Rat) {
    let mut args = LeechArgs::new(torrent, dst, LEECHER_IP, free_port_on(LEECHER_IP));
    args.connect = vec![SocketAddr::from((Ipv4Addr::LOCALHOST, seeder))];
    let mut leecher = LtPeer::leech(&args);
    leecher
        .wait_done(Duration::from_secs(90))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    compare_trees(data, &dst.join("payload")).unwrap();
}

async fn qbittorrent_leech(
    qbt: &QbtNox,
    torrent: &Path,
    meta: &Metainfo,
    seeder: u16,
    name: &str,
    rat: &Rat,
) {
    let mut web = Web::new(&qbt.base);
    let r = web
        .post(
            "auth/login",
            &[("username", "admin"), ("password", "adminadmin")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    web.cookie = r.sid();
    let save = qbt.dl.join(name);
    let bytes = std::fs::read(torrent).unwrap();
    let r = web
        .post_multipart(
            "torrents/add",
            &[("torrents", "t.torrent", &bytes)],
            &[("savepath", save.to_str().unwrap())],
        )
        .await;
    assert_eq!((r.status, r.body.as_str()), (200, "Ok."), "add {name}");
    // qBittorrent 4.5 names a torrent with a v2 side (v2-only or hybrid) by its v2 hash
    // cut to 20 bytes
    let hash = meta
        .info_hash_v2
        .map_or(meta.info_hash, |v2| InfoHash::truncated(&v2))
        .to_hex();
    let peer = format!("127.0.0.1:{seeder}");
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        // the tracker tells it about us too; naming the peer saves an announce interval
        let _ = web
            .post("torrents/addPeers", &[("hashes", &hash), ("peers", &peer)])
            .await;
        let info = web.get("torrents/info", &[("hashes", &hash)]).await.json();
        let t = &info[0];
        if t["progress"].as_f64() == Some(1.0) {
            break;
        }
        if Instant::now() > end {
            let all = web.get("torrents/info", &[]).await.body;
            let peers = web
                .get("sync/torrentPeers", &[("hash", &hash), ("rid", "0")])
                .await
                .body;
            panic!(
                "qBittorrent {} did not complete {name} ({hash}): {t}\nall: {all}\nits peers: {peers}\nits log: {}\nseeder: {}",
                qbt.version,
                qbt.log(),
                rat.output()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// transmission-cli downloading `torrent` into `dst`: no DHT, LPD, PEX or uTP, plaintext
/// preferred. Killed on drop.
struct Transmission(Child, #[allow(dead_code)] tempfile::TempDir);

impl Transmission {
    fn start(torrent: &Path, dst: &Path) -> Transmission {
        let conf = temp_dir();
        std::fs::write(
            conf.path().join("settings.json"),
            r#"{"dht-enabled": false, "lpd-enabled": false, "pex-enabled": false,
                "utp-enabled": false, "port-forwarding-enabled": false,
                "encryption": 0, "rpc-enabled": false}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dst).unwrap();
        let child = Command::new("transmission-cli")
            .arg("-g")
            .arg(conf.path())
            .arg("-w")
            .arg(dst)
            .args(["-p", &free_port().to_string(), "-et", "-M"])
            .arg(torrent)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("transmission-cli is installed (apt-get install transmission-cli)");
        Transmission(child, conf)
    }
}

impl Drop for Transmission {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Case {
    format: &'static str,
    version: MetaVersion,
    transmission: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torrents_ratorrent_creates_download_in_libtorrent_qbittorrent_and_transmission() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let data = src.join("payload");
    payload::write_tree(&data, &layout(), 0xc4ea7e).unwrap();
    let qbt = QbtNox::start("admin", "adminadmin")
        .expect("qbittorrent-nox is installed (apt-get install qbittorrent-nox)");
    for case in [
        Case {
            format: "v1",
            version: MetaVersion::V1,
            transmission: true,
        },
        Case {
            format: "hybrid",
            version: MetaVersion::Hybrid,
            transmission: false,
        },
        Case {
            format: "v2",
            version: MetaVersion::V2,
            transmission: false,
        },
    ] {
        let f = case.format;
        let torrent = dir.path().join(format!("{f}.torrent"));
        let meta = create(&data, &torrent, f, &tracker.url());
        assert_eq!(meta.version(), case.version);
        assert_eq!(meta.comment.as_deref(), Some("made by ratorrent create"));
        // the same hashes as libtorrent computes
        let (lt_v1, lt_v2) = libtorrent_hashes(&torrent);
        let ours_v1 = (case.version != MetaVersion::V2).then(|| meta.info_hash.to_hex());
        let ours_v2 = meta
            .info_hash_v2
            .map(|h| data_encoding::HEXLOWER.encode(&h));
        assert_eq!((lt_v1, lt_v2), (ours_v1, ours_v2), "{f}: info hashes");

        let (rat, port) = seed(&tracker, &torrent, &src, meta.info_hash);
        libtorrent_leech(
            &torrent,
            &dir.path().join(format!("lt-{f}")),
            port,
            &data,
            &rat,
        );
        eprintln!("{f}: libtorrent downloaded it");
        qbittorrent_leech(&qbt, &torrent, &meta, port, f, &rat).await;
        wait_files(
            &data,
            &qbt.dl.join(f).join("payload"),
            Duration::from_secs(10),
            true,
        )
        .unwrap_or_else(|e| panic!("qBittorrent, {f}: {e}"));
        eprintln!("{f}: qBittorrent {} downloaded it", qbt.version);
        if case.version == MetaVersion::Hybrid {
            // Transmission 3 parses no BEP 52 `file tree`: libtorrent's own hybrid of the
            // same files is refused the same way (Transmission 4 reads hybrids)
            let theirs = dir.path().join("lt-hybrid.torrent");
            common::lt::make_padded_torrent(&data, &theirs, &tracker.url(), Some(32 * 1024));
            for t in [&torrent, &theirs] {
                let o = Command::new("transmission-show").arg(t).output().unwrap();
                let out = format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                assert!(
                    !o.status.success(),
                    "transmission-show read {}: {out}",
                    t.display()
                );
            }
        }
        if case.transmission {
            let dst: PathBuf = dir.path().join(format!("tr-{f}"));
            let _tr = Transmission::start(&torrent, &dst);
            wait_files(&data, &dst.join("payload"), Duration::from_secs(120), false)
                .unwrap_or_else(|e| panic!("Transmission, {f}: {e}\n{}", rat.output()));
            eprintln!("{f}: Transmission downloaded it");
        }
        drop(rat);
    }
}

/// A create-and-seed request for `path` in `version` announcing to `tracker`.
fn create_request(path: &Path, version: MetaVersion, tracker: &str) -> AddRequest {
    AddRequest::new(AddSource::Create(CreateSource {
        path: path.to_path_buf(),
        output: None,
        version,
        trackers: vec![vec![tracker.to_owned()]],
        private: false,
    }))
    .seed(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_creates_a_hybrid_of_a_folder_seeds_it_at_once_and_libtorrent_downloads_it() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let data = src.join("payload");
    payload::write_tree(&data, &layout(), 0x5eed).unwrap();
    let config = EngineConfig {
        // elsewhere: the torrent must seed from the data's own folder
        download_dir: dir.path().join("downloads"),
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    };
    let h = session::start_with_state(config, &dir.path().join("state"))
        .await
        .unwrap();

    let id = h
        .client
        .add(create_request(&data, MetaVersion::Hybrid, &tracker.url()))
        .await
        .unwrap();
    let torrent = src.join("payload.torrent");
    let meta = Metainfo::from_file(&torrent).expect("written beside the folder");
    assert_eq!(meta.version(), MetaVersion::Hybrid);
    assert_eq!(meta.name, "payload");
    let row = wait_row(&h.client, id, "seeding", Duration::from_secs(20), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    assert_eq!(row.unchecked, row.pieces_total, "added without a check");
    assert_eq!(row.info_hash, meta.info_hash.to_hex());

    // a libtorrent leecher finds it through the tracker and gets every byte
    let dst = dir.path().join("lt");
    let (t, d) = (torrent.clone(), dst.clone());
    tokio::task::spawn_blocking(move || {
        let mut l = LtPeer::leech(&LeechArgs::new(
            &t,
            &d,
            LEECHER_IP,
            free_port_on(LEECHER_IP),
        ));
        l.wait_done(Duration::from_secs(90))
            .unwrap_or_else(|e| panic!("{e}\n{}", l.stderr()));
    })
    .await
    .unwrap();
    compare_trees(&data, &dst.join("payload")).unwrap();
    let row = wait_row(&h.client, id, "uploaded", Duration::from_secs(10), |r| {
        r.uploaded >= payload::total_len(&layout())
    })
    .await;
    assert_eq!(row.unchecked_failed, 0);

    // mistakes are refused with the reason, and nothing is added
    let again = h
        .client
        .add(create_request(&data, MetaVersion::V2, &tracker.url()))
        .await
        .unwrap_err();
    assert!(again.to_string().contains("exists"), "{again}");
    let empty = src.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = src.join("missing");
    for (path, why) in [(&empty, "nothing to share"), (&missing, "cannot read")] {
        let e = h
            .client
            .add(create_request(path, MetaVersion::Hybrid, &tracker.url()))
            .await
            .unwrap_err();
        assert!(
            matches!(e, ClientError::Refused(AddError::Invalid(_))),
            "{e:?}"
        );
        assert!(e.to_string().contains(why), "{}: {e}", path.display());
        assert!(
            !src.join(format!(
                "{}.torrent",
                path.file_name().unwrap().to_str().unwrap()
            ))
            .exists()
        );
    }
    assert_eq!(h.client.snapshot().rows.len(), 1);
    h.shutdown().await.unwrap();
}
