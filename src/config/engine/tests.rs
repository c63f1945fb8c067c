//! The engine's part: defaults, the checks of values the types cannot express, and the
//! helpers that bound values set in code.

use super::*;
use crate::config::Config;
use std::path::Path;

#[test]
fn the_file_reaches_every_engine_field() {
    let text = r#"
download_dir = "/srv/dl"
listen_port = 7001
max_peers_per_torrent = 7
upload_slots = 3
download_rate_limit = "2M"
upload_rate_limit = 1024
alt_download_rate_limit = "300K"
alt_upload_rate_limit = "100K"
seed_after_download = false
disk_threads = 5
numwant = 80
max_connections = 300
max_half_open = 9
storage = "mmap"
preallocate = "full"
max_open_files = 64
min_free_space = 0
max_metadata_size = 65536
add_url_timeout = 5
pex = false
on_added = ["/usr/bin/notify-send", "added %N"]
on_complete = ["/opt/done", "%F", "%Z"]
hook_timeout = 30
ip_filter = "/srv/ipfilter.dat.gz"
ascii = true
[dht]
enabled = false
port = 7002
bootstrap = ["127.0.0.2:6881"]
[lsd]
enabled = true
interface = "127.0.0.1"
[webseeds]
enabled = false
max_connections_per_server = 2
min_rate = "4K"
min_rate_window = 10
[peer]
transports = ["tcp", "utp"]
encryption = "require"
[seeding]
ratio_limit = 2
seeding_time_limit = 10080
inactive_seeding_time_limit = 30
action = "remove_with_data"
[queue]
enabled = true
max_active_downloads = 1
max_active_uploads = -1
max_active_torrents = 9
max_active_checking = 2
dont_count_slow_torrents = false
slow_download_rate_threshold = "10K"
slow_upload_rate_threshold = 512
slow_torrent_inactive_timer = 5
[categories."tv"]
save_path = "/media/tv"
download_path = "/incoming/tv"
ratio_limit = 1.5
[categories."tv/hd"]
seeding_time_limit = 60
[alt_speed_schedule]
enabled = true
from = "01:15"
to = "07:45"
days = "weekends"
"#;
    let c = Config::from_toml(text, Path::new("x")).unwrap();
    // a literal without `..`: a new field of EngineConfig must be added here (and read
    // from the file) before this compiles
    let want = EngineConfig {
        download_dir: PathBuf::from("/srv/dl"),
        listen_port: 7001,
        max_peers_per_torrent: 7,
        upload_slots: 3,
        download_rate_limit: 2 << 20,
        upload_rate_limit: 1024,
        alt_download_rate_limit: 300 << 10,
        alt_upload_rate_limit: 100 << 10,
        alt_speed_schedule: crate::config::schedule::AltSpeedSchedule {
            enabled: true,
            from: chrono::NaiveTime::from_hms_opt(1, 15, 0).unwrap(),
            to: chrono::NaiveTime::from_hms_opt(7, 45, 0).unwrap(),
            days: crate::config::schedule::Days::WEEKENDS,
        },
        seed_after_download: false,
        disk_threads: 5,
        numwant: 80,
        max_connections: 300,
        max_half_open: 9,
        storage: StorageMode::Mmap,
        preallocate: Preallocate::Full,
        max_open_files: 64,
        min_free_space: 0,
        max_metadata_size: 65536,
        add_url_timeout: 5,
        pex: false,
        on_added: vec!["/usr/bin/notify-send".into(), "added %N".into()],
        on_complete: vec!["/opt/done".into(), "%F".into(), "%Z".into()],
        hook_timeout: 30,
        dht: DhtConfig {
            enabled: false,
            port: Some(7002),
            bootstrap: vec!["127.0.0.2:6881".to_owned()],
            state_file: None,
        },
        lsd: LsdConfig {
            enabled: true,
            interface: Some(std::net::Ipv4Addr::LOCALHOST),
        },
        webseeds: crate::config::engine::WebSeedConfig {
            enabled: false,
            max_connections_per_server: 2,
            min_rate: 4096,
            min_rate_window: 10,
        },
        peer: PeerConfig {
            transports: vec![TransportKind::Tcp, TransportKind::Utp],
            encryption: crate::config::engine::Encryption::Require,
        },
        seeding: crate::config::engine::SeedingConfig {
            ratio_limit: 2.0,
            seeding_time_limit: 10_080,
            inactive_seeding_time_limit: 30,
            action: crate::config::engine::GoalAction::RemoveWithData,
        },
        queue: QueueConfig {
            enabled: true,
            max_active_downloads: 1,
            max_active_uploads: -1,
            max_active_torrents: 9,
            max_active_checking: 2,
            dont_count_slow_torrents: false,
            slow_download_rate_threshold: 10 << 10,
            slow_upload_rate_threshold: 512,
            slow_torrent_inactive_timer: 5,
        },
        ip_filter: Some(PathBuf::from("/srv/ipfilter.dat.gz")),
        ip_filter_poll: IP_FILTER_POLL,
        categories: [
            (
                "tv".to_owned(),
                crate::config::engine::CategoryConfig {
                    save_path: PathBuf::from("/media/tv"),
                    download_path: Some(PathBuf::from("/incoming/tv")),
                    ratio_limit: Some(1.5),
                    ..Default::default()
                },
            ),
            (
                "tv/hd".to_owned(),
                crate::config::engine::CategoryConfig {
                    seeding_time_limit: Some(60),
                    ..Default::default()
                },
            ),
        ]
        .into(),
    };
    assert_eq!(c.engine, want);
    // every value differs from the default, so none was left at it by accident
    let d = EngineConfig::default();
    assert_ne!(want.listen_port, d.listen_port);
    assert_ne!(want.seed_after_download, d.seed_after_download);
    assert_ne!(want.queue, d.queue);
    assert_ne!(want.min_free_space, d.min_free_space);
    assert_ne!(want.max_metadata_size, d.max_metadata_size);
    assert_ne!(want.pex, d.pex);
    assert_ne!(want.add_url_timeout, d.add_url_timeout);
    assert_ne!(want.hook_timeout, d.hook_timeout);
    assert_ne!(want.alt_download_rate_limit, d.alt_download_rate_limit);
    assert_ne!(want.alt_speed_schedule, d.alt_speed_schedule);
    assert!(
        d.on_added.is_empty() && d.on_complete.is_empty(),
        "programs off by default"
    );
    // a UI key is not the engine's: the engine part is the same without it
    let without_ui =
        Config::from_toml(&text.replace("ascii = true\n", ""), Path::new("x")).unwrap();
    assert_eq!(without_ui.engine, want);
    assert!(c.ui.ascii && !without_ui.ui.ascii);
}

