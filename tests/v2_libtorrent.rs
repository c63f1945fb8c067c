//! BEP 52 against real libtorrent peers (python3-libtorrent 2.0, loopback): libtorrent
//! makes a v2-only and a hybrid torrent of a multi-file payload with empty files and odd
//! sizes and seeds it, ratorrent downloads each byte-exact; a libtorrent leecher downloads
//! the v2-only torrent from a ratorrent seeder; a v2 magnet link (`urn:btmh:`) works with a
//! libtorrent peer serving the metadata and the piece layers (BEP 52 hash requests), and the
//! layers are kept in the session state, so a restart needs no peer to check the data; and
//! libtorrent fetches metadata and layers from a ratorrent seeder (our answers to its hash
//! requests).

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::lt::{make_padded_torrent, make_v2_torrent};
use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, SeedArgs, TestTracker, compare_trees, free_port, free_port_on, temp_dir,
};
use ratorrent::api::{AddRequest, AddSource, TorrentState};
use ratorrent::engine::session;
use ratorrent::metainfo::{InfoHash, MetaVersion, Metainfo};

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// 32 KiB pieces: two leaves per piece, so piece subtrees, piece layers and files of one
/// piece or less all occur.
const PIECE: u32 = 32 * 1024;

/// The payload: about 2 MiB in nine files, two of them empty, odd sizes, nested folders.
fn layout() -> Vec<FileSpec> {
    payload::multi_file_layout(2 << 20)
}

struct Payload {
    dir: tempfile::TempDir,
    tracker: TestTracker,
}

impl Payload {
    fn new() -> Payload {
        let p = Payload {
            dir: temp_dir(),
            tracker: TestTracker::start(),
        };
        payload::write_tree(&p.data(), &layout(), 0x52).unwrap();
        p
    }

    fn src(&self) -> PathBuf {
        self.dir.path().join("src")
    }

