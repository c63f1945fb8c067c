//! Categories and tags against real libtorrent peers: a torrent added with a category
//! downloads into the category's save path; changing its category (automatic management
//! on) moves its data, and it keeps seeding to a libtorrent leecher from there; a
//! category with a download path holds the data there while downloading and moves it to
//! its save path on completion; categories, a torrent's category and its tags survive a
//! restart.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::client::{wait_row, wait_snapshot};
use common::payload::{self, FileSpec};
use common::{LeechArgs, LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{
    AddRequest, Category, Command, ShareLimits, TorrentId, TorrentRow, TorrentState,
};
use ratorrent::config::engine::{CategoryConfig, DhtConfig, EngineConfig};
use ratorrent::engine::session::{self, SessionHandle};

fn config(download_dir: &Path) -> EngineConfig {
    EngineConfig {
        download_dir: download_dir.to_path_buf(),
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    }
}

fn category(name: &str, save: &Path) -> Category {
    Category {
        name: name.to_owned(),
        save_path: save.to_path_buf(),
        download_path: None,
        limits: ShareLimits::default(),
    }
}

async fn wait(
    h: &SessionHandle,
    id: TorrentId,
    what: &str,
    ok: impl Fn(&TorrentRow) -> bool,
) -> TorrentRow {
    wait_row(&h.client, id, what, Duration::from_secs(60), ok).await
}

async fn leech(torrent: &Path, into: &Path, ip: u8) {
    let (t, d) = (torrent.to_path_buf(), into.to_path_buf());
    tokio::task::spawn_blocking(move || {
        let ip = Ipv4Addr::new(127, 0, 0, ip);
        let mut l = LtPeer::leech(&LeechArgs::new(&t, &d, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(60)).unwrap();
    })
    .await
    .unwrap();
}

fn tags(v: &[&str]) -> Vec<String> {
    v.iter().map(|t| (*t).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_puts_the_data_in_its_path_a_new_one_moves_it_and_both_survive_a_restart() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = payload::multi_file_layout(3 << 20);
    payload::write_tree(&src.join("p"), &layout, 3).unwrap();
    let torrent = dir.path().join("p.torrent");
    make_torrent(&src.join("p"), &torrent, &tracker.url(), Some(64 * 1024));
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let mut seeder = LtPeer::seed(&SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));
    let state = dir.path().join("state");
    let default_dir = dir.path().join("default");
    let tv = dir.path().join("media/tv");
    let films = dir.path().join("media/films");

    let h = session::start_with_state(config(&default_dir), &state)
        .await
        .unwrap();
    h.client
        .send(Command::CreateCategory(category("tv", &tv)))
        .await
        .unwrap();
    h.client
        .send(Command::CreateCategory(category("films", &films)))
        .await
        .unwrap();
    // (1) added with category "tv": it downloads into tv's path, byte-exact
    let request = AddRequest::new(torrent.clone())
        .category("tv")
        .tags(tags(&["hd", "new", "hd"]));
    let id = h.client.add(request).await.unwrap();
    let row = wait(&h, id, "downloaded and seeding", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_eq!(row.save_path, tv);
    assert_eq!(row.category, "tv");
    assert_eq!(row.tags, tags(&["hd", "new"]), "no duplicate, order kept");
    assert!(row.auto_managed, "on by default with a category");
    common::compare_trees(&src.join("p"), &tv.join("p")).unwrap();
    assert!(!default_dir.join("p").exists());

    // tags: one more, one off
    h.client
        .send(Command::AddTags {
            ids: vec![id],
            tags: tags(&["keep"]),
        })
        .await
        .unwrap();
    h.client
        .send(Command::RemoveTags {
            ids: vec![id],
            tags: tags(&["new"]),
        })
        .await
        .unwrap();
    wait(&h, id, "tags changed", |r| r.tags == tags(&["hd", "keep"])).await;

    // (2) to "films": the data moves there and it seeds on from there
    h.client
        .send(Command::SetCategory {
            ids: vec![id],
            category: "films".to_owned(),
        })
        .await
        .unwrap();
    let row = wait(&h, id, "moved to films and seeding", |r| {
        r.state == TorrentState::Seeding && r.save_path == films && r.category == "films"
    })
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    assert!(!tv.join("p").exists(), "nothing left in tv's path");
    common::compare_trees(&src.join("p"), &films.join("p")).unwrap();
    // the libtorrent seeder is gone: a leecher completes from this torrent alone
    seeder.stop();
    leech(&torrent, &dir.path().join("leech"), 3).await;
    common::compare_trees(&src.join("p"), &dir.path().join("leech/p")).unwrap();
    // an unknown category is refused; the torrent stays where it is
    h.client
        .send(Command::SetCategory {
            ids: vec![id],
            category: "nope".to_owned(),
        })
        .await
        .unwrap();
    h.shutdown().await.unwrap();

    // the restart: the categories, its category and its tags come back
    let h = session::start_with_state(config(&default_dir), &state)
        .await
        .unwrap();
    let snap = wait_snapshot(&h.client, "restored", Duration::from_secs(30), |s| {
        s.rows.len() == 1 && s.global.categories.len() == 2
    })
    .await;
    let row = &snap.rows[0];
    assert_eq!(row.category, "films");
    assert_eq!(row.tags, tags(&["hd", "keep"]));
    assert!(row.auto_managed);
    assert_eq!(row.save_path, films);
    let cats: Vec<(String, PathBuf)> = snap
        .global
        .categories
        .iter()
        .map(|c| (c.category.name.clone(), c.save_path.clone()))
        .collect();
    assert_eq!(
        cats,
        [("films".to_owned(), films.clone()), ("tv".to_owned(), tv)]
    );
    assert_eq!(&*snap.global.tags, tags(&["hd", "keep", "new"]));
    let id = row.id;
    wait(&h, id, "seeding again", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    // removing the category leaves it without one; the data stays
    h.client
        .send(Command::RemoveCategories(vec!["films".to_owned()]))
        .await
        .unwrap();
    let row = wait(&h, id, "no category", |r| r.category.is_empty()).await;
    assert_eq!(row.save_path, films, "the data stays");
    assert!(!row.auto_managed);
    common::compare_trees(&src.join("p"), &films.join("p")).unwrap();
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_download_path_holds_the_data_until_complete_then_its_save_path() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("big.bin", 4 << 20)], 7).unwrap();
    let torrent = dir.path().join("big.torrent");
    make_torrent(
        &src.join("big.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let ip = Ipv4Addr::new(127, 0, 0, 4);
    // slow enough to see the download under way: about 8 s
    let _seeder = LtPeer::seed(&SeedArgs {
        upload_limit: Some(512 << 10),
        ..SeedArgs::new(&torrent, &src, ip, free_port_on(ip))
    });
    let state = dir.path().join("state");
    let save = dir.path().join("done");
    let incoming = dir.path().join("incoming");
    // predefined by the config; its subcategory "linux/iso" has no path of its own
    let mut cfg = config(&dir.path().join("default"));
    cfg.categories.insert(
        "linux".to_owned(),
        CategoryConfig {
            save_path: save.clone(),
            download_path: Some(incoming.clone()),
            ..CategoryConfig::default()
        },
    );
    let h = session::start_with_state(cfg, &state).await.unwrap();
    let request = AddRequest::new(torrent.clone()).category("linux/iso");
    let id = h.client.add(request).await.unwrap();
    let row = wait(&h, id, "downloading", |r| {
        r.state == TorrentState::Downloading && r.done > 0
    })
    .await;
    assert_eq!(row.save_path, incoming.join("iso"), "the download path");
    assert!(incoming.join("iso/big.bin").exists());
    assert!(!save.join("iso/big.bin").exists());
    let row = wait(&h, id, "complete and moved to the save path", |r| {
        r.state == TorrentState::Seeding && r.save_path == save.join("iso")
    })
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    common::compare_trees(&src, &save.join("iso")).unwrap();
    assert!(!incoming.join("iso/big.bin").exists(), "moved, not copied");
    let snap = h.client.snapshot();
    let iso = snap
        .global
        .categories
        .iter()
        .find(|c| c.category.name == "linux/iso")
        .expect("linux/iso created by the add");
    assert_eq!(iso.save_path, save.join("iso"));
    assert_eq!(iso.download_path, Some(incoming.join("iso")));
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_goal_stops_its_torrents_and_an_edited_path_moves_them() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let first = dir.path().join("first");
    payload::write_tree(&first, &[FileSpec::new("f.bin", 1 << 20)], 9).unwrap();
    let pristine = dir.path().join("pristine");
    payload::write_tree(&pristine, &[FileSpec::new("f.bin", 1 << 20)], 9).unwrap();
    let torrent = dir.path().join("f.torrent");
    make_torrent(
        &first.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );
    let h = session::start(config(&dir.path().join("default")))
        .await
        .unwrap();
    // ratio 0: reached as soon as it seeds (the session's [seeding] has no goal)
    h.client
        .send(Command::CreateCategory(Category {
            limits: ShareLimits {
                ratio: 0.0,
                ..ShareLimits::default()
            },
            ..category("done", &first)
        }))
        .await
        .unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).category("done"))
        .await
        .unwrap();
    let row = wait(
        &h,
        id,
        "checked, then stopped by its category's goal",
        |r| r.state == TorrentState::Paused && r.paused_by.is_some(),
    )
    .await;
    assert_eq!(row.pieces_have, row.pieces_total, "its data was there");
    // the category gets another path and no goal: the data moves, it may seed again
    let second = dir.path().join("second");
    h.client
        .send(Command::EditCategory(Category {
            limits: ShareLimits {
                ratio: -1.0,
                ..ShareLimits::default()
            },
            ..category("done", &second)
        }))
        .await
        .unwrap();
    wait(&h, id, "moved with its category", |r| {
        r.save_path == second && r.state == TorrentState::Paused
    })
    .await;
    common::compare_trees(&pristine, &second).unwrap();
    assert!(!first.join("f.bin").exists());
    h.client.resume(id).await.unwrap();
    wait(&h, id, "seeding: the goal no longer holds", |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    // automatic management off: a new category's path is not followed
    h.client
        .send(Command::SetAutoManaged {
            ids: vec![id],
            on: false,
        })
        .await
        .unwrap();
    h.client
        .send(Command::EditCategory(category("done", &first)))
        .await
        .unwrap();
    h.client
        .send(Command::AddTags {
            ids: vec![id],
            tags: tags(&["bad,tag"]),
        })
        .await
        .unwrap();
    let events = h.client.recent_events().await.unwrap();
    assert!(
        events.iter().any(|e| e.message.contains("no \",\"")),
        "an invalid tag is refused in the log"
    );
    let row = wait(&h, id, "automatic management off", |r| !r.auto_managed).await;
    assert!(row.tags.is_empty());
    assert_eq!(row.save_path, second, "stays where it is");
    assert_eq!(row.state, TorrentState::Seeding);
    h.shutdown().await.unwrap();
}
