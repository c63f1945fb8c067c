//! The file as a user writes it: keys, defaults, errors naming line and key.

use super::*;
use crate::config::engine::{DhtConfig, MAX_DHT_BOOTSTRAP};
use crate::storage::HandleCache;

#[test]
fn shipped_default_file_parses_to_the_defaults() {
    let c = Config::from_toml(DEFAULT_TOML, Path::new("config/default.toml")).unwrap();
    let d = Config::default();
    // download_dir in the file is a commented example; everything else must agree
    assert_eq!(c.source.as_deref(), Some(Path::new("config/default.toml")));
    assert_eq!(
        Config { source: None, ..c },
        d,
        "config/default.toml and Config::default() disagree"
    );
}

#[test]
fn every_key_is_documented_in_the_default_file() {
    for key in [
        "download_dir",
        "listen_port",
        "max_peers_per_torrent",
        "upload_slots",
        "download_rate_limit",
        "upload_rate_limit",
        "alt_download_rate_limit",
        "alt_upload_rate_limit",
        "from",
        "to",
        "days",
        "seed_after_download",
        "disk_threads",
        "numwant",
        "max_connections",
        "max_half_open",
        "storage",
        "preallocate",
        "max_open_files",
        "ascii",
        "mouse",
        "confirm_quit",
        "columns",
        "min_free_space",
        "enabled",
        "port",
        "bootstrap",
        "max_metadata_size",
        "add_url_timeout",
        "pex",
        "on_added",
        "on_complete",
        "hook_timeout",
        "ip_filter",
        "watch_dir",
        "max_connections_per_server",
        "min_rate",
        "min_rate_window",
        "listen",
        "username",
        "password",
    ] {
        assert!(
            DEFAULT_TOML.contains(&format!("# {key} ="))
                || DEFAULT_TOML.contains(&format!("\n{key} =")),
            "{key} missing from config/default.toml"
        );
    }
}