#[test]
fn defaults_pass_the_check_and_each_bad_value_names_its_key() {
    assert_eq!(EngineConfig::default().check(), Ok(()));
    let d = EngineConfig::default;
    for (c, key) in [
        (
            EngineConfig {
                upload_slots: 0,
                ..d()
            },
            "upload_slots",
        ),
        (
            EngineConfig {
                max_peers_per_torrent: 0,
                ..d()
            },
            "max_peers_per_torrent",
        ),
        (
            EngineConfig {
                download_dir: PathBuf::new(),
                ..d()
            },
            "download_dir",
        ),
        (
            EngineConfig {
                max_metadata_size: 1,
                ..d()
            },
            "max_metadata_size",
        ),
        (
            EngineConfig {
                dht: DhtConfig {
                    bootstrap: vec!["nohost".into()],
                    ..DhtConfig::default()
                },
                ..d()
            },
            "dht.bootstrap",
        ),
        (
            EngineConfig {
                lsd: LsdConfig {
                    enabled: true,
                    interface: Some(std::net::Ipv4Addr::BROADCAST),
                },
                ..d()
            },
            "lsd.interface",
        ),
        (
            EngineConfig {
                hook_timeout: 0,
                ..d()
            },
            "hook_timeout",
        ),
        (
            EngineConfig {
                hook_timeout: 86_401,
                ..d()
            },
            "hook_timeout",
        ),
        (
            EngineConfig {
                on_added: vec![String::new(), "%N".into()],
                ..d()
            },
            "on_added",
        ),
        (
            EngineConfig {
                on_complete: vec!["/bin/x".into(), "a\0b".into()],
                ..d()
            },
            "on_complete",
        ),
    ] {
        let e = c.check().unwrap_err();
        assert_eq!(e.key, key, "{e:?}");
        assert!(!e.problem.is_empty());
    }
    let e = EngineConfig {
        max_half_open: 1001,
        ..d()
    }
    .check()
    .unwrap_err();
    assert_eq!(e.problem, "must be between 1 and 1000 (got 1001)");
}

#[test]
fn helpers_bound_values_set_in_code() {
    let c = EngineConfig {
        disk_threads: u32::MAX,
        numwant: u32::MAX,
        max_open_files: 0,
        ..EngineConfig::default()
    };
    assert_eq!(c.disk_thread_count(), 64);
    assert_eq!(c.announce_numwant(), Some(1000));
    assert_eq!(c.open_file_cap(), 16);
    let d = EngineConfig::default();
    assert_eq!(d.announce_numwant(), Some(50));
    assert!((1..=4).contains(&d.disk_thread_count()));
    assert_eq!(
        (d.storage, d.preallocate),
        (StorageMode::File, Preallocate::Sparse)
    );
    let o = c.storage_options(HandleCache::new(c.open_file_cap()));
    assert_eq!(o.handles.capacity(), 16);
}