    fn data(&self) -> PathBuf {
        self.src().join("payload")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn seed(torrent: &Path, data_dir: &Path) -> LtPeer {
    LtPeer::seed(&SeedArgs::new(
        torrent,
        data_dir,
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ))
}

fn download_from_libtorrent(p: &Payload, torrent: &Path, version: MetaVersion, dst: &Path) {
    let meta = Metainfo::from_file(torrent).unwrap();
    assert_eq!(
        meta.version(),
        version,
        "libtorrent made a {version:?} torrent"
    );
    assert!(
        meta.v2
            .as_ref()
            .is_some_and(|v| v.complete() && v.files.iter().any(|f| f.layer.is_some())),
        "with piece layers"
    );
    let _seeder = seed(torrent, &p.src());
    let mut rat = Rat::download(torrent, dst, free_port(), &[]);
    let st = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(st.success(), "{version:?}: {st}\n{}", rat.output());
    compare_trees(&p.data(), &dst.join("payload")).unwrap();
}

#[test]
fn ratorrent_downloads_v2_only_and_hybrid_torrents_libtorrent_made_and_seeds() {
    let p = Payload::new();
    let v2 = p.path("v2.torrent");
    let ih = make_v2_torrent(&p.data(), &v2, &p.tracker.url(), Some(PIECE));
    let meta = Metainfo::from_file(&v2).unwrap();
    assert_eq!(
        ih,
        InfoHash::truncated(&meta.info_hash_v2.unwrap()),
        "known on the wire by the v2 hash cut to 20 bytes"
    );
    download_from_libtorrent(&p, &v2, MetaVersion::V2, &p.path("dst-v2"));
    let hybrid = p.path("hybrid.torrent");
    make_padded_torrent(&p.data(), &hybrid, &p.tracker.url(), Some(PIECE));
    download_from_libtorrent(&p, &hybrid, MetaVersion::Hybrid, &p.path("dst-hybrid"));
    // the hybrid was announced under both of its hashes
    let meta = Metainfo::from_file(&hybrid).unwrap();
    let alias = InfoHash::truncated(&meta.info_hash_v2.unwrap());
    let ours = |h: InfoHash| {
        p.tracker
            .announces_for(&h)
            .iter()
            .any(|a| a.peer_id.starts_with(b"-rT"))
    };
    assert!(ours(meta.info_hash), "announced under the v1 hash");
    assert!(ours(alias), "announced under the v2 hash");
}

#[test]
fn libtorrent_downloads_a_v2_only_torrent_from_a_ratorrent_seeder() {
    let p = Payload::new();
    let torrent = p.path("v2.torrent");
    let ih = make_v2_torrent(&p.data(), &torrent, &p.tracker.url(), Some(PIECE));
    let port = free_port();
    let mut rat = Rat::download(&torrent, &p.src(), port, &["--seed"]);
    p.tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let dst = p.path("dst");
    let mut leecher = LtPeer::leech(&LeechArgs::new(
        &torrent,
        &dst,
        LEECHER_IP,
        free_port_on(LEECHER_IP),
    ));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    compare_trees(&p.data(), &dst.join("payload")).unwrap();
    rat.terminate();
}

fn config(dir: &Path) -> ratorrent::config::engine::EngineConfig {
    ratorrent::config::engine::EngineConfig {
        download_dir: dir.to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_magnet_link_fetches_metadata_and_piece_layers_from_libtorrent() {
    let p = Payload::new();
    let torrent = p.path("v2.torrent");
    let ih = make_v2_torrent(&p.data(), &torrent, &p.tracker.url(), Some(PIECE));
    let meta = Metainfo::from_file(&torrent).unwrap();
    let v2 = data_encoding::HEXLOWER.encode(&meta.info_hash_v2.unwrap());
    let mut seeder = seed(&torrent, &p.src());
    let state = temp_dir();
    let dst = p.path("dst");
    let h = session::start_with_state(config(&dst), state.path())
        .await
        .unwrap();
    // no btih: a v2-only link; the only source is the peer it names
    let link = format!("magnet:?xt=urn:btmh:1220{v2}&x.pe={}", seeder.addr());
    h.client
        .add(AddRequest::new(AddSource::Magnet(link)))
        .await
        .unwrap();
    common::client::wait_rows(&h.client, "downloaded", Duration::from_secs(90), |rows| {
        rows.iter()
            .any(|r| r.name == "payload" && r.state == TorrentState::Seeding && r.pieces_total > 0)
    })
    .await;
    h.shutdown().await.unwrap();
    compare_trees(&p.data(), &dst.join("payload")).unwrap();
    // the state keeps the metadata with its piece layers (fetched by hash requests)
    let kept = state
        .path()
        .join("torrents")
        .join(format!("{}.torrent", ih.to_hex()));
    let again = Metainfo::from_file(&kept).unwrap();
    assert_eq!(again.info_hash_v2, meta.info_hash_v2);
    assert_eq!(
        again.v2, meta.v2,
        "every piece layer kept, as libtorrent made them"
    );
    // no peer now: a re-check needs the layers, and finds every piece
    seeder.stop();
    let h = session::start_with_state(config(&dst), state.path())
        .await
        .unwrap();
    let snap = common::client::wait_rows(&h.client, "restored", Duration::from_secs(30), |rows| {
        !rows.is_empty()
    })
    .await;
    let id = snap.rows[0].id;
    h.client.recheck(id).await.unwrap();
    common::client::wait_rows(&h.client, "re-checked", Duration::from_secs(60), |rows| {
        rows.iter().any(|r| {
            r.pieces_total > 0
                && r.pieces_have == r.pieces_total
                && r.state == TorrentState::Seeding
        })
    })
    .await;
    h.shutdown().await.unwrap();
}

/// libtorrent, given only a v2 magnet link and our address, fetches the metadata (BEP 9)
/// and the piece layers (BEP 52 hash requests, answered from our piece layers with their
/// proofs) from a ratorrent seeder, then the data.
#[test]
fn libtorrent_fetches_metadata_and_piece_layers_from_a_ratorrent_seeder() {
    let p = Payload::new();
    let torrent = p.path("v2.torrent");
    make_v2_torrent(&p.data(), &torrent, &p.tracker.url(), Some(PIECE));
    let meta = Metainfo::from_file(&torrent).unwrap();
    let port = free_port();
    let mut rat = Rat::download(&torrent, &p.src(), port, &["--seed"]);
    rat.wait_stdout("seeding until interrupted", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let v2 = data_encoding::HEXLOWER.encode(&meta.info_hash_v2.unwrap());
    let dst = p.path("dst");
    let mut args = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    args.magnet = Some(format!("magnet:?xt=urn:btmh:1220{v2}&dn=payload"));
    args.connect = vec![std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, port))];
    let mut leecher = LtPeer::leech(&args);
    leecher
        .wait_line("METADATA", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    compare_trees(&p.data(), &dst.join("payload")).unwrap();
    rat.terminate();
}
