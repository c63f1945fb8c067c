//! The Web API replayed as the tools drive it, request by request, against ratorrent (a
//! `ratorrent daemon` with `[webui]` on, a TUI attached to it showing what the API does)
//! downloading from real libtorrent seeders on loopback, and
//! the same sequences against a real `qbittorrent-nox` as a check of the test itself
//! (skipped with a message only when it is not installed).
//!
//! - Sonarr/Radarr (`QBittorrentProxyV2.cs`, `QBittorrent.cs`): the unauthenticated
//!   `webapiVersion` probe (403), login, version, preferences, categories (created when
//!   missing), an add by magnet link with a category, `properties` at once (Sonarr's
//!   `WaitForTorrent`), `topPrio` (200, or 409 with queueing off), polling `info` as
//!   `GetItems` does until the download is complete, `content_path` against `save_path`,
//!   an upload of a .torrent file with a save path, `setShareLimits`, the post-import
//!   category, and removal with and without the files.
//! - cross-seed (`src/clients/QBittorrent.ts`): logs in, sends the `Set-Cookie` line back as
//!   its cookie, POSTs every call (`app/version` with an empty body, `createTags` as a
//!   hand-written body, `torrents/info` by hash), adds a .torrent of data the client has
//!   with `skip_checking`, `autoTMM=false`, its tag and `contentLayout=Original`, and one
//!   with `paused` (its `stopped` for qBittorrent 5) to recheck, pause, recheck, and resume
//!   once checked.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::qbt::{QbtNox, RatWeb, Resp, Web};
use common::{
    LtPeer, SeedArgs, TestTracker, compare_files, compare_trees, free_port_on, make_torrent,
};
use serde_json::Value;

const SHOW: &str = "Show.S01E01";
const MOVIE: &str = "Movie.2024.mkv";
const USER: &str = "sonarr";
const PASSWORD: &str = "correct horse battery staple";

/// The torrents and their seeders.
struct Swarm {
    dir: tempfile::TempDir,
    _tracker: TestTracker,
    tracker_url: String,
    show_data: PathBuf,
    show_hash: String,
    movie_data: PathBuf,
    movie_torrent: PathBuf,
    movie_hash: String,
    _seeders: Vec<LtPeer>,
}

fn swarm() -> Swarm {
    common::require_libtorrent();
    let tracker = TestTracker::start();
    let dir = common::temp_dir();
    let src = dir.path().join("src");
    let show_data = src.join(SHOW);
    payload::write_tree(
        &show_data,
        &[
            FileSpec::new(format!("{SHOW}.mkv"), 3 << 20),
            FileSpec::new("Subs/en.srt", 40 << 10),
        ],
        0x50,
    )
    .unwrap();
    let movie_data = src.join(MOVIE);
    payload::write_file(&movie_data, (2 << 20) + 12_345, 0x51).unwrap();
    let show_torrent = dir.path().join("show.torrent");
    let movie_torrent = dir.path().join("movie.torrent");
    let show_hash = make_torrent(&show_data, &show_torrent, &tracker.url(), Some(64 << 10));
    let movie_hash = make_torrent(&movie_data, &movie_torrent, &tracker.url(), Some(64 << 10));
    let seed = |torrent: &Path, ip: Ipv4Addr| {
        LtPeer::seed(&SeedArgs::new(torrent, &src, ip, free_port_on(ip)))
    };
    let seeders = vec![
        seed(&show_torrent, Ipv4Addr::new(127, 0, 0, 2)),
        seed(&movie_torrent, Ipv4Addr::new(127, 0, 0, 3)),
    ];
    Swarm {
        tracker_url: tracker.url(),
        _tracker: tracker,
        show_data,
        show_hash: show_hash.to_hex(),
        movie_data,
        movie_torrent,
        movie_hash: movie_hash.to_hex(),
        _seeders: seeders,
        dir,
    }
}

/// Which server a sequence runs against, and where they differ by design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Ratorrent,
    QBittorrent,
}

/// Sonarr's `QBittorrentState` "completed" states (`GetItems`).
const COMPLETED: [&str; 5] = ["pausedUP", "uploading", "stalledUP", "queuedUP", "forcedUP"];

/// Every state string qBittorrent 4.x has.
const STATES: [&str; 19] = [
    "checkingResumeData",
    "error",
    "missingFiles",
    "uploading",
    "pausedUP",
    "queuedUP",
    "stalledUP",
    "checkingUP",
    "forcedUP",
    "allocating",
    "downloading",
    "metaDL",
    "forcedMetaDL",
    "pausedDL",
    "queuedDL",
    "stalledDL",
    "checkingDL",
    "forcedDL",
    "moving",
];