#[test]
fn host_port_entries() {
    for ok in [
        "router.bittorrent.com:6881",
        "127.0.0.1:1",
        "[::1]:6881",
        "a_b-c:65535",
    ] {
        assert_eq!(check_host_port(ok), Ok(()), "{ok}");
    }
    for (bad, why) in [
        ("router", "not HOST:PORT"),
        ("router:0", "1..=65535"),
        (":6881", "no host"),
        ("::1:6881", "between [ ]"),
        ("[nope]:1", "IPv6"),
        ("a b:1", "characters"),
    ] {
        let e = check_host_port(bad).unwrap_err();
        assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
    }
}

#[test]
fn seeding_goals_out_of_range_are_refused_with_the_key() {
    for (text, key) in [
        ("[seeding]\nratio_limit = -0.5\n", "seeding.ratio_limit"),
        ("[seeding]\nratio_limit = nan\n", "seeding.ratio_limit"),
        (
            "[seeding]\nseeding_time_limit = -2\n",
            "seeding.seeding_time_limit",
        ),
        (
            "[seeding]\ninactive_seeding_time_limit = -7\n",
            "seeding.inactive_seeding_time_limit",
        ),
    ] {
        match Config::from_toml(text, Path::new("x")) {
            Err(crate::config::ConfigError::Value { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{text}: {other:?}"),
        }
    }
    let bad_action = Config::from_toml("[seeding]\naction = \"pause\"\n", Path::new("x"));
    assert!(bad_action.is_err(), "an unknown action is refused");
    let c = Config::from_toml("[seeding]\nratio_limit = 1.5\n", Path::new("x")).unwrap();
    assert_eq!(c.engine.check(), Ok(()));
    assert_eq!(c.engine.seeding.ratio(), Some(1.5));
    assert_eq!(c.engine.seeding.seeding_minutes(), None);
}

#[test]
fn ip_filter_is_off_when_empty_or_left_out_and_tilde_expands() {
    assert_eq!(EngineConfig::default().ip_filter, None);
    let c = Config::from_toml("ip_filter = \"\"\n", Path::new("x")).unwrap();
    assert_eq!(c.engine.ip_filter, None, "empty = off");
    let c = Config::from_toml("ip_filter = \"~/lists/level1.p2p\"\n", Path::new("x")).unwrap();
    if let Some(h) = dirs::home_dir() {
        assert_eq!(c.engine.ip_filter, Some(h.join("lists/level1.p2p")));
    }
    assert_eq!(
        c.engine.ip_filter_poll, IP_FILTER_POLL,
        "not a key of the file"
    );
    assert!(Config::from_toml("ip_filter_poll = 1\n", Path::new("x")).is_err());
}

#[test]
fn queue_limits_are_minus_one_or_counts_and_the_timer_is_bounded() {
    let mut c = EngineConfig::default();
    assert!(c.check().is_ok());
    c.queue.max_active_uploads = -2;
    assert_eq!(c.check().unwrap_err().key, "queue.max_active_uploads");
    c.queue.max_active_uploads = -1;
    c.queue.max_active_checking = 0;
    assert_eq!(c.check().unwrap_err().key, "queue.max_active_checking");
    c.queue.max_active_checking = 1;
    c.queue.slow_torrent_inactive_timer = 0;
    assert_eq!(
        c.check().unwrap_err().key,
        "queue.slow_torrent_inactive_timer"
    );
    let text = "[queue]\nmax_active_downloads = -3\n";
    let e = Config::from_toml(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("queue.max_active_downloads"), "{e}");
}

#[test]
fn a_category_with_a_bad_name_or_goal_is_refused() {
    for (text, needle) in [
        ("[categories.\"tv/\"]\n", "no \"/\" at the start or the end"),
        ("[categories.\"..\"]\n", "\".\" or \"..\""),
        ("[categories.\"tv\"]\nratio_limit = -5\n", "ratio_limit"),
        (
            "[categories.\"tv\"]\ninactive_seeding_time_limit = -3\n",
            "inactive_seeding_time_limit",
        ),
    ] {
        let e = Config::from_toml(text, Path::new("x")).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("categories") && e.contains(needle),
            "{text}: {e}"
        );
    }
    let e = Config::from_toml("[categories.\"tv\"]\nsave = \"/x\"\n", Path::new("x"));
    assert!(e.is_err(), "an unknown key");
    let c = Config::from_toml(
        "[categories.\"tv\"]\nsave_path = \"~/tv\"\n",
        Path::new("x"),
    )
    .unwrap();
    let tv = &c.engine.categories["tv"];
    assert!(!tv.save_path.starts_with("~"), "~ expanded: {tv:?}");
    assert_eq!(tv.category("tv").limits, crate::api::ShareLimits::default());
}