#[test]
fn empty_file_is_all_defaults_and_partial_files_override() {
    assert_eq!(
        Config::from_toml("", Path::new("x")).unwrap(),
        Config {
            source: Some(PathBuf::from("x")),
            ..Config::default()
        }
    );
    let c = Config::from_toml(
        "listen_port = 7000\nupload_rate_limit = 1048576\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(c.engine.listen_port, 7000);
    assert_eq!(c.engine.upload_rate_limit, 1 << 20);
    assert_eq!(c.engine.upload_slots, Config::default().engine.upload_slots);
}

#[test]
fn errors_name_line_and_key() {
    let e = Config::from_toml(
        "listen_port = 6881\nlisten_prot = 1\n",
        Path::new("/c.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("/c.toml") && e.contains("line 2") && e.contains("listen_prot"),
        "{e}"
    );
    let e = Config::from_toml("listen_port = \"high\"\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("listen_port"), "{e}");
    let e = Config::from_toml("listen_port = 70000\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 1") && e.contains("listen_port") && e.contains("a port 0-65535"),
        "{e}"
    );
    let e = Config::from_toml("[dht]\nport = 70000\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("port") && e.contains("a port 0-65535"),
        "{e}"
    );
    let c = Config::from_toml("[dht]\nport = 6882\n", Path::new("/c.toml")).unwrap();
    assert_eq!(c.engine.dht.port, Some(6882));
    let c = Config::from_toml("[dht]\nenabled = false\n", Path::new("/c.toml")).unwrap();
    assert_eq!(c.engine.dht.port, None);
    let e = Config::from_toml("upload_slots = 0\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("upload_slots"), "{e}");
    // a program given as one text (as for a shell) is refused, not split
    let e = Config::from_toml("\non_complete = \"/bin/notify %N\"\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("on_complete") && e.contains("sequence"),
        "{e}"
    );
    let e = Config::from_toml("hook_timeout = 0\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hook_timeout") && e.contains("1 and 86400"),
        "{e}"
    );
    let e = Config::from_toml("[[[", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1"), "{e}");
}

#[test]
fn rates_in_human_units() {
    let c = Config::from_toml(
        "download_rate_limit = \"2M\"\nupload_rate_limit = 1024\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(
        (c.engine.download_rate_limit, c.engine.upload_rate_limit),
        (2 << 20, 1024)
    );
    // Every unit spelling is 1024-based, as README says: "2.5 MB/s" is 2.5 MiB/s.
    let c = Config::from_toml("download_rate_limit = \"2.5 MB/s\"\n", Path::new("x")).unwrap();
    assert_eq!(c.engine.download_rate_limit, 2_621_440);
    let e = Config::from_toml("upload_rate_limit = \"fast\"\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("fast"), "{e}");
}

#[test]
fn sizes_in_human_units_or_bytes() {
    let c = Config::from_toml(
        "min_free_space = \"2G\"\nmax_metadata_size = \"16 MiB\"\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(
        (c.engine.min_free_space, c.engine.max_metadata_size),
        (2 << 30, 16 << 20)
    );
    let c = Config::from_toml(
        "min_free_space = 4096\nmax_metadata_size = 65536\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(
        (c.engine.min_free_space, c.engine.max_metadata_size),
        (4096, 65536)
    );
    let e = Config::from_toml("\nmin_free_space = \"lots\"\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("min_free_space") && e.contains("lots"),
        "{e}"
    );
    let e = Config::from_toml("max_metadata_size = \"8G\"\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("max_metadata_size") && e.contains("too large"),
        "{e}"
    );
}

#[test]
fn keys_and_colours_are_kept_as_text_with_their_lines() {
    let c = Config::from_toml(
        "ascii = true\nmouse = true\nconfirm_quit = false\n[keys]\npause = \"x\"\nrecheck = [\"C\", \"F5\"]\n[colors]\ndown = \"bright_cyan\"\n",
        Path::new("x"),
    )
    .unwrap();
    assert!(c.ui.ascii && c.ui.mouse && !c.ui.confirm_quit);
    assert!(Config::default().ui.confirm_quit);
    let line = |value: &[&str], line| ui::Lined {
        value: value.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>(),
        line,
    };
    assert_eq!(c.ui.keys["pause"], line(&["x"], 5));
    assert_eq!(c.ui.keys["recheck"], line(&["C", "F5"], 6));
    assert_eq!(
        c.ui.colors["down"],
        ui::Lined {
            value: "bright_cyan".to_owned(),
            line: 8
        }
    );
    // what they say is the TUI's to check: names, keys and colours it does not know pass here
    let c = Config::from_toml(
        "[keys]\nfly = \"Hyper-c\"\n[colors]\nsky = \"pink\"\n",
        Path::new("/c.toml"),
    )
    .unwrap();
    assert_eq!(c.ui.keys["fly"].line, 2);
    assert_eq!(c.ui.colors["sky"].line, 4);
    // their shape is still the file's: a key is a text or a list of texts
    for (text, line) in [
        ("[keys]\npause = 5\n", "line 2"),
        ("[keys]\npause = [\"x\", 1]\n", "line 2"),
        ("\n[colors]\ndown = true\n", "line 3"),
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/c.toml") && e.contains(line), "{text}: {e}");
    }
}

#[test]
fn entry_problems_name_the_file_and_each_line() {
    let c = Config::from_toml("[keys]\nfly = \"x\"\n", Path::new("/c.toml")).unwrap();
    assert_eq!(c.source.as_deref(), Some(Path::new("/c.toml")));
    let problem = |line, key: &str| ui::EntryProblem {
        line,
        table: "keys",
        key: key.to_owned(),
        problem: "unknown action (actions: pause)".to_owned(),
    };
    let e = c.invalid_entries(vec![problem(2, "fly"), problem(3, "walk")]);
    assert_eq!(
        e.to_string(),
        "invalid config file /c.toml: line 2: [keys] fly: unknown action (actions: pause); \
         line 3: [keys] walk: unknown action (actions: pause)"
    );
}

#[test]
fn tilde_expands() {
    let c = Config::from_toml("download_dir = \"~/dl\"\n", Path::new("x")).unwrap();
    if let Some(h) = dirs::home_dir() {
        assert_eq!(c.engine.download_dir, h.join("dl"));
    }
}

#[test]
fn watch_dir_is_optional_and_tilde_expands() {
    assert_eq!(Config::default().watch_dir, None);
    let c = Config::from_toml("watch_dir = \"/srv/watch\"\n", Path::new("x")).unwrap();
    assert_eq!(c.watch_dir, Some(PathBuf::from("/srv/watch")));
    let c = Config::from_toml("watch_dir = \"~/watch\"\n", Path::new("x")).unwrap();
    if let Some(h) = dirs::home_dir() {
        assert_eq!(c.watch_dir, Some(h.join("watch")));
    }
    let e = Config::from_toml("watch_dir = \"\"\n", Path::new("/c.toml")).unwrap_err();
    assert!(
        matches!(
            &e,
            ConfigError::Value {
                key: "watch_dir",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn explicit_missing_file_is_an_error() {
    let e = Config::load(Some(Path::new("/nonexistent/ratorrent.toml"))).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ratorrent.toml"));
}

#[test]
fn out_of_range_numbers_are_refused_naming_key_and_range() {
    for (text, key, range) in [
        (
            "disk_threads = 4000000000\n",
            "disk_threads",
            "between 0 and 64",
        ),
        ("disk_threads = 65\n", "disk_threads", "between 0 and 64"),
        ("numwant = 4000000000\n", "numwant", "between 0 and 1000"),
        ("numwant = 1001\n", "numwant", "between 0 and 1000"),
        (
            "max_connections = 0\n",
            "max_connections",
            "between 1 and 65535",
        ),
        (
            "max_connections = 65536\n",
            "max_connections",
            "between 1 and 65535",
        ),
        ("max_half_open = 0\n", "max_half_open", "between 1 and 1000"),
        (
            "max_half_open = 1001\n",
            "max_half_open",
            "between 1 and 1000",
        ),
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml")).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Value { key: k, .. } if *k == key),
            "{text}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("`{key}`")) && msg.contains(range),
            "{msg}"
        );
    }
    // too big for the type at all: still an error naming the key, never a panic
    let e = Config::from_toml("disk_threads = 99999999999\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("disk_threads"), "{e}");
    let c = Config::from_toml(
        "disk_threads = 64\nnumwant = 0\nmax_connections = 65535\nmax_half_open = 1\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(c.engine.disk_thread_count(), 64);
    assert_eq!(c.engine.announce_numwant(), None);
    assert_eq!(
        (c.engine.max_connections, c.engine.max_half_open),
        (65_535, 1)
    );
}

#[test]
fn peer_transports_parse_and_validate() {
    use crate::config::engine::TransportKind::{Tcp, Utp};
    let d = Config::default().engine.peer;
    assert_eq!(d.transports, [Utp, Tcp]);
    let c = Config::from_toml("[peer]\ntransports = [\"utp\"]\n", Path::new("x")).unwrap();
    assert!(c.engine.peer.utp() && !c.engine.peer.tcp());
    let c = Config::from_toml("[peer]\ntransports = [\"tcp\", \"utp\"]\n", Path::new("x")).unwrap();
    assert_eq!(c.engine.peer.transports, [Tcp, Utp]);
    for (bad, says) in [
        ("[peer]\ntransports = []\n", "at least one"),
        ("[peer]\ntransports = [\"tcp\", \"tcp\"]\n", "twice"),
        ("[peer]\ntransports = [\"quic\"]\n", "quic"),
        ("[peer]\ntransport = [\"tcp\"]\n", "transport"),
    ] {
        let e = Config::from_toml(bad, Path::new("x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && e.contains("transport"), "{bad:?}: {e}");
    }
}

#[test]
fn dht_table_parses_and_validates() {
    let d = Config::default().engine.dht;
    assert!(d.enabled && d.port.is_none() && d.bootstrap.len() == 4);
    assert_eq!(d.udp_port(7000, false), 7000);
    assert_eq!(d.udp_port(7000, true), 7001, "uTP has 7000's UDP side");
    assert_eq!(d.udp_port(65535, true), 0);
    let c = Config::from_toml(
        "[dht]\nenabled = false\nport = 7001\nbootstrap = [\"127.0.0.2:6881\", \"[::1]:7\"]\n",
        Path::new("x"),
    )
    .unwrap();
    assert!(!c.engine.dht.enabled);
    assert_eq!(c.engine.dht.udp_port(6881, true), 7001);
    assert_eq!(c.engine.dht.bootstrap, ["127.0.0.2:6881", "[::1]:7"]);
    for bad in [
        "[dht]\nbootstrap = [\"router\"]\n",
        "[dht]\nbootstrap = [\"router:0\"]\n",
        "[dht]\nbootstrap = [\"router:70000\"]\n",
        "[dht]\nbootstrap = [\":6881\"]\n",
        "[dht]\nbootstrap = [\"::1:6881\"]\n",
        "[dht]\nbootstrap = [\"a b:6881\"]\n",
    ] {
        let e = Config::from_toml(bad, Path::new("/c.toml")).unwrap_err();
        assert!(
            matches!(
                &e,
                ConfigError::Value {
                    key: "dht.bootstrap",
                    ..
                }
            ),
            "{bad}: {e}"
        );
    }
    let many = format!(
        "[dht]\nbootstrap = [{}]\n",
        vec!["\"h:1\""; MAX_DHT_BOOTSTRAP + 1].join(",")
    );
    let e = Config::from_toml(&many, Path::new("/c.toml")).unwrap_err();
    assert!(e.to_string().contains("at most 64"), "{e}");
    let e = Config::from_toml("[dht]\nenabeld = true\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("enabeld") && e.contains("line 2"), "{e}");
    let e = Config::from_toml("[dht]\nport = 70000\n", Path::new("/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("port"), "{e}");
    assert!(!DhtConfig::off().enabled && DhtConfig::off().bootstrap.is_empty());
}

#[test]
fn lsd_table_is_off_by_default_and_validates() {
    let d = Config::default().engine.lsd;
    assert!(!d.enabled && d.interface.is_none());
    assert_eq!(d.interface_addr(), std::net::Ipv4Addr::UNSPECIFIED);
    let shipped = Config::from_toml(DEFAULT_TOML, Path::new("default.toml")).unwrap();
    assert_eq!(shipped.engine.lsd, d, "the shipped file keeps LSD off");
    let c = Config::from_toml(
        "[lsd]\nenabled = true\ninterface = \"127.0.0.1\"\n",
        Path::new("x"),
    )
    .unwrap();
    assert!(c.engine.lsd.enabled);
    assert_eq!(c.engine.lsd.interface_addr(), std::net::Ipv4Addr::LOCALHOST);
    for (text, want) in [
        ("[lsd]\ninterface = \"239.192.152.143\"\n", "lsd.interface"),
        ("[lsd]\ninterface = \"255.255.255.255\"\n", "lsd.interface"),
        ("[lsd]\ninterface = \"eth0\"\n", "interface"),
        ("[lsd]\ninterface = \"::1\"\n", "interface"),
        ("[lsd]\nenabled = \"yes\"\n", "enabled"),
        ("[lsd]\nport = 6771\n", "port"),
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && e.contains("/c.toml"), "{text}: {e}");
    }
    let e =
        Config::from_toml("[lsd]\ninterface = \"224.0.0.1\"\n", Path::new("/c.toml")).unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Value {
                key: "lsd.interface",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn storage_keys_parse_and_bad_values_name_the_key() {
    let c = Config::from_toml(
        "storage = \"mmap\"\npreallocate = \"full\"\nmax_open_files = 64\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(c.engine.storage, StorageMode::Mmap);
    assert_eq!(c.engine.preallocate, Preallocate::Full);
    assert_eq!(c.engine.open_file_cap(), 64);
    let o = c
        .engine
        .storage_options(HandleCache::new(c.engine.open_file_cap()));
    assert_eq!(
        (o.mode, o.preallocate),
        (StorageMode::Mmap, Preallocate::Full)
    );
    assert_eq!(o.handles.capacity(), 64);
    for (text, key) in [
        ("storage = \"direct\"\n", "storage"),
        ("preallocate = \"some\"\n", "preallocate"),
        ("max_open_files = 0\n", "max_open_files"),
        ("max_open_files = 2000000\n", "max_open_files"),
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("/c.toml"), "{text}: {e}");
    }
}

#[test]
fn alternative_speeds_and_their_schedule() {
    let text = "alt_download_rate_limit = \"200K\"\nalt_upload_rate_limit = 0\n\
                [alt_speed_schedule]\nenabled = true\nfrom = \"22:00\"\nto = \"06:30\"\n\
                days = [\"sat\", \"Sunday\"]\n";
    let c = Config::from_toml(text, Path::new("x")).unwrap();
    assert_eq!(c.engine.alt_download_rate_limit, 200 << 10);
    assert_eq!(c.engine.alt_upload_rate_limit, 0);
    let s = c.engine.alt_speed_schedule;
    assert!(s.enabled);
    assert_eq!(s.from.format("%H:%M").to_string(), "22:00");
    assert_eq!(s.to.format("%H:%M").to_string(), "06:30");
    assert_eq!(s.days, schedule::Days::WEEKENDS);
    let c = Config::from_toml(
        "[alt_speed_schedule]\ndays = \"weekdays\"\n",
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(c.engine.alt_speed_schedule.days, schedule::Days::WEEKDAYS);
    assert!(!c.engine.alt_speed_schedule.enabled);

    // each bad value names its line and key, and what is allowed
    for (text, line, key, says) in [
        (
            "\nalt_upload_rate_limit = \"slow\"\n",
            "line 2",
            "alt_upload_rate_limit",
            "slow",
        ),
        (
            "[alt_speed_schedule]\nfrom = \"25:00\"\n",
            "line 2",
            "from",
            "HH:MM",
        ),
        (
            "[alt_speed_schedule]\n\nto = 1830\n",
            "line 3",
            "to",
            "HH:MM",
        ),
        (
            "[alt_speed_schedule]\ndays = \"mondays\"\n",
            "line 2",
            "days",
            "weekdays",
        ),
        (
            "[alt_speed_schedule]\ndays = [\"mon\", \"funday\"]\n",
            "line 2",
            "days",
            "funday",
        ),
        (
            "[alt_speed_schedule]\ndays = []\n",
            "line 2",
            "days",
            "at least one day",
        ),
        (
            "[alt_speed_schedule]\nstart = \"18:00\"\n",
            "line 2",
            "start",
            "unknown field",
        ),
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/c.toml") && e.contains(line) && e.contains(key) && e.contains(says),
            "{text:?}: {e}"
        );
    }
    let e = Config::from_toml(
        "[alt_speed_schedule]\nfrom = \"18:00\"\nto = \"18:00\"\n",
        Path::new("/c.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("alt_speed_schedule.to") && e.contains("18:00"),
        "{e}"
    );
}

#[test]
fn the_alt_upload_goal_action_reads() {
    let text = "[seeding]\nratio_limit = 1.0\naction = \"alt_upload\"\n";
    let c = Config::from_toml(text, Path::new("x")).unwrap();
    assert_eq!(
        c.engine.seeding.action,
        crate::config::engine::GoalAction::AltUpload
    );
}

#[test]
fn peer_encryption_is_prefer_by_default_and_takes_three_values() {
    use super::engine::Encryption;
    assert_eq!(Config::default().engine.peer.encryption, Encryption::Prefer);
    let shipped = Config::from_toml(DEFAULT_TOML, Path::new("default.toml")).unwrap();
    assert_eq!(shipped.engine.peer.encryption, Encryption::Prefer);
    for (v, want) in [
        ("prefer", Encryption::Prefer),
        ("require", Encryption::Require),
        ("disable", Encryption::Disable),
    ] {
        let c =
            Config::from_toml(&format!("[peer]\nencryption = \"{v}\"\n"), Path::new("x")).unwrap();
        assert_eq!(c.engine.peer.encryption, want);
        assert_eq!(want.name(), v);
    }
    for text in [
        "[peer]\nencryption = \"forced\"\n",
        "[peer]\nencryption = true\n",
        "[peer]\nencrypt = \"require\"\n",
    ] {
        let e = Config::from_toml(text, Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("/c.toml"), "{text}: {e}");
    }
}