fn ok(r: &Resp, what: &str) {
    assert_eq!(r.status, 200, "{what}: {} {:?}", r.status, r.body);
}

/// Sonarr's `GetItems` once: webapiVersion, preferences, info by category; returns the
/// torrent `hash` when listed.
async fn sonarr_poll(web: &Web, category: &str, hash: &str) -> Option<Value> {
    let v = web.get("app/webapiVersion", &[]).await;
    ok(&v, "webapiVersion");
    let prefs = web.get("app/preferences", &[]).await;
    ok(&prefs, "preferences");
    let list = web.get("torrents/info", &[("category", category)]).await;
    ok(&list, "info");
    let list = list.json();
    let items = list.as_array().expect("info is a list");
    for t in items {
        // what QBittorrentTorrent deserialises
        let state = t["state"].as_str().expect("state");
        assert!(STATES.contains(&state), "unknown state {state}");
        assert!(t["size"].is_i64() || t["size"].is_u64(), "{t}");
        assert!(t["progress"].is_number() && t["ratio"].is_number() && t["eta"].is_number());
        assert!(t["save_path"].is_string() && t["content_path"].is_string());
        assert!(t["ratio_limit"].is_number() && t["seeding_time_limit"].is_number());
        assert!(t["last_activity"].is_number());
        assert_eq!(t["category"], category);
    }
    items.iter().find(|t| t["hash"] == hash).cloned()
}

/// Poll as Sonarr does until torrent `hash` is in a completed state; returns its entry.
async fn sonarr_wait_complete(web: &Web, category: &str, hash: &str, timeout: Duration) -> Value {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < timeout {
        if let Some(t) = sonarr_poll(web, category, hash).await {
            if COMPLETED.contains(&t["state"].as_str().unwrap_or_default())
                && t["progress"].as_f64() == Some(1.0)
            {
                return t;
            }
            last = Some(t);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{hash} not complete after {timeout:?}; last: {last:?}");
}

/// Sonarr's `WaitForTorrent`: `properties` until it answers, at most 10 times 100 ms
/// apart; returns how many requests it took.
async fn wait_for_torrent(web: &Web, hash: &str) -> u32 {
    for n in 1..=10 {
        let r = web.get("torrents/properties", &[("hash", hash)]).await;
        if r.status == 200 {
            return n;
        }
        assert_eq!(r.status, 404, "{r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{hash}: properties never answered");
}

/// The Sonarr/Radarr sequence; returns the movie's save path (cross-seed's searchee).
async fn sonarr(server: Server, base: &str, dl: &Path, s: &Swarm) -> PathBuf {
    let mut web = Web::new(base);
    let basic = data_encoding::BASE64.encode(format!("{USER}:{PASSWORD}").as_bytes());
    web.headers = vec![
        ("Authorization".into(), format!("Basic {basic}")),
        (
            "User-Agent".into(),
            "Sonarr/4.0.14.2939 (ubuntu 22.04)".into(),
        ),
    ];
    // IsApiSupported: the version probe without a session is refused with 403
    let probe = web.get("app/webapiVersion", &[]).await;
    assert_eq!(probe.status, 403, "{probe:?}");
    // AuthenticateClient
    let bad = web
        .post("auth/login", &[("username", USER), ("password", "wrong")])
        .await;
    assert_eq!((bad.status, bad.body.as_str()), (200, "Fails."));
    assert!(bad.sid().is_none(), "no cookie for a bad password");
    let login = web
        .post("auth/login", &[("username", USER), ("password", PASSWORD)])
        .await;
    assert_eq!((login.status, login.body.as_str()), (200, "Ok."));
    web.cookie = Some(login.sid().expect("SID cookie"));
    // GetApiVersion, GetVersion
    let api = web.get("app/webapiVersion", &[]).await;
    ok(&api, "webapiVersion");
    let parts: Vec<u32> = api.body.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(parts.len() >= 2 && parts[0] == 2, "{}", api.body);
    let version = web.get("app/version", &[]).await;
    ok(&version, "version");
    assert!(version.body.starts_with("v4."), "{}", version.body);
    // GetConfig: the preferences Sonarr reads, with their types
    let prefs = web.get("app/preferences", &[]).await.json();
    assert!(prefs["save_path"].is_string());
    for k in [
        "max_ratio_enabled",
        "max_seeding_time_enabled",
        "queueing_enabled",
        "dht",
    ] {
        assert!(prefs[k].is_boolean(), "{k}: {}", prefs[k]);
    }
    for k in ["max_ratio", "max_seeding_time", "max_ratio_act"] {
        assert!(prefs[k].is_number(), "{k}: {}", prefs[k]);
    }
    if server == Server::Ratorrent {
        assert_eq!(Path::new(prefs["save_path"].as_str().unwrap()), dl);
        assert_eq!(prefs["dht"], false, "the session runs without the DHT");
        assert_eq!(prefs["max_ratio_act"], 0, "stop, Sonarr's wish");
    }
    // TestCategory: categories, created when missing, then listed
    for category in ["tv", "tv-imported", "movies"] {
        let cats = web.get("torrents/categories", &[]).await.json();
        assert!(cats.as_object().is_some_and(|c| !c.contains_key(category)));
        let r = web
            .post("torrents/createCategory", &[("category", category)])
            .await;
        ok(&r, "createCategory");
        let cats = web.get("torrents/categories", &[]).await.json();
        assert_eq!(cats[category]["name"], category, "{cats}");
        assert!(
            cats[category]["savePath"].is_string(),
            "camelCase savePath: {cats}"
        );
    }
    // TestGetTorrents
    let empty = web.get("torrents/info", &[("category", "tv")]).await.json();
    assert_eq!(empty, serde_json::json!([]));

    // AddFromMagnetLink: magnet with a tracker (the DHT is off), category, started, a ratio
    let magnet = format!(
        "magnet:?xt=urn:btih:{}&dn={SHOW}&tr={}",
        s.show_hash,
        form_urlencoded::byte_serialize(s.tracker_url.as_bytes()).collect::<String>()
    );
    let add = web
        .post(
            "torrents/add",
            &[
                ("urls", &magnet),
                ("category", "tv"),
                ("paused", "False"),
                ("ratioLimit", "2"),
            ],
        )
        .await;
    ok(&add, "add magnet");
    assert_ne!(add.body, "Fails.");
    // WaitForTorrent: properties, up to 10 times 100 ms; ratorrent lists it before the add
    // answers (qBittorrent adds a magnet link a moment later)
    let tries = wait_for_torrent(&web, &s.show_hash).await;
    if server == Server::Ratorrent {
        assert_eq!(tries, 1, "properties answered at once");
    }
    let listed = web.get("torrents/info", &[("category", "tv")]).await.json();
    assert_eq!(listed[0]["hash"], s.show_hash.as_str());
    assert_eq!(listed[0]["ratio_limit"], 2.0);
    // MoveTorrentToTopInQueue: 200, or 409 while queueing is off (Sonarr takes both)
    let top = web
        .post("torrents/topPrio", &[("hashes", &s.show_hash)])
        .await;
    assert!(top.status == 200 || top.status == 409, "{top:?}");
    if server == Server::Ratorrent {
        assert_eq!(top.status, 409, "queueing is off");
    }
    // GetItems until complete; then the import path
    let done = sonarr_wait_complete(&web, "tv", &s.show_hash, Duration::from_secs(120)).await;
    let save = PathBuf::from(done["save_path"].as_str().unwrap());
    let content = PathBuf::from(done["content_path"].as_str().unwrap());
    assert_ne!(
        content, save,
        "Sonarr imports from content_path when it differs"
    );
    assert_eq!(
        content,
        save.join(SHOW),
        "a multi-file torrent: its top folder"
    );
    compare_trees(&s.show_data, &content).unwrap();
    assert_eq!(done["amount_left"], 0);
    // HasReachedSeedLimit: ratio_limit, seeding_time_limit; properties' seeding_time
    let props = web
        .get("torrents/properties", &[("hash", &s.show_hash)])
        .await
        .json();
    assert!(props["seeding_time"].is_number(), "{props}");
    assert_eq!(Path::new(props["save_path"].as_str().unwrap()), save);
    // SetTorrentSeedingConfiguration (always: both parameters)
    let limits = web
        .post(
            "torrents/setShareLimits",
            &[
                ("hashes", &s.show_hash),
                ("ratioLimit", "1.5"),
                ("seedingTimeLimit", "120"),
            ],
        )
        .await;
    ok(&limits, "setShareLimits");
    let t = sonarr_poll(&web, "tv", &s.show_hash).await.unwrap();
    assert_eq!(
        (t["ratio_limit"].as_f64(), t["seeding_time_limit"].as_i64()),
        (Some(1.5), Some(120))
    );

    // AddTorrentFromFile: a .torrent upload with a save path (Radarr's movies)
    let movie_dir = dl.join("movies-here");
    let bytes = std::fs::read(&s.movie_torrent).unwrap();
    let movie_dir_text = movie_dir.display().to_string();
    let add = web
        .post_multipart(
            "torrents/add",
            &[("torrents", "Movie.2024.torrent", &bytes)],
            &[
                ("category", "movies"),
                ("savepath", &movie_dir_text),
                ("paused", "False"),
            ],
        )
        .await;
    ok(&add, "add file");
    assert_ne!(add.body, "Fails.");
    let tries = wait_for_torrent(&web, &s.movie_hash).await;
    if server == Server::Ratorrent {
        assert_eq!(tries, 1, "properties answered at once");
    }
    let done = sonarr_wait_complete(&web, "movies", &s.movie_hash, Duration::from_secs(120)).await;
    let save = PathBuf::from(done["save_path"].as_str().unwrap());
    assert_eq!(save, movie_dir);
    let content = PathBuf::from(done["content_path"].as_str().unwrap());
    assert_eq!(
        content,
        movie_dir.join(MOVIE),
        "a single-file torrent: the file"
    );
    compare_files(&s.movie_data, &content).unwrap();
    // GetImportItem's fallback: files and properties
    let files = web
        .get("torrents/files", &[("hash", &s.show_hash)])
        .await
        .json();
    let names: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&format!("{SHOW}/{SHOW}.mkv").as_str()),
        "{names:?}"
    );
    let files = web
        .get("torrents/files", &[("hash", &s.movie_hash)])
        .await
        .json();
    assert_eq!(files[0]["name"], MOVIE);
    assert_eq!(files[0]["progress"], 1.0);
    movie_dir
}

/// cross-seed's sequence against the movie already in the client; `version_major` picks
/// its parameter names (`paused`/`pause` for 4, `stopped`/`stop` for 5).
async fn cross_seed(server: Server, base: &str, s: &Swarm) {
    let web0 = Web::new(base);
    // login: a form body, the first Set-Cookie line sent back as the cookie
    let login = web0
        .post("auth/login", &[("username", USER), ("password", PASSWORD)])
        .await;
    assert_eq!(login.body, "Ok.");
    let mut web = web0.clone();
    web.cookie = Some(login.set_cookies.first().expect("a cookie").clone());
    web.headers = vec![("User-Agent".into(), "cross-seed/6.12.7".into())];
    let form = "application/x-www-form-urlencoded";
    let version = web.post_raw("app/version", form, Vec::new()).await;
    ok(&version, "version");
    let major: u32 = version
        .body
        .trim_start_matches('v')
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(major >= 4);
    let (stopped, stop) = if major >= 5 {
        ("stopped", "stop")
    } else {
        ("paused", "pause")
    };
    // createTag
    ok(
        &web.post_raw("torrents/createTags", form, b"tags=cross-seed".to_vec())
            .await,
        "createTags",
    );
    // getAllTorrentInfo: an empty URLSearchParams body
    let all = web
        .post_raw(
            "torrents/info",
            "application/x-www-form-urlencoded;charset=UTF-8",
            Vec::new(),
        )
        .await
        .json();
    assert!(all.as_array().unwrap().len() >= 2);
    // the searchee, by hash
    let searchee = web
        .post_raw(
            "torrents/info",
            form,
            format!("hashes={}", s.movie_hash).into_bytes(),
        )
        .await
        .json();
    let searchee = &searchee[0];
    assert_eq!(searchee["progress"], 1.0);
    let save_path = searchee["save_path"].as_str().unwrap().to_owned();
    let category = searchee["category"].as_str().unwrap().to_owned();
    assert_eq!(searchee["auto_tmm"], false, "added with a save path");
    // its files and trackers
    let files = web
        .post_raw(
            "torrents/files",
            form,
            format!("hash={}", s.movie_hash).into_bytes(),
        )
        .await
        .json();
    assert_eq!(files[0]["name"], MOVIE);
    let trackers = web
        .post_raw(
            "torrents/trackers",
            form,
            format!("hash={}", s.movie_hash).into_bytes(),
        )
        .await
        .json();
    let urls: Vec<&str> = trackers
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["url"].as_str().unwrap())
        .collect();
    assert_eq!(&urls[..3], ["** [DHT] **", "** [PeX] **", "** [LSD] **"]);
    assert!(urls.contains(&s.tracker_url.as_str()), "{urls:?}");

    // two matches: the same file in other pieces (other info hashes)
    let mut hashes = Vec::new();
    for (i, piece) in [(0, 32 << 10), (1, 128 << 10)] {
        let t = s.dir.path().join(format!("match{i}.torrent"));
        let h = make_torrent(&s.movie_data, &t, &s.tracker_url, Some(piece)).to_hex();
        let to_recheck = i == 1;
        let bytes = std::fs::read(&t).unwrap();
        let recheck = (!to_recheck).to_string();
        let paused = to_recheck.to_string();
        let add = web
            .post_multipart(
                "torrents/add",
                &[("torrents", &format!("{MOVIE}.cross-seed.torrent"), &bytes)],
                &[
                    ("downloadPath", &save_path),
                    ("savepath", &save_path),
                    ("autoTMM", "false"),
                    ("category", &category),
                    ("tags", "cross-seed"),
                    ("contentLayout", "Original"),
                    ("skip_checking", &recheck),
                    (stopped, &paused),
                    ("foo", "bar"),
                ],
            )
            .await;
        ok(&add, "cross-seed add");
        // getTorrentInfo(hash, 5): by hash, retried with a back-off; ratorrent lists it
        // before the add answers
        let mut tries = 0;
        let info = loop {
            tries += 1;
            let info = web
                .post_raw("torrents/info", form, format!("hashes={h}").into_bytes())
                .await
                .json();
            if !info.as_array().unwrap().is_empty() || tries > 5 {
                break info;
            }
            tokio::time::sleep(Duration::from_millis(250 << tries)).await;
        };
        if server == Server::Ratorrent {
            assert_eq!(tries, 1, "listed at once");
        }
        assert_eq!(info[0]["hash"], h.as_str());
        assert_eq!(info[0]["tags"], "cross-seed");
        assert_eq!(
            Path::new(info[0]["save_path"].as_str().unwrap()),
            Path::new(&save_path)
        );
        if to_recheck {
            // recheckTorrent: pause (or stop) first, then recheck
            ok(
                &web.post_raw(
                    &format!("torrents/{stop}"),
                    form,
                    format!("hashes={h}").into_bytes(),
                )
                .await,
                "pause",
            );
            ok(
                &web.post_raw("torrents/recheck", form, format!("hashes={h}").into_bytes())
                    .await,
                "recheck",
            );
        }
        hashes.push((h, to_recheck));
    }
    // resumeInjection: once checked and complete, a paused match is resumed
    for (h, to_recheck) in &hashes {
        let start = Instant::now();
        loop {
            let info = web
                .post_raw("torrents/info", form, format!("hashes={h}").into_bytes())
                .await
                .json();
            let t = &info[0];
            let state = t["state"].as_str().unwrap().to_owned();
            assert!(STATES.contains(&state.as_str()), "{state}");
            if t["progress"] == 1.0 && !state.starts_with("checking") {
                if *to_recheck {
                    assert!(state == "pausedUP" || state == "stoppedUP", "{state}");
                    ok(
                        &web.post_raw(
                            &format!("torrents/{}", if major >= 5 { "start" } else { "resume" }),
                            form,
                            format!("hashes={h}").into_bytes(),
                        )
                        .await,
                        "resume",
                    );
                }
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{h} never complete: {t}"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        // seeding now
        let start = Instant::now();
        loop {
            let info = web
                .post_raw("torrents/info", form, format!("hashes={h}").into_bytes())
                .await
                .json();
            let state = info[0]["state"].as_str().unwrap().to_owned();
            if ["uploading", "stalledUP", "queuedUP"].contains(&state.as_str()) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{h} not seeding: {state}"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    let tags = web.post_raw("torrents/tags", form, Vec::new()).await.json();
    assert!(
        tags.as_array()
            .unwrap()
            .contains(&Value::from("cross-seed")),
        "{tags}"
    );
    let tagged = web
        .post_raw("torrents/info", form, b"tag=cross-seed".to_vec())
        .await
        .json();
    assert_eq!(tagged.as_array().unwrap().len(), 2);
}

/// Sonarr's `MarkItemAsImported` and `RemoveItem`, with and without the files.
async fn sonarr_remove(server: Server, base: &str, s: &Swarm, movie_dir: &Path) {
    let mut web = Web::new(base);
    let login = web
        .post("auth/login", &[("username", USER), ("password", PASSWORD)])
        .await;
    web.cookie = login.sid();
    // post-import category
    ok(
        &web.post(
            "torrents/setCategory",
            &[("hashes", &s.show_hash), ("category", "tv-imported")],
        )
        .await,
        "setCategory",
    );
    let t = &web
        .get("torrents/info", &[("hashes", &s.show_hash)])
        .await
        .json()[0];
    assert_eq!(t["category"], "tv-imported");
    let content = PathBuf::from(t["content_path"].as_str().unwrap());
    // RemoveItem without the data: Sonarr sends no deleteFiles at all
    let r = web
        .post("torrents/delete", &[("hashes", &s.show_hash)])
        .await;
    match server {
        Server::Ratorrent => ok(&r, "delete without deleteFiles"),
        // qBittorrent requires the parameter (requireParams): Sonarr's call fails there
        Server::QBittorrent => {
            assert_eq!(r.status, 400, "{r:?}");
            ok(
                &web.post(
                    "torrents/delete",
                    &[("hashes", &s.show_hash), ("deleteFiles", "false")],
                )
                .await,
                "delete, files kept",
            );
        }
    }
    let start = Instant::now();
    while !web
        .get("torrents/info", &[("hashes", &s.show_hash)])
        .await
        .json()
        .as_array()
        .unwrap()
        .is_empty()
    {
        assert!(start.elapsed() < Duration::from_secs(10), "still listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    compare_trees(&s.show_data, &content).unwrap();
    // with the data
    ok(
        &web.post(
            "torrents/delete",
            &[("hashes", &s.movie_hash), ("deleteFiles", "true")],
        )
        .await,
        "delete with files",
    );
    let gone = movie_dir.join(MOVIE);
    let start = Instant::now();
    while gone.exists()
        || !web
            .get("torrents/info", &[("hashes", &s.movie_hash)])
            .await
            .json()
            .as_array()
            .unwrap()
            .is_empty()
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} still there",
            gone.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // a forged cookie is refused; after logout the cookie is dead
    let mut forged = web.clone();
    forged.cookie = Some("SID=forged".into());
    assert_eq!(forged.get("torrents/info", &[]).await.status, 403);
    ok(&web.post("auth/logout", &[]).await, "logout");
    assert_eq!(web.get("torrents/info", &[]).await.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sonarr_and_cross_seed_replayed_against_ratorrent() {
    let s = swarm();
    let hash = ratorrent::webui::password::hash_with(PASSWORD, b"replay-salt-0001", 1000);
    let rat = RatWeb::start_daemon("replay", USER, &hash, "");
    let movie_dir = sonarr(Server::Ratorrent, &rat.base, &rat.dl, &s).await;
    // the TUI attached to the daemon shows what the API did
    rat.pane.wait_row(SHOW, "Seeding", Duration::from_secs(10));
    rat.pane
        .wait_row("Movie.2024", "Seeding", Duration::from_secs(10));
    cross_seed(Server::Ratorrent, &rat.base, &s).await;
    sonarr_remove(Server::Ratorrent, &rat.base, &s, &movie_dir).await;
    rat.pane.wait_until(
        "the show gone from the list",
        Duration::from_secs(5),
        |screen| !screen.contains(SHOW),
    );
    // the password never reached the log
    let log = rat.log();
    assert!(log.contains("Web API"), "{log}");
    assert!(!log.contains(PASSWORD) && !log.contains("wrong"), "{log}");
    // quitting the attached TUI leaves the daemon (and its API) running
    rat.pane.keys("q");
    assert!(rat.pane.wait_exit(Duration::from_secs(10)), "the TUI quits");
    let daemon = rat.daemon.as_ref().expect("a daemon");
    assert!(daemon.alive(), "{}", daemon.capture());
    let web = Web::new(&rat.base);
    let r = web
        .post("auth/login", &[("username", USER), ("password", PASSWORD)])
        .await;
    ok(&r, "login after the TUI quit");
    assert_eq!(r.body, "Ok.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_sequences_against_qbittorrent_nox() {
    let Some(qbt) = QbtNox::start(USER, PASSWORD) else {
        return;
    };
    eprintln!(
        "checking the replay against qbittorrent-nox {}",
        qbt.version
    );
    let s = swarm();
    let movie_dir = sonarr(Server::QBittorrent, &qbt.base, &qbt.dl, &s).await;
    cross_seed(Server::QBittorrent, &qbt.base, &s).await;
    sonarr_remove(Server::QBittorrent, &qbt.base, &s, &movie_dir).await;
}
