//! Renders the terminal UI on ratatui's `TestBackend` from hand-built snapshots and checks
//! the screen (insta snapshots at 80×24 and 200×50 of every screen, tab and dialog, NO_COLOR
//! and ASCII variants, plus direct assertions) and the key handling of `App`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratorrent::api::{
    AddError, AddSource, Command, EngineEvent, EventKind, EventLevel, FilePriority, FileRow,
    GlobalStats, PeerFlags, PeerRow, PeerSource, PieceState, Snapshot, SourceCount, TorrentDetail,
    TorrentError, TorrentErrorKind, TorrentId, TorrentRow, TorrentState, TrackerRow, TrackerStatus,
};
use ratorrent::tui::action::{ACTIONS, Context};
use ratorrent::tui::keymap::Keymap;
use ratorrent::tui::popups::Dialog;
use ratorrent::tui::theme::Theme;
use ratorrent::tui::{App, Screen, Tab, UiOptions};

const MIB: u64 = 1024 * 1024;
const SIZES: [(u16, u16); 2] = [(80, 24), (200, 50)];

fn downloading() -> TorrentRow {
    let size = 700 * MIB;
    let done = size / 100 * 42; // exactly 42.0 %
    TorrentRow {
        id: TorrentId(1),
        rev: 1,
        name: "debian-12.5.0-amd64.iso".to_owned(),
        info_hash: "aa".repeat(20),
        size,
        done,
        pieces_have: 1176,
        pieces_total: 2800,
        state: TorrentState::Downloading,
        down_rate: 5 * MIB / 2,
        up_rate: 128 * 1024,
        eta_secs: Some(2 * 60 + 42),
        seeds: 5,
        peers: 12,
        swarm_seeds: Some(120),
        swarm_leechers: Some(30),
        downloaded: done,
        uploaded: 10 * MIB,
        has_trackers: true,
        ..TorrentRow::default()
    }
}

fn seeding() -> TorrentRow {
    let size = 1126 * MIB;
    TorrentRow {
        id: TorrentId(2),
        rev: 1,
        name: "archlinux-2024.06.01-x86_64.iso".to_owned(),
        info_hash: "bb".repeat(20),
        size,
        done: size,
        pieces_have: 2252,
        pieces_total: 2252,
        state: TorrentState::Seeding,
        up_rate: 512 * 1024,
        peers: 3,
        swarm_seeds: Some(120),
        swarm_leechers: Some(8),
        downloaded: size,
        uploaded: 2 * size,
        has_trackers: true,
        ..TorrentRow::default()
    }
}

fn paused_with_message() -> TorrentRow {
    let size = 4000 * MIB;
    TorrentRow {
        id: TorrentId(3),
        rev: 1,
        name: "A Very Long Name That Must Be Cut Short With An Ellipsis (2024) 1080p.mkv"
            .to_owned(),
        info_hash: "cc".repeat(20),
        size,
        done: size / 10,
        pieces_have: 410,
        pieces_total: 4096,
        state: TorrentState::Paused,
        message: Some("tracker: connection refused".to_owned()),
        has_trackers: true,
        ..TorrentRow::default()
    }
}

fn errored() -> TorrentRow {
    TorrentRow {
        id: TorrentId(4),
        rev: 1,
        name: "日本語のアニメ 🎬 第01話.mkv".to_owned(),
        info_hash: "dd".repeat(20),
        size: 350 * MIB,
        done: 100 * MIB,
        pieces_total: 1400,
        pieces_have: 400,
        state: TorrentState::Error,
        error: Some(TorrentError {
            kind: TorrentErrorKind::NoSpace,
            message: "no space left writing /data/anime/第01話.mkv".to_owned(),
        }),
        ..TorrentRow::default()
    }
}

fn detail() -> TorrentDetail {
    let peer =
        |ip: &str, client: &str, flags: PeerFlags, progress: f32, down: u64, up: u64| PeerRow {
            addr: ip.parse::<SocketAddr>().unwrap(),
            client: client.to_owned(),
            flags,
            progress,
            down_rate: down,
            up_rate: up,
            downloaded: down * 60,
            uploaded: up * 60,
            source: PeerSource::Tracker,
        };
    let downloading_from = PeerFlags {
        am_interested: true,
        am_choking: true,
        ..PeerFlags::default()
    };
    let both = PeerFlags {
        am_interested: true,
        peer_interested: true,
        incoming: true,
        encrypted: true,
        utp: true,
        ..PeerFlags::default()
    };
    let file = |path: &str, size: u64, done: u64, priority| FileRow {
        path: path.to_owned(),
        changed: None,
        size,
        done,
        priority,
        piece_range: (0, 0),
    };
    let now = SystemTime::now();
    let pieces: Vec<PieceState> = (0..2800)
        .map(|i| match i % 7 {
            0..=2 => PieceState::Have,
            3 => PieceState::Downloading,
            _ => PieceState::Missing,
        })
        .collect();
    TorrentDetail {
        goals: ratorrent::api::GoalView::default(),
        id: TorrentId(1),
        info_hash: "aa".repeat(20),
        save_path: PathBuf::from("/srv/torrents/linux"),
        name_changed: None,
        comment: Some("Debian CD from cdimage.debian.org".to_owned()),
        created_by: Some("mktorrent 1.1".to_owned()),
        creation_date: None,
        private: false,
        multi_file: true,
        piece_length: 256 * 1024,
        wasted: 512 * 1024,
        given_peers: Vec::new(),
        web_seeds: Vec::new(),
        peer_sources: vec![
            SourceCount {
                source: PeerSource::Tracker,
                known: 40,
                connected: 2,
            },
            SourceCount {
                source: PeerSource::Pex,
                known: 12,
                connected: 1,
            },
            SourceCount {
                source: PeerSource::Lsd,
                known: 1,
                connected: 1,
            },
        ],
        peers: vec![
            peer(
                "10.0.0.2:51413",
                "Transmission 4.0.5",
                downloading_from,
                1.0,
                2 * MIB,
                0,
            ),
            peer(
                "[2001:db8::7]:6881",
                "libtorrent 2.0.8",
                both,
                0.35,
                512 * 1024,
                128 * 1024,
            ),
            PeerRow {
                // found on the local network (BEP 14)
                source: PeerSource::Lsd,
                ..peer(
                    "192.168.1.20:6881",
                    "qBittorrent 4.6.2",
                    PeerFlags::default(),
                    0.0,
                    0,
                    0,
                )
            },
        ],
        files: vec![
            file("debian/README.txt", 4096, 4096, FilePriority::High),
            file(
                "debian/iso/debian-12.5.0-amd64-netinst.iso",
                // the row's size is what is wanted: the three files not skipped
                700 * MIB - 5120,
                252 * MIB,
                FilePriority::Normal,
            ),
            file("debian/iso/SHA256SUMS", 1024, 0, FilePriority::Normal),
            file(
                "debian/extras/firmware.tar.gz",
                100 * MIB,
                0,
                FilePriority::Skip,
            ),
        ],
        trackers: vec![
            TrackerRow {
                url: "http://tracker.example.org:6969/announce?passkey=***".to_owned(),
                announce_url: "http://tracker.example.org:6969/announce?passkey=s3cr3t".to_owned(),
                tier: 0,
                status: TrackerStatus::Working,
                message: None,
                last_announce: Some(now - Duration::from_secs(125)),
                next_announce: Some(now + Duration::from_secs(1675)),
                seeds: Some(120),
                leechers: Some(30),
                downloaded: Some(5021),
                peers: 50,
            },
            TrackerRow {
                url: "wss://backup.example.net/announce".to_owned(),
                announce_url: "wss://backup.example.net/announce".to_owned(),
                tier: 1,
                status: TrackerStatus::Unsupported,
                message: Some("WebSocket trackers are not supported".to_owned()),
                last_announce: None,
                next_announce: None,
                seeds: None,
                leechers: None,
                downloaded: None,
                peers: 0,
            },
        ],
        pieces: pieces.into(),
    }
}

fn global(rows: &[TorrentRow]) -> GlobalStats {
    GlobalStats {
        down_rate: rows.iter().map(|r| r.down_rate).sum(),
        up_rate: rows.iter().map(|r| r.up_rate).sum(),
        down_limit: 4 * MIB,
        up_limit: 0,
        peers: rows.iter().map(|r| r.peers).sum(),
        listen_port: 6881,
        free_space: Some(120 * 1024 * MIB),
        ..GlobalStats::default()
    }
}

fn snapshot_with(seq: u64, rows: Vec<TorrentRow>, detail: Option<TorrentDetail>) -> Arc<Snapshot> {
    Arc::new(Snapshot {
        seq,
        global: global(&rows),
        rows: rows.into_iter().map(Arc::new).collect(),
        detail: detail.map(Arc::new),
    })
}

fn snapshot(seq: u64, rows: Vec<TorrentRow>) -> Arc<Snapshot> {
    snapshot_with(seq, rows, None)
}

fn four() -> Vec<TorrentRow> {
    vec![downloading(), seeding(), paused_with_message(), errored()]
}

fn events() -> Vec<EngineEvent> {
    let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_590_000 + s);
    let ev = |seq, s, torrent: Option<u64>, level, kind, message: &str| EngineEvent {
        seq,
        at: at(s),
        torrent: torrent.map(TorrentId),
        level,
        kind,
        message: message.to_owned(),
    };
    vec![
        ev(
            1,
            0,
            Some(1),
            EventLevel::Info,
            EventKind::Added,
            "added debian-12.5.0-amd64.iso",
        ),
        ev(
            2,
            3,
            Some(1),
            EventLevel::Info,
            EventKind::StateChanged,
            "checking → downloading",
        ),
        ev(
            3,
            40,
            Some(1),
            EventLevel::Warn,
            EventKind::HashFailed,
            "piece 117 failed its hash check (from 10.0.0.9)",
        ),
        ev(
            4,
            41,
            Some(3),
            EventLevel::Warn,
            EventKind::TrackerError,
            "tracker http://t.example:80: connection refused",
        ),
        ev(
            5,
            90,
            Some(4),
            EventLevel::Error,
            EventKind::DiskError,
            "no space left writing /data/anime/第01話.mkv",
        ),
        ev(
            6,
            95,
            Some(1),
            EventLevel::Warn,
            EventKind::PeerBanned,
            "banned 10.0.0.9 after 3 bad pieces",
        ),
    ]
}

/// An app with the four rows, the detail of torrent 1, events and a minute of speed.
fn full_app(opts: UiOptions) -> App {
    let mut app = App::with_options(snapshot_with(1, four(), Some(detail())), opts);
    app.push_events(events());
    app.set_notice(None);
    for s in 1..=70u64 {
        let mut rows = four();
        rows[0].down_rate = (s % 20 + 1) * MIB / 4;
        rows[0].up_rate = (s % 7) * 64 * 1024;
        rows[0].rev = s + 1;
        app.set_snapshot_at(snapshot_with(s + 1, rows, Some(detail())), s);
    }
    app
}

fn options(no_color: bool, ascii: bool) -> UiOptions {
    UiOptions {
        theme: Theme::new(&BTreeMap::new(), no_color, ascii),
        ..UiOptions::default()
    }
}

fn render(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal
        .draw(|frame| ratorrent::tui::draw(frame, app))
        .expect("draw");
    terminal
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn code(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.handle_key(key(c));
    }
}

/// Text of line `y` of the buffer, trailing blanks removed.
fn line(buffer: &Buffer, y: u16) -> String {
    let mut text = String::new();
    for x in 0..buffer.area.width {
        text.push_str(buffer[(x, y)].symbol());
    }
    text.trim_end().to_owned()
}

fn screen(terminal: &Terminal<TestBackend>) -> String {
    let b = terminal.backend().buffer();
    (0..b.area.height)
        .map(|y| line(b, y))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Snapshots the app at 80×24 and 200×50 as `{name}_{w}x{h}` (clock times masked).
fn snap_both(app: &mut App, name: &str) {
    for (w, h) in SIZES {
        let terminal = render(app, w, h);
        let filters = vec![
            (r"\b\d\d:\d\d:\d\d\b", "[hh:mm:ss]"),
            // announce times relative to the clock
            (r"in \d+m \d\ds", "in [t]"),
            (r"\d+m \d\ds ago", "[t] ago"),
        ];
        insta::with_settings!({filters => filters}, {
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen(&terminal));
        });
    }
}

#[test]
fn main_list_at_both_sizes() {
    let mut app = full_app(UiOptions::default());
    snap_both(&mut app, "list");
    let terminal = render(&mut app, 200, 50);
    let b = terminal.backend().buffer();
    let header = line(b, 1);
    for title in [
        "Name", "Size", "Progress", "State", "↓ Rate", "↑ Rate", "ETA", "Ratio", "Seeds", "Peers",
        "Added",
    ] {
        assert!(header.contains(title), "header lacks {title}: {header}");
    }
    let first = line(b, 2);
    assert!(first.starts_with('>'), "first row selected: {first}");
    for part in [
        "debian-12.5.0-amd64.iso",
        "700 MiB",
        "42.0%",
        "2m 42s",
        "5 (120)",
        "12 (150)",
        "Downloading",
    ] {
        assert!(first.contains(part), "{part}: {first}");
    }
    // The selection is the whole row in reverse video.
    for x in 0..200 {
        assert!(
            b[(x, 2)].modifier.contains(Modifier::REVERSED),
            "cell {x} of the selected row"
        );
    }
    assert!(!b[(5, 3)].modifier.contains(Modifier::REVERSED));
    // Status bar: rates, the download limit, peers, free space, port, keys.
    let status = line(b, 49);
    for part in [
        "↓ ",
        "(max 4.00 MiB/s)",
        "↑ 512 KiB/s",
        "peers 15",
        "free 120 GiB",
        "port 6881",
        "? help",
        "q quit",
    ] {
        assert!(status.contains(part), "status bar lacks {part:?}: {status}");
    }
    // No DHT running (dht_nodes None): no DHT figure at all, not a 0.
    assert!(!status.contains("DHT"), "{status}");
    let mut with_dht = (*app.snapshot().clone()).clone();
    with_dht.seq += 1;
    with_dht.global.dht_nodes = Some(312);
    app.set_snapshot(Arc::new(with_dht));
    let terminal = render(&mut app, 200, 50);
    let status = line(terminal.backend().buffer(), 49);
    assert!(status.contains("DHT 312"), "{status}");
    let mut without = (*app.snapshot().clone()).clone();
    without.seq += 1;
    without.global.dht_nodes = None;
    app.set_snapshot(Arc::new(without));
    let terminal = render(&mut app, 200, 50);
    assert!(!line(terminal.backend().buffer(), 49).contains("DHT"));
    // The error torrent's name (CJK + emoji) keeps the columns aligned.
    assert_eq!(find_x(b, 2, "Downloading"), find_x(b, 5, "Error"));
    let terminal = render(&mut app, 80, 24);
    let b = terminal.backend().buffer();
    assert!(find_x(b, 2, "Downloading").is_some());
    assert_eq!(find_x(b, 2, "Downloading"), find_x(b, 5, "Error"));
}

/// The column where `needle` starts on line `y`.
fn find_x(buffer: &Buffer, y: u16, needle: &str) -> Option<u16> {
    let w = buffer.area.width;
    (0..w).find(|&x| {
        needle
            .chars()
            .enumerate()
            .all(|(i, c)| x + (i as u16) < w && buffer[(x + i as u16, y)].symbol() == c.to_string())
    })
}

#[test]
fn no_color_keeps_the_selection_visible_and_sends_no_colour() {
    let mut app = full_app(options(true, false));
    let terminal = render(&mut app, 80, 24);
    insta::assert_snapshot!("list_no_color_80x24", screen(&terminal));
    let b = terminal.backend().buffer();
    for y in 0..24 {
        for x in 0..80 {
            let c = &b[(x, y)];
            assert!(
                c.fg == Color::Reset && c.bg == Color::Reset,
                "colour at {x},{y}"
            );
        }
    }
    for x in 0..80 {
        assert!(b[(x, 2)].modifier.contains(Modifier::REVERSED));
    }
}

fn assert_ascii(terminal: &Terminal<TestBackend>) {
    let b = terminal.backend().buffer();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            assert!(
                b[(x, y)].symbol().is_ascii(),
                "non-ASCII {:?} at {x},{y}: {}",
                b[(x, y)].symbol(),
                line(b, y)
            );
        }
    }
}

#[test]
fn ascii_mode_draws_only_ascii() {
    let mut app = full_app(options(false, true));
    let terminal = render(&mut app, 80, 24);
    insta::assert_snapshot!("list_ascii_80x24", screen(&terminal));
    assert_ascii(&terminal);
    app.handle_key(code(KeyCode::Enter));
    for tab in Tab::ALL {
        let terminal = render(&mut app, 80, 24);
        assert_ascii(&terminal);
        if matches!(tab, Tab::General | Tab::Pieces | Tab::Speed | Tab::Files) {
            insta::assert_snapshot!(
                format!("detail_{}_ascii_80x24", tab.title().to_lowercase()),
                screen(&terminal)
            );
        }
        app.handle_key(code(KeyCode::Tab));
    }
    for k in ['?', 'q', 'a', 'q'] {
        let _ = k;
    }
    app.handle_key(key('?'));
    assert_ascii(&render(&mut app, 80, 24));
    app.handle_key(code(KeyCode::Esc));
    app.handle_key(key('D'));
    assert_ascii(&render(&mut app, 80, 24));
}

/// A torrent without trackers says where its peers come from, as the session runs: the DHT
/// and LSD only when they are on, incoming peers only for a private torrent.
#[test]
fn trackers_tab_without_trackers_names_the_sources_in_effect() {
    for (private, dht_nodes, lsd, want, not) in [
        (
            false,
            Some(120),
            false,
            "peers come from the DHT, PEX and incoming",
            "DHT off",
        ),
        (
            false,
            None,
            false,
            "peers come from PEX and incoming connections (DHT off)",
            "the DHT,",
        ),
        (
            true,
            Some(120),
            true,
            "a private torrent (BEP 27) only takes incoming peers",
            "PEX",
        ),
        (
            false,
            Some(120),
            true,
            "peers come from the DHT, LSD, PEX and incoming",
            "DHT off",
        ),
        (
            false,
            None,
            true,
            "peers come from LSD, PEX and incoming connections (DHT off)",
            "the DHT,",
        ),
    ] {
        let mut d = detail();
        d.trackers.clear();
        // before the engine lists the sources in effect: what the session runs
        d.peer_sources.clear();
        d.private = private;
        let mut snap = (*snapshot_with(1, four(), Some(d))).clone();
        snap.global.dht_nodes = dht_nodes;
        snap.global.lsd = lsd;
        let mut app = App::new(Arc::new(snap));
        app.handle_key(code(KeyCode::Enter));
        while app.tab() != Tab::Trackers {
            app.handle_key(code(KeyCode::Tab));
        }
        let text = screen(&render(&mut app, 120, 30));
        assert!(text.contains(want) && !text.contains(not), "{want}\n{text}");
    }
}

/// Issue 15 item 6: without trackers, the Trackers tab names the sources the engine lists
/// as in effect, the magnet link's peers first, with how many are connected; never
/// "waiting for incoming peers".
#[test]
fn trackers_tab_without_trackers_names_the_magnet_peer_that_sends() {
    let mut d = detail();
    d.trackers.clear();
    d.peer_sources = vec![
        SourceCount {
            source: PeerSource::Incoming,
            known: 0,
            connected: 0,
        },
        SourceCount {
            source: PeerSource::Magnet,
            known: 1,
            connected: 1,
        },
    ];
    let mut app = App::new(snapshot_with(1, four(), Some(d)));
    app.handle_key(code(KeyCode::Enter));
    while app.tab() != Tab::Trackers {
        app.handle_key(code(KeyCode::Tab));
    }
    let text = screen(&render(&mut app, 120, 30));
    assert!(
        text.contains(
            "no trackers: peers come from the magnet link's peers (1 connected) and incoming connections"
        ),
        "{text}"
    );
    assert!(!text.contains("waiting"), "{text}");
}

/// `r` on a torrent without trackers names the sources the Trackers tab names for it (a
/// peer added by hand), not the session's (it said "PEX" only).
#[test]
fn reannounce_without_trackers_names_the_torrents_own_sources() {
    let mut d = detail();
    d.id = TorrentId(2);
    d.trackers.clear();
    d.peer_sources = vec![SourceCount {
        source: PeerSource::Manual,
        known: 1,
        connected: 1,
    }];
    let mut app = App::new(snapshot_with(1, vec![trackerless_seed()], Some(d)));
    app.handle_key(key('r'));
    assert!(app.take_commands().is_empty());
    assert_eq!(
        app.notice(),
        Some(
            "no tracker to re-announce to; peers come from peers added by hand (1 connected) — archlinux-2024.06.01-x86_64.iso"
        )
    );
}

#[test]
fn every_detail_tab_at_both_sizes() {
    let mut app = full_app(UiOptions::default());
    let commands = app.handle_key(code(KeyCode::Enter));
    assert!(
        matches!(commands[..], [Command::Focus(Some(TorrentId(1)))]),
        "{commands:?}"
    );
    assert_eq!(app.screen(), Screen::Detail);
    for tab in Tab::ALL {
        assert_eq!(app.tab(), tab);
        snap_both(&mut app, &format!("detail_{}", tab.title().to_lowercase()));
        let text = screen(&render(&mut app, 200, 50));
        match tab {
            Tab::General => {
                for part in [
                    "Info hash",
                    "/srv/torrents/linux",
                    "2800 pieces of 256 KiB",
                    "mktorrent 1.1",
                    "Private",
                ] {
                    assert!(text.contains(part), "{part}\n{text}");
                }
            }
            Tab::Peers => {
                assert!(
                    text.contains("10.0.0.2:51413") && text.contains("Transmission 4.0.5"),
                    "{text}"
                );
                assert!(text.contains("D U I E"), "flags: {text}");
            }
            Tab::Files => {
                assert!(
                    text.contains("debian/")
                        && text.contains("iso/")
                        && text.contains("firmware.tar.gz"),
                    "{text}"
                );
                assert!(text.contains("skip") && text.contains("high"), "{text}");
            }
            Tab::Trackers => {
                assert!(
                    text.contains("passkey=***") && text.contains("working"),
                    "{text}"
                );
                assert!(
                    text.contains("WebSocket trackers are not supported"),
                    "{text}"
                );
            }
            Tab::Pieces => assert!(
                text.contains("have 1200") && text.contains("downloading 400"),
                "{text}"
            ),
            Tab::Speed => {
                for part in [
                    "↓ torrent download",
                    "↑ torrent upload",
                    "↓ session download",
                    "↑ session upload",
                    "now",
                    "-1m",
                    "window 1 min",
                ] {
                    assert!(text.contains(part), "{part}\n{text}");
                }
                assert!(
                    text.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
                    "braille plot\n{text}"
                );
            }
            Tab::Log => {
                assert!(text.contains("piece 117 failed its hash check"), "{text}");
                assert!(
                    !text.contains("connection refused"),
                    "only this torrent's events: {text}"
                );
            }
        }
        app.handle_key(code(KeyCode::Tab));
    }
    assert_eq!(app.tab(), Tab::General, "tabs wrap");
    app.handle_key(key('h'));
    assert_eq!(app.tab(), Tab::Log);
    app.handle_key(key('l'));
    app.handle_key(code(KeyCode::BackTab));
    assert_eq!(app.tab(), Tab::Log);
    let commands = app.handle_key(code(KeyCode::Esc));
    assert!(
        matches!(commands[..], [Command::Focus(None)]),
        "{commands:?}"
    );
    assert_eq!(app.screen(), Screen::List);
}

#[test]
fn speed_window_cycles_and_graphs_draw_in_blocks() {
    let mut opts = UiOptions::default();
    opts.theme.graph = ratorrent::tui::theme::GraphStyle::Block;
    let mut app = full_app(opts);
    app.handle_key(code(KeyCode::Enter));
    for _ in 0..5 {
        app.handle_key(code(KeyCode::Tab));
    }
    assert_eq!(app.tab(), Tab::Speed);
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.chars().any(|c| "▁▂▃▄▅▆▇█".contains(c)), "{text}");
    app.handle_key(key('w'));
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("window 10 min") && text.contains("-10m"),
        "{text}"
    );
    app.handle_key(key('w'));
    assert!(screen(&render(&mut app, 80, 24)).contains("-1h"));
}

#[test]
fn session_log_at_both_sizes() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('e'));
    assert_eq!(app.screen(), Screen::Log);
    snap_both(&mut app, "session_log");
    let text = screen(&render(&mut app, 200, 50));
    assert!(
        text.contains("ERROR")
            && text.contains("no space left")
            && text.contains("banned 10.0.0.9"),
        "{text}"
    );
    app.handle_key(code(KeyCode::Esc));
    assert_eq!(app.screen(), Screen::List);
}

#[test]
fn help_lists_every_action_scrolls_and_never_quits() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('?'));
    assert!(app.help_open());
    snap_both(&mut app, "help");
    // every action with its keys is somewhere in the (scrolled) help
    let mut seen = String::new();
    for _ in 0..40 {
        seen.push_str(&screen(&render(&mut app, 200, 50)));
        app.handle_key(code(KeyCode::PageDown));
    }
    for spec in ACTIONS {
        assert!(seen.contains(spec.description), "help lacks {}", spec.name);
        assert!(
            seen.contains(&format!("[{}]", spec.name)),
            "help lacks {}",
            spec.name
        );
    }
    assert!(seen.contains("Peer flags") && seen.contains("snubbed"));
    // q and Esc close the help and never quit; list keys do nothing meanwhile
    assert!(app.handle_key(key('p')).is_empty());
    app.handle_key(key('q'));
    assert!(!app.help_open() && !app.should_quit());
    app.handle_key(key('?'));
    app.handle_key(code(KeyCode::Esc));
    assert!(!app.help_open() && !app.should_quit());
    // scrolling moves the first line
    app.handle_key(key('?'));
    let top = screen(&render(&mut app, 80, 24));
    app.handle_key(key('j'));
    app.handle_key(key('j'));
    let scrolled = screen(&render(&mut app, 80, 24));
    assert_ne!(top, scrolled);
    assert!(scrolled.contains("3-"), "position shown: {scrolled}");
    // at the end, the last line is whole at 80 columns
    for _ in 0..20 {
        app.handle_key(code(KeyCode::PageDown));
    }
    let end = screen(&render(&mut app, 80, 24));
    assert!(end.contains("e.g. pause = \"x\""), "last line cut: {end}");
}

#[test]
fn help_follows_the_configured_keymap() {
    let overrides: BTreeMap<String, Vec<String>> =
        [("pause".to_owned(), vec!["x".to_owned(), "F2".to_owned()])].into();
    let opts = UiOptions {
        keymap: Keymap::new(&overrides).unwrap(),
        ..UiOptions::default()
    };
    let mut app = full_app(opts);
    let cmds = app.handle_key(key('x'));
    assert!(
        matches!(cmds[..], [Command::TogglePause(TorrentId(1))]),
        "{cmds:?}"
    );
    assert!(app.handle_key(key('p')).is_empty());
    app.handle_key(key('?'));
    let text = screen(&render(&mut app, 200, 50));
    assert!(text.contains("x, F2") && text.contains("[pause]"), "{text}");
}

#[test]
fn dialogs_at_both_sizes() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('a'));
    snap_both(&mut app, "dialog_add");
    app.handle_key(code(KeyCode::Esc));
    assert!(app.dialog().is_none());
    app.handle_key(key('d'));
    snap_both(&mut app, "dialog_remove");
    app.handle_key(key('n'));
    app.handle_key(key('D'));
    snap_both(&mut app, "dialog_delete");
    let text = screen(&render(&mut app, 200, 50));
    assert!(
        text.contains("DELETE")
            && text.contains("debian-12.5.0-amd64.iso (700 MiB) in /srv/torrents/linux"),
        "{text}"
    );
    app.handle_key(key('q'));
    assert!(
        app.dialog().is_none() && !app.should_quit(),
        "q closes a dialog, never quits"
    );
    app.handle_key(key('L'));
    snap_both(&mut app, "dialog_limits");
    // a refused value's message is read whole at 80x24, wrapped, not cut to one line
    for c in "12 parsecs".chars() {
        app.handle_key(key(c));
    }
    app.handle_key(code(KeyCode::Enter));
    let small = screen(&render(&mut app, 80, 24));
    assert!(
        small.contains("cannot read") && small.contains("1 MiB/s), or 0 for"),
        "{small}"
    );
    app.handle_key(code(KeyCode::Esc));
    app.handle_key(key('R'));
    snap_both(&mut app, "dialog_goals");
    let small = screen(&render(&mut app, 80, 24));
    for part in [
        "Seeding goals",
        "Ratio",
        "Seeding time",
        "Inactive time",
        "default",
    ] {
        assert!(small.contains(part), "{part}\n{small}");
    }
    app.handle_key(code(KeyCode::Esc));
    app.handle_key(key('m'));
    snap_both(&mut app, "dialog_move");
    app.handle_key(code(KeyCode::Esc));
    app.handle_key(key('q'));
    snap_both(&mut app, "dialog_quit");
    assert!(!app.should_quit());
    app.handle_key(key('y'));
    assert!(app.should_quit());
}

#[test]
fn quit_asks_only_while_torrents_are_active() {
    let mut app = App::new(snapshot(1, vec![paused_with_message()]));
    app.handle_key(key('q'));
    assert!(app.should_quit(), "nothing active: quits at once");
    let mut app = full_app(UiOptions::default());
    app.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(matches!(app.dialog(), Some(Dialog::Confirm(_))));
    app.handle_key(code(KeyCode::Esc));
    assert!(app.dialog().is_none() && !app.should_quit());
    app.handle_key(key('q'));
    app.handle_key(code(KeyCode::Enter));
    assert!(app.should_quit());
    // `confirm_quit = false`: active torrents or not, q quits at once
    let mut app = full_app(UiOptions {
        confirm_quit: false,
        ..UiOptions::default()
    });
    app.handle_key(key('q'));
    assert!(app.dialog().is_none() && app.should_quit());
}

#[test]
fn attached_to_a_daemon_q_leaves_it_running_and_shift_q_asks_before_stopping_it() {
    let attached = || UiOptions {
        attached: Some(4321),
        ..UiOptions::default()
    };
    // torrents are active, yet nothing stops: no question
    let mut app = full_app(attached());
    app.handle_key(key('q'));
    assert!(app.dialog().is_none() && app.should_quit() && !app.stops_engine());
    // the daemon stops only after a yes, whatever confirm_quit says
    let mut app = full_app(UiOptions {
        confirm_quit: false,
        ..attached()
    });
    app.handle_key(key('Q'));
    snap_both(&mut app, "dialog_quit_daemon");
    let small = screen(&render(&mut app, 80, 24));
    assert!(
        small.contains("Stop the daemon?")
            && small.contains("pid 4321")
            && small.contains("y: stop the daemon"),
        "{small}"
    );
    app.handle_key(code(KeyCode::Enter));
    assert!(
        app.dialog().is_none() && !app.should_quit(),
        "Enter keeps it"
    );
    app.handle_key(key('Q'));
    app.handle_key(key('y'));
    assert!(app.should_quit() && app.stops_engine());
    // without a daemon, Q is quit (the engine is this process's)
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('Q'));
    assert!(matches!(app.dialog(), Some(Dialog::Confirm(_))));
    app.handle_key(key('y'));
    assert!(app.should_quit() && app.stops_engine());
}

#[test]
fn add_dialog_validates_sends_and_selects() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new.torrent");
    std::fs::write(&file, b"d4:infod4:name1:xee").unwrap();
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('a'));
    // empty: refused with a message
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("type the path of a .torrent file"), "{text}");
    type_text(&mut app, "/nonexistent/x.torrent");
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    assert!(screen(&render(&mut app, 80, 24)).contains("no such file"));
    // q types into the field instead of quitting
    assert!(!app.should_quit());
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    // Tab completes the path
    let prefix = format!("{}/ne", dir.path().display());
    type_text(&mut app, &prefix);
    app.handle_key(code(KeyCode::Tab));
    let Some(Dialog::Form(form)) = app.dialog() else {
        panic!("form")
    };
    assert_eq!(form.fields[0].value(), file.display().to_string());
    // to the "start paused" checkbox and on
    app.handle_key(code(KeyCode::Down));
    app.handle_key(code(KeyCode::Down));
    app.handle_key(key(' '));
    let cmds = app.handle_key(code(KeyCode::Enter));
    match &cmds[..] {
        [Command::Add(req, None)] => {
            assert_eq!(req.source, AddSource::File(file.clone()));
            assert!(req.paused && req.download_dir.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert!(app.dialog().is_none());
    // "already added" selects the existing torrent
    app.add_result(Err(AddError::AlreadyAdded {
        id: TorrentId(2),
        name: "archlinux".to_owned(),
        info_hash: "bb".repeat(20),
        merged: None,
    }));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    assert!(app.notice().unwrap().contains("already added"));
    // a new torrent is selected once it shows up
    app.add_result(Ok(TorrentId(9)));
    let mut rows = four();
    rows.push(TorrentRow {
        id: TorrentId(9),
        name: "new".into(),
        state: TorrentState::Paused,
        ..TorrentRow::default()
    });
    app.set_snapshot(snapshot(500, rows));
    assert_eq!(app.selected(), Some(TorrentId(9)));
    // a malformed magnet link is reported in the dialog, which stays open
    app.handle_key(key('a'));
    type_text(&mut app, "magnet:?xt=urn:btih:aaaa");
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("malformed"), "{text}");
    assert!(app.dialog().is_some());
    // a typed magnet link is added as one
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    let link = format!("magnet:?xt=urn:btih:{}&dn=debian", "c".repeat(40));
    type_text(&mut app, &link);
    match &app.handle_key(code(KeyCode::Enter))[..] {
        [Command::Add(req, None)] => {
            assert_eq!(req.source, AddSource::Magnet(link.clone()));
            assert!(!req.paused && req.download_dir.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert!(app.dialog().is_none());
    // a pasted one too: the newline a paste carries neither submits nor ends up in the field
    app.handle_key(key('a'));
    assert!(app.handle_paste(&format!("{link}\n")).is_empty());
    assert!(app.dialog().is_some());
    match &app.handle_key(code(KeyCode::Enter))[..] {
        [Command::Add(req, None)] => assert_eq!(req.source, AddSource::Magnet(link.clone())),
        other => panic!("{other:?}"),
    }
}

#[test]
fn limits_dialog_parses_human_units() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('L'));
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, "fast");
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("cannot read \"fast\""), "{text}");
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, "2.5 MiB/s");
    app.handle_key(code(KeyCode::Down));
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, "500K");
    app.handle_key(code(KeyCode::Down));
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, "1M");
    let cmds = app.handle_key(code(KeyCode::Enter));
    assert!(
        matches!(
            cmds[..],
            [
                Command::SetLimits {
                    download: 2621440,
                    upload: 512000
                },
                Command::SetTorrentLimits {
                    id: TorrentId(1),
                    download: 1048576,
                    upload: 0
                },
            ]
        ),
        "{cmds:?}"
    );
}

#[test]
fn remove_confirms_and_bulk_actions_use_marks() {
    let mut app = full_app(UiOptions::default());
    // Space marks and moves down
    app.handle_key(key(' '));
    app.handle_key(key(' '));
    assert_eq!(app.marks().len(), 2);
    let cmds = app.handle_key(key('p'));
    assert!(
        matches!(
            cmds[..],
            [
                Command::TogglePause(TorrentId(1)),
                Command::TogglePause(TorrentId(2))
            ]
        ),
        "{cmds:?}"
    );
    let cmds = app.handle_key(key('c'));
    assert_eq!(cmds.len(), 2);
    assert!(app.handle_key(key('d')).is_empty(), "asks first");
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("Remove 2 torrents") && text.contains("data stays"),
        "{text}"
    );
    let cmds = app.handle_key(key('y'));
    assert!(
        matches!(
            cmds[..],
            [
                Command::Remove {
                    id: TorrentId(1),
                    delete_data: false
                },
                Command::Remove {
                    id: TorrentId(2),
                    delete_data: false
                },
            ]
        ),
        "{cmds:?}"
    );
    assert!(app.marks().is_empty());
    // D deletes data, after naming it; Enter there means no, only y deletes
    app.handle_key(key('D'));
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("n, Enter: keep") && text.contains("Enter keep  Esc cancel"),
        "the footer says what Enter does here\n{text}"
    );
    assert!(!text.contains("Enter apply"), "{text}");
    assert!(
        app.handle_key(code(KeyCode::Enter)).is_empty(),
        "Enter keeps"
    );
    assert!(app.dialog().is_none());
    app.handle_key(key('D'));
    let cmds = app.handle_key(key('y'));
    assert!(
        matches!(
            cmds[..],
            [Command::Remove {
                delete_data: true,
                ..
            }]
        ),
        "{cmds:?}"
    );
    assert!(matches!(app.handle_key(key('P'))[..], [Command::PauseAll]));
    assert!(matches!(app.handle_key(key('U'))[..], [Command::ResumeAll]));
    assert!(matches!(
        app.handle_key(key('r'))[..],
        [Command::Reannounce(_)]
    ));
}

#[test]
fn sort_filter_search_and_paging() {
    let mut rows: Vec<TorrentRow> = (0..60)
        .map(|i| TorrentRow {
            id: TorrentId(100 + i),
            name: format!("torrent-{i:02}"),
            size: (60 - i) * MIB,
            state: if i % 3 == 0 {
                TorrentState::Seeding
            } else {
                TorrentState::Paused
            },
            ..TorrentRow::default()
        })
        .collect();
    rows.push(TorrentRow {
        id: TorrentId(7),
        name: "Ünïcode Ümlaut".into(),
        state: TorrentState::Paused,
        ..TorrentRow::default()
    });
    let mut app = App::new(snapshot(1, rows));
    // paging: 24 lines = top bar + header + 20 rows + message + status
    render(&mut app, 80, 24);
    app.handle_key(code(KeyCode::PageDown));
    assert_eq!(app.selected(), Some(TorrentId(120)));
    app.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert_eq!(app.selected(), Some(TorrentId(130)));
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    app.handle_key(code(KeyCode::PageUp));
    assert_eq!(app.selected(), Some(TorrentId(100)));
    app.handle_key(code(KeyCode::End));
    assert_eq!(app.selected(), Some(TorrentId(7)));
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("Ünïcode") && !text.contains("torrent-00"),
        "scrolled: {text}"
    );
    app.handle_key(code(KeyCode::Home));
    // sort by name, then reverse
    app.handle_key(key('s'));
    app.handle_key(key('S'));
    assert!(app.view().reverse);
    app.handle_key(code(KeyCode::Home));
    assert_eq!(
        app.selected(),
        Some(TorrentId(7)),
        "Ü sorts last, first when reversed"
    );
    // filter: seeding only
    app.handle_key(key('f'));
    app.handle_key(key('f'));
    assert_eq!(app.visible_len(), 20);
    assert!(app.visible_rows().all(|r| r.state == TorrentState::Seeding));
    app.handle_key(key('F'));
    app.handle_key(key('F'));
    assert_eq!(app.visible_len(), 61);
    // incremental search, case-insensitive and Unicode-aware; Esc clears
    app.handle_key(key('/'));
    type_text(&mut app, "üml");
    assert_eq!(app.visible_len(), 1);
    assert_eq!(app.selected(), Some(TorrentId(7)));
    let terminal = render(&mut app, 80, 24);
    assert!(line(terminal.backend().buffer(), 22).contains("/üml"));
    app.handle_key(code(KeyCode::Backspace));
    app.handle_key(code(KeyCode::Backspace));
    app.handle_key(code(KeyCode::Backspace));
    type_text(&mut app, "TORRENT-5");
    assert_eq!(app.visible_len(), 10);
    app.handle_key(code(KeyCode::Enter));
    assert!(!app.searching());
    assert_eq!(app.visible_len(), 10, "Enter keeps the search");
    insta::assert_snapshot!("list_searched_80x24", screen(&render(&mut app, 80, 24)));
    app.handle_key(code(KeyCode::Esc));
    assert_eq!(app.visible_len(), 61, "Esc clears it");
}

#[test]
fn file_priorities_for_a_file_a_folder_and_marks() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(code(KeyCode::Enter));
    app.handle_key(code(KeyCode::Tab));
    app.handle_key(code(KeyCode::Tab));
    assert_eq!(app.tab(), Tab::Files);
    // rows, sorted by name (torrent order is README 0, netinst 1, SHA256SUMS 2, firmware 3):
    // debian/, extras/, firmware, iso/, netinst.iso, SHA256SUMS, README
    let cmds = app.handle_key(key('-'));
    assert!(
        matches!(&cmds[..], [Command::SetFilePriority { id: TorrentId(1), files, priority: FilePriority::Low }] if files == &vec![3, 1, 2, 0]),
        "folder: every file under it: {cmds:?}"
    );
    app.handle_key(key('j'));
    app.handle_key(key('j'));
    app.handle_key(key('j'));
    app.handle_key(code(KeyCode::Enter)); // fold iso/
    assert_eq!(app.files().visible_len(), 5);
    app.handle_key(key('k'));
    // rows now: debian/, extras/, firmware, iso/ (folded), README; all were just set to
    // low (shown until the engine agrees), so + makes firmware (file 3, row 2) normal
    let cmds = app.handle_key(key('+'));
    assert!(
        matches!(&cmds[..], [Command::SetFilePriority { files, priority: FilePriority::Normal, .. }] if files == &vec![3]),
        "{cmds:?}"
    );
    app.handle_key(key(' ')); // marks firmware, moves to iso/
    app.handle_key(key('j'));
    app.handle_key(key(' ')); // marks README
    let cmds = app.handle_key(key('-'));
    assert!(
        matches!(&cmds[..], [Command::SetFilePriority { files, priority: FilePriority::Skip, .. }] if files == &vec![0, 3]),
        "marks: {cmds:?}"
    );
}

#[test]
fn error_torrent_says_what_to_do_and_resumes_with_the_pause_key() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(code(KeyCode::End));
    assert_eq!(app.selected(), Some(TorrentId(4)));
    let terminal = render(&mut app, 200, 50);
    let msg = line(terminal.backend().buffer(), 48);
    assert!(
        msg.contains("no space left")
            && msg.contains("free some space")
            && msg.contains("p resumes"),
        "{msg}"
    );
    assert!(matches!(
        app.handle_key(key('p'))[..],
        [Command::TogglePause(TorrentId(4))]
    ));
    app.handle_key(code(KeyCode::Enter));
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("What to do"), "{text}");
}

#[test]
fn empty_list_shows_how_to_add() {
    let mut app = App::new(snapshot(1, Vec::new()));
    assert_eq!(app.selected(), None);
    snap_both(&mut app, "empty");
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("No torrents yet.") && text.contains("Press a to add one"),
        "{text}"
    );
}

#[test]
fn hostile_names_cannot_inject_escapes_and_any_size_renders() {
    let mut row = downloading();
    row.name = "evil\x1b]0;pwned\x07\nname".to_owned();
    row.message = Some("bad\r\x1b[2Jtracker".to_owned());
    let mut d = detail();
    d.files[0].path = "x/\x1b[31m\u{202e}evil".to_owned();
    d.peers[0].client = "\x1b[5mblink".to_owned();
    d.trackers[0].message = Some("\x07bell".to_owned());
    let mut app = App::new(snapshot_with(1, vec![row], Some(d)));
    app.push_events([EngineEvent {
        seq: 1,
        at: SystemTime::now(),
        torrent: Some(TorrentId(1)),
        level: EventLevel::Warn,
        kind: EventKind::TrackerError,
        message: "\x1b[2J".to_owned(),
    }]);
    app.handle_key(code(KeyCode::Enter));
    for _ in 0..7 {
        for (w, h) in [(80, 24), (200, 50), (20, 5), (1, 1), (3, 40), (100, 2)] {
            let text = screen(&render(&mut app, w, h));
            assert!(!text.contains('\x1b') && !text.contains('\x07') && !text.contains('\r'));
        }
        app.handle_key(code(KeyCode::Tab));
    }
    app.handle_key(code(KeyCode::Esc));
    for k in ['?', 'a', 'L', 'D'] {
        app.handle_key(key(k));
        for (w, h) in [(20, 5), (1, 1), (3, 40), (100, 2), (80, 24)] {
            render(&mut app, w, h);
        }
        app.handle_key(code(KeyCode::Esc));
    }
}

#[test]
fn selection_follows_the_torrent_and_unchanged_snapshots_skip_redraws() {
    let mut app = App::new(snapshot(1, four()));
    app.handle_key(key('j'));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    let mut reordered = four();
    reordered.rotate_left(2);
    assert!(app.set_snapshot(snapshot(2, reordered)));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    // The selected torrent is removed: its successor in place is selected.
    let gone: Vec<TorrentRow> = four()
        .into_iter()
        .filter(|r| r.id != TorrentId(2))
        .collect();
    app.set_snapshot(snapshot(3, gone.clone()));
    assert_eq!(
        app.selected(),
        Some(TorrentId(4)),
        "the row that took its place"
    );
    assert!(
        !app.set_snapshot(snapshot(3, gone)),
        "same content: nothing to redraw"
    );
    app.set_snapshot(snapshot(4, Vec::new()));
    assert_eq!(app.selected(), None);
    assert!(app.handle_key(key('p')).is_empty());
    // the detail view closes when its torrent goes away
    let mut app = full_app(UiOptions::default());
    app.handle_key(code(KeyCode::Enter));
    let cmds = {
        app.set_snapshot(snapshot(900, vec![seeding()]));
        app.take_commands()
    };
    assert_eq!(app.screen(), Screen::List);
    assert!(matches!(cmds[..], [Command::Focus(None)]), "{cmds:?}");
}

#[test]
fn keymap_contexts_cover_every_screen() {
    let app = full_app(UiOptions::default());
    assert_eq!(app.context(), Context::List);
    assert!(Keymap::default().conflicts().is_empty());
}

#[test]
fn readme_lists_every_action_with_its_default_keys() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let keys = &readme[readme.find("## Keys").expect("Keys section")..];
    for spec in ACTIONS {
        assert!(
            keys.contains(&format!("`{}`", spec.name)),
            "README lacks {}",
            spec.name
        );
        for key in spec.keys {
            assert!(
                keys.contains(&format!("`{key}`")),
                "README lacks key {key} of {}",
                spec.name
            );
        }
    }
}

#[test]
fn esc_then_a_key_arriving_as_one_alt_chord_closes_the_dialog_first() {
    // Over SSH/tmux, Esc followed quickly by `d` is read as Alt-d.
    let alt = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('a'));
    type_text(&mut app, "/tmp/x");
    let cmds = app.handle_key(alt('d'));
    assert!(cmds.is_empty());
    assert!(
        matches!(app.dialog(), Some(Dialog::Confirm(_))),
        "the add dialog closed and d opened the remove question"
    );
    app.handle_key(alt('q'));
    assert!(
        matches!(app.dialog(), Some(Dialog::Confirm(_))),
        "Esc closed it, q asks to quit"
    );
    app.handle_key(key('n'));
    // in a text field an Alt letter never types
    app.handle_key(key('L'));
    let Some(Dialog::Form(form)) = app.dialog() else {
        panic!("limits")
    };
    let before = form.fields[0].value().to_owned();
    app.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::ALT));
    assert!(
        app.dialog().is_none(),
        "Alt-x: Esc (close), then x (unbound)"
    );
    assert_eq!(before, "4.00 MiB/s");
}

/// The sizes a first-day user tried (issue 15).
const DAY_SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// A magnet link still fetching its metadata from two peers: no size, no pieces.
fn fetching_magnet() -> TorrentRow {
    TorrentRow {
        id: TorrentId(5),
        rev: 1,
        name: "ubuntu-magnet".to_owned(),
        info_hash: "ee".repeat(20),
        state: TorrentState::FetchingMetadata,
        peers: 2,
        ..TorrentRow::default()
    }
}

#[test]
fn a_magnet_fetching_metadata_never_looks_finished() {
    let paused_magnet = TorrentRow {
        id: TorrentId(6),
        name: "paused-magnet".to_owned(),
        state: TorrentState::Paused,
        peers: 0,
        ..fetching_magnet()
    };
    let rows = vec![downloading(), seeding(), paused_magnet, fetching_magnet()];
    let mut app = App::new(snapshot(1, rows));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        for name in ["ubuntu-magnet", "paused-magnet"] {
            let row = text
                .lines()
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("no {name} row at {w}x{h}:\n{text}"));
            assert!(!row.contains("100%"), "{w}x{h}: {row}");
            assert!(!row.contains("0 B"), "{w}x{h}: size unknown: {row}");
            assert!(!row.contains('━'), "{w}x{h}: empty bar: {row}");
            assert!(row.contains('–'), "{w}x{h}: {row}");
        }
        let fetching = text.lines().find(|l| l.contains("ubuntu-magnet")).unwrap();
        assert!(fetching.contains("Metadata"), "{w}x{h}: {fetching}");
    }
    // General says the state in full, with the peers asked, and no size
    app.handle_key(key('G'));
    app.handle_key(code(KeyCode::Enter));
    assert_eq!(app.selected(), Some(TorrentId(5)));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(text.contains("Fetching metadata from 2 peers"), "{text}");
        assert!(
            !text.contains("100%") && !text.contains("0 B of 0 B"),
            "{text}"
        );
        assert!(text.contains("known once the metadata arrives"), "{text}");
    }
    app.handle_key(code(KeyCode::Esc));
    // sorted by progress, both magnets stay apart from the seed, either way round
    while app.view().sort != ratorrent::tui::list::SortColumn::Progress {
        app.handle_key(key('s'));
    }
    for _ in 0..2 {
        let order: Vec<u64> = app.visible_rows().map(|r| r.id.0).collect();
        let seed = order.iter().position(|id| *id == 2).unwrap();
        let magnets: Vec<usize> = [5, 6]
            .iter()
            .map(|m| order.iter().position(|id| id == m).unwrap())
            .collect();
        assert!(
            magnets.iter().all(|m| m.abs_diff(seed) >= 2),
            "the magnets sort among the seeds: {order:?}"
        );
        app.handle_key(key('S'));
    }
}

/// A seeding torrent without a tracker (DHT, PEX and LSD only).
fn trackerless_seed() -> TorrentRow {
    TorrentRow {
        has_trackers: false,
        swarm_seeds: None,
        swarm_leechers: None,
        ..seeding()
    }
}

#[test]
fn quit_and_reannounce_mention_trackers_only_when_there_is_one() {
    let mut app = App::new(snapshot(1, vec![trackerless_seed()]));
    app.handle_key(key('r'));
    assert!(
        app.take_commands().is_empty(),
        "no tracker: nothing to send"
    );
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(
            text.contains("no tracker to re-announce to; peers come from PEX"),
            "DHT and LSD off in this snapshot: only PEX\n{w}x{h}:\n{text}"
        );
    }
    let mut on = snapshot(2, vec![trackerless_seed()]);
    Arc::make_mut(&mut on).global.dht_nodes = Some(40);
    Arc::make_mut(&mut on).global.lsd = true;
    app.set_snapshot(on);
    app.handle_key(key('r'));
    assert!(
        app.notice()
            .is_some_and(|n| n
                .starts_with("no tracker to re-announce to; peers come from the DHT, LSD, PEX")),
        "{:?}",
        app.notice()
    );
    app.handle_key(key('q'));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(text.contains("Quit ratorrent?"), "{text}");
        assert!(!text.contains("tracker"), "{w}x{h}:\n{text}");
    }
    // with a tracker the dialog says they are told
    let mut app = App::new(snapshot(1, vec![seeding()]));
    app.handle_key(key('q'));
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("trackers are told"), "{text}");
}

#[test]
fn help_says_q_quits_at_once_when_confirm_quit_is_off() {
    let opts = UiOptions {
        confirm_quit: false,
        ..UiOptions::default()
    };
    let mut app = App::with_options(snapshot(1, four()), opts);
    app.handle_key(key('?'));
    let quit_line = |text: &str| {
        text.lines()
            .find(|l| l.contains("q, Ctrl-c"))
            .unwrap_or_default()
            .to_owned()
    };
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        let quit = quit_line(&text);
        assert!(quit.contains("Quit at once"), "{w}x{h}:\n{text}");
        assert!(!quit.contains("asks first"), "{w}x{h}:\n{text}");
    }
    let mut app = App::new(snapshot(1, four()));
    app.handle_key(key('?'));
    let text = screen(&render(&mut app, 120, 40));
    assert!(quit_line(&text).contains("asks first"), "{text}");
}

#[test]
fn failed_adds_say_how_many_and_where_to_read_why_at_80_columns() {
    let mut app = App::new(snapshot(1, four()));
    let reasons: Vec<String> = (1..=5)
        .map(|i| format!("/home/user/Downloads/broken-{i}.torrent: not a torrent file (bencode)"))
        .collect();
    app.adds_failed(&reasons);
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(
            text.contains("5 torrents not added (why: e, session log)"),
            "{w}x{h}:\n{text}"
        );
    }
}

#[test]
fn the_sort_marker_means_one_thing_for_every_column() {
    let mut app = App::new(snapshot(1, four()));
    let marker = |app: &mut App| {
        let text = screen(&render(app, 120, 40));
        let line = text
            .lines()
            .find(|l| l.contains("sort: "))
            .unwrap()
            .to_owned();
        line[line.find("sort: ").unwrap()..].to_owned()
    };
    assert!(
        marker(&mut app).starts_with("sort: added ▲"),
        "oldest first"
    );
    app.handle_key(key('s'));
    assert!(marker(&mut app).starts_with("sort: name ▲"), "A to Z");
    app.handle_key(key('s'));
    assert!(
        marker(&mut app).starts_with("sort: size ▼"),
        "largest first"
    );
    let sizes: Vec<u64> = app.visible_rows().map(|r| r.size).collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    app.handle_key(key('S'));
    assert!(
        marker(&mut app).starts_with("sort: size ▲"),
        "smallest first"
    );
    let sizes: Vec<u64> = app.visible_rows().map(|r| r.size).collect();
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
}

#[test]
fn a_seeding_user_keeps_up_rate_ratio_and_peers_at_80_and_120_columns() {
    let mut app = App::new(snapshot(1, four()));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        let header = text.lines().find(|l| l.contains("Name")).unwrap();
        for column in ["↑ Rate", "↓ Rate", "Ratio", "Peers", "State"] {
            assert!(header.contains(column), "{w}x{h}: no {column} in {header}");
        }
        // the bar gives way first, the percentage stays
        assert!(
            header.contains("Progress") || header.contains("Done"),
            "{header}"
        );
        // Peers counts every connected peer, seeds included, and the whole swarm
        let row = text.lines().find(|l| l.contains("debian-12")).unwrap();
        assert!(row.contains("12 (150)"), "{w}x{h}: {row}");
        let seed = text.lines().find(|l| l.contains("archlinux")).unwrap();
        assert!(seed.contains("512 KiB/s"), "{w}x{h}: {seed}");
    }
}

#[test]
fn the_config_picks_the_list_columns() {
    let names: Vec<String> = ["progress", "up", "ratio", "peers"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let opts = UiOptions {
        columns: ratorrent::tui::list::parse_columns(&names).unwrap(),
        ..UiOptions::default()
    };
    let mut app = App::with_options(snapshot(1, four()), opts);
    let text = screen(&render(&mut app, 120, 40));
    let header = text.lines().find(|l| l.contains("Name")).unwrap();
    for shown in ["Progress", "↑ Rate", "Ratio", "Peers"] {
        assert!(header.contains(shown), "{header}");
    }
    for hidden in ["Size", "State", "↓ Rate", "ETA", "Seeds", "Added"] {
        assert!(!header.contains(hidden), "{header}");
    }
}

/// Issue 15: the failed adds of the command line never replace the watch folder's notice
/// in the message line: it says one more is waiting, and the next key shows it, at 80×24.
#[test]
fn failed_adds_queue_behind_the_watch_folder_notice() {
    let mut app = full_app(options(false, false));
    app.set_notice(Some(
        "watch folder /srv/watch cannot be used: permission denied".to_owned(),
    ));
    app.adds_failed(&["/tmp/a.torrent: not a valid torrent".to_owned()]);
    let first = screen(&render(&mut app, 80, 24));
    assert!(
        first.contains(" [+1 more] watch folder /srv/watch cannot be used: permission denied"),
        "{first}"
    );
    assert!(!first.contains("not added"), "{first}");
    app.handle_key(code(KeyCode::Down));
    let next = screen(&render(&mut app, 80, 24));
    assert!(
        next.contains(" 1 torrent not added (why: e, session log): /tmp/a.torrent"),
        "{next}"
    );
    assert!(
        !next.contains("[+1 more]") && !next.contains("/srv/watch"),
        "{next}"
    );
}

#[test]
fn speed_graphs_run_on_the_wall_clock_and_idle_seconds_are_zero() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(code(KeyCode::Enter));
    while app.tab() != Tab::Speed {
        app.handle_key(code(KeyCode::Tab));
    }
    assert!(app.shows_time(), "the Speed tab redraws once a second");
    // an upload at 228 KiB/s, the last snapshot before the engine went idle
    let mut rows = four();
    for row in &mut rows {
        row.down_rate = 0;
        row.up_rate = 0;
        row.rev += 100;
    }
    rows[0].up_rate = 228 * 1024;
    app.set_snapshot_at(snapshot_with(100, rows, Some(detail())), 71);
    let text = screen(&render(&mut app, 120, 40));
    assert!(text.contains("now 228 KiB/s"), "{text}");
    // a minute later with no snapshot: the graphs moved on and say 0 B/s
    app.advance_clock(131);
    let text = screen(&render(&mut app, 120, 40));
    let nows: Vec<&str> = text
        .match_indices("now ")
        .map(|(i, _)| &text[i..])
        .filter(|rest| rest.as_bytes()[4].is_ascii_digit())
        .collect();
    assert_eq!(nows.len(), 4, "{text}");
    for now in nows {
        assert!(now.starts_with("now 0 B/s"), "{now}\n{text}");
    }
    app.handle_key(code(KeyCode::Esc));
    assert!(!app.shows_time(), "the list does not tick: idle stays idle");
}

#[test]
fn a_disk_guard_pause_reads_apart_from_a_manual_one() {
    let mut guarded = paused_with_message();
    guarded.paused_by = Some(ratorrent::api::PauseCause::DiskGuard(
        "only 1.00 MiB free on the volume of /d".to_owned(),
    ));
    guarded.message = Some("paused: only 1.00 MiB free on the volume of /d".to_owned());
    let mut app = App::new(snapshot(1, vec![seeding(), guarded]));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(text.contains("Disk full"), "{w}x{h}:\n{text}");
    }
    app.handle_key(code(KeyCode::Down));
    let commands = app.handle_key(key('p'));
    assert!(
        matches!(commands[..], [Command::TogglePause(TorrentId(3))]),
        "{commands:?}"
    );
    let notice = app.notice().unwrap_or_default();
    assert!(
        notice.starts_with("resumed ")
            && notice.contains("although only 1.00 MiB free on the volume of /d"),
        "{notice}"
    );
}

#[test]
fn the_session_log_says_an_events_label_once() {
    let mut app = App::new(snapshot(1, four()));
    app.push_events([EngineEvent {
        seq: 1,
        at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_590_000),
        torrent: None,
        level: EventLevel::Error,
        kind: EventKind::AddRefused,
        message: "not added: /tmp/bad.torrent: not bencode".to_owned(),
    }]);
    app.handle_key(key('e'));
    let text = screen(&render(&mut app, 120, 40));
    let line = text
        .lines()
        .find(|l| l.contains("bad.torrent"))
        .unwrap_or_default();
    assert_eq!(line.matches("not added").count(), 1, "{line}");
    assert!(
        line.contains("not added /tmp/bad.torrent: not bencode"),
        "{line}"
    );
}

#[test]
fn the_status_bar_keeps_the_listen_port_at_80_columns() {
    let mut app = App::new(snapshot(1, four()));
    let terminal = render(&mut app, 80, 24);
    let bar = line(terminal.backend().buffer(), 23);
    assert!(bar.contains("port 6881"), "{bar}");
    assert!(bar.contains("q quit"), "{bar}");
}

/// `s` cycles through the columns the list shows: at 80 columns the ones dropped for room
/// (Added, Seeds, Size, ETA) are not sort keys, so the header always marks the sort; at
/// 200 columns every column is.
#[test]
fn sort_key_cycles_only_through_the_columns_shown() {
    for (width, expected) in [(80u16, None), (200, Some(11usize))] {
        let mut app = App::new(snapshot_with(1, four(), None));
        render(&mut app, width, 24);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..11 {
            app.handle_key(key('s'));
            let sort = app.view().sort;
            seen.insert(sort);
            let header = line(render(&mut app, width, 24).backend().buffer(), 0);
            if sort != ratorrent::tui::list::SortColumn::Added {
                assert!(
                    header.contains('▲') || header.contains('▼'),
                    "{width} columns, sorted by {sort:?}, no marker: {header}"
                );
            }
        }
        match expected {
            Some(n) => assert_eq!(seen.len(), n, "{width}: every column"),
            None => assert!(seen.len() < 11, "{width}: {seen:?}"),
        }
    }
}

#[test]
fn a_goal_stop_reads_done_and_general_says_which_goal_was_reached() {
    let mut stopped = seeding();
    stopped.state = TorrentState::Paused;
    stopped.up_rate = 0;
    stopped.paused_by = Some(ratorrent::api::PauseCause::Goal(
        "ratio 2.00 reached".to_owned(),
    ));
    stopped.message =
        Some("stopped: ratio 2.00 reached (seeding goal; raise it to seed on)".to_owned());
    // the row carries its own goals (the goals dialog starts from them)
    stopped.share_limits = ratorrent::api::ShareLimits {
        ratio: 2.0,
        ..ratorrent::api::ShareLimits::default()
    };
    let d = TorrentDetail {
        id: TorrentId(2),
        goals: ratorrent::api::GoalView {
            limits: ratorrent::api::ShareLimits {
                ratio: 2.0,
                ..ratorrent::api::ShareLimits::default()
            },
            ratio: Some(2.0),
            seeding_minutes: Some(7 * 24 * 60),
            inactive_minutes: None,
            seeding_secs: 3 * 86_400 + 4 * 3_600,
        },
        // the fixture's files are another torrent's
        files: Vec::new(),
        ..detail()
    };
    let mut app = App::new(snapshot_with(1, vec![stopped], Some(d)));
    for (w, h) in DAY_SIZES {
        let text = screen(&render(&mut app, w, h));
        assert!(text.contains("Done"), "{w}x{h}:\n{text}");
    }
    // resuming by hand: the engine keeps it stopped; the line says what to do
    let commands = app.handle_key(key('p'));
    assert!(
        matches!(commands[..], [Command::TogglePause(TorrentId(2))]),
        "{commands:?}"
    );
    let notice = app.notice().unwrap_or_default();
    assert!(
        notice.contains("ratio goal reached") && notice.contains("raise the goal to seed on (R)"),
        "{notice}"
    );
    // the goals dialog opens with the torrent's own goals
    app.handle_key(key('R'));
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("> 2.00"), "{text}");
    app.handle_key(code(KeyCode::Esc));
    app.handle_key(code(KeyCode::Enter));
    snap_both(&mut app, "detail_general_goal");
    let text = screen(&render(&mut app, 80, 24));
    for part in [
        "Done (ratio 2.00 reached)",
        "ratio 2.00, seeding 7d 0h*, inactive none* (*default)",
        "Seeded       3d 4h",
    ] {
        assert!(text.contains(part), "{part}\n{text}");
    }
}

/// The status bar counts what the IP filter blocked only while a filter is loaded, and the
/// count survives at 80 columns (free space and the torrent count go first).
#[test]
fn status_bar_shows_the_blocked_count_only_with_an_ip_filter() {
    let mut app = full_app(options(false, false));
    let terminal = render(&mut app, 120, 30);
    let status = line(terminal.backend().buffer(), 29);
    assert!(!status.contains("blocked"), "no filter: no count\n{status}");
    let mut with = (*app.snapshot().clone()).clone();
    with.seq += 1;
    with.global.ip_filter_ranges = Some(250_000);
    with.global.blocked = 12;
    app.set_snapshot(Arc::new(with));
    let terminal = render(&mut app, 120, 30);
    let status = line(terminal.backend().buffer(), 29);
    assert!(status.contains("  blocked 12  "), "{status}");
    // at 80 columns with a download limit shown, it goes (whole) before the port and rates
    let terminal = render(&mut app, 80, 24);
    let status = line(terminal.backend().buffer(), 23);
    assert!(
        !status.contains("blocked") && status.contains("port 6881"),
        "{status}"
    );
    // without the limit it fits, before free space and the torrent count
    let mut unlimited = (*app.snapshot().clone()).clone();
    unlimited.seq += 1;
    unlimited.global.down_limit = 0;
    app.set_snapshot(Arc::new(unlimited));
    let terminal = render(&mut app, 80, 24);
    let status = line(terminal.backend().buffer(), 23);
    assert!(status.contains("  blocked 12  "), "{status}");
    assert!(
        status.contains("port 6881") && status.contains("? help"),
        "{status}"
    );
    insta::assert_snapshot!("list_ip_filter_80x24", screen(&terminal));
}

#[test]
fn alt_speed_key_sends_the_switch_and_the_status_bar_shows_the_turtle() {
    let mut app = full_app(options(false, false));
    let sent: Vec<String> = app
        .handle_key(key('t'))
        .iter()
        .map(|c| format!("{c:?}"))
        .collect();
    assert_eq!(sent, ["SetAltSpeed(true)"]);
    // the engine's answer: the switch on and the alternative limits in effect
    let mut on = (*snapshot_with(100, four(), Some(detail()))).clone();
    on.global.alt_speed = true;
    on.global.down_limit = 200 * 1024;
    on.global.up_limit = 50 * 1024;
    app.set_snapshot(Arc::new(on.clone()));
    let terminal = render(&mut app, 80, 24);
    let bar = line(terminal.backend().buffer(), 23);
    insta::assert_snapshot!("status_bar_alt_speed_80x24", bar);
    // the turtle (two cells wide) leads, then both rates with the limits in effect: short
    // at 80 columns, so that the upload is not dropped
    assert!(bar.starts_with(" 🐢") && bar.contains("alt  ↓"), "{bar}");
    assert!(
        bar.contains("≤200 KiB/s") && bar.contains("  ↑ ") && bar.contains("≤50.0 KiB/s"),
        "{bar}"
    );
    assert!(bar.ends_with("q quit"), "{bar}");
    // wide enough: the long form
    let wide = line(render(&mut app, 120, 24).backend().buffer(), 23);
    assert!(
        wide.contains("(max 200 KiB/s)") && wide.contains("(max 50.0 KiB/s)"),
        "{wide}"
    );
    let sent: Vec<String> = app
        .handle_key(key('t'))
        .iter()
        .map(|c| format!("{c:?}"))
        .collect();
    assert_eq!(sent, ["SetAltSpeed(false)"]);

    let mut app = full_app(options(false, true));
    app.set_snapshot(Arc::new(on));
    let terminal = render(&mut app, 80, 24);
    assert_ascii(&terminal);
    let bar = line(terminal.backend().buffer(), 23);
    insta::assert_snapshot!("status_bar_alt_speed_ascii_80x24", bar);
    assert!(bar.starts_with(" ALT"), "{bar}");
    assert!(
        bar.contains("(max 200 KiB/s)") && bar.contains(" ^ "),
        "{bar}"
    );

    // the help lists the key
    let mut app = full_app(options(false, false));
    app.handle_key(key('?'));
    let mut found = false;
    for _ in 0..40 {
        let text = screen(&render(&mut app, 200, 50));
        if text.contains("Alternative (turtle) speed limits") {
            found = true;
            break;
        }
        app.handle_key(code(KeyCode::PageDown));
    }
    assert!(found, "help lists alt_speed");
}

/// The four rows with categories and tags, and the session's categories and tags.
fn labelled_snapshot(seq: u64) -> Arc<Snapshot> {
    use ratorrent::api::{Category, CategoryInfo};
    let mut rows = four();
    rows[0].category = "linux/iso".to_owned();
    rows[0].tags = vec!["hd".to_owned(), "new".to_owned()];
    rows[0].auto_managed = true;
    rows[1].category = "films".to_owned();
    rows[1].tags = vec!["keep".to_owned()];
    rows[2].tags = vec!["new".to_owned()];
    let info = |name: &str, path: &str| CategoryInfo {
        category: Category {
            name: name.to_owned(),
            save_path: PathBuf::from(path),
            ..Category::default()
        },
        save_path: PathBuf::from(path),
        download_path: None,
    };
    let mut global = global(&rows);
    global.categories = vec![
        info("films", "/media/films"),
        info("linux", "/srv/linux"),
        info("linux/iso", "/srv/linux/iso"),
    ]
    .into();
    global.tags = vec!["hd".to_owned(), "keep".to_owned(), "new".to_owned()].into();
    Arc::new(Snapshot {
        seq,
        global,
        rows: rows.into_iter().map(Arc::new).collect(),
        detail: None,
    })
}

fn visible_ids(app: &App) -> Vec<u64> {
    app.visible_rows().map(|r| r.id.0).collect()
}

#[test]
fn category_and_tags_columns_show_at_120x40_and_give_way_at_80x24() {
    let mut app = App::with_options(labelled_snapshot(1), options(false, false));
    let wide = render(&mut app, 120, 40);
    insta::assert_snapshot!("list_categories_120x40", screen(&wide));
    let header = line(wide.backend().buffer(), 1);
    assert!(
        header.contains("Category") && header.contains("Tags"),
        "{header}"
    );
    let narrow = render(&mut app, 80, 24);
    let header = line(narrow.backend().buffer(), 1);
    assert!(
        !header.contains("Category") && header.contains("Name"),
        "at 80 the names keep their room: {header}"
    );
    // no torrent with a category or a tag: no such column, even at 120
    let mut plain = App::with_options(snapshot(1, four()), options(false, false));
    let header = line(render(&mut plain, 120, 40).backend().buffer(), 1);
    assert!(!header.contains("Category") && !header.contains("Tags"));
}

#[test]
fn v_and_capital_v_filter_by_category_and_tag_alongside_f() {
    let mut app = App::with_options(labelled_snapshot(1), options(false, false));
    assert_eq!(visible_ids(&app), [1, 2, 3, 4]);
    app.handle_key(key('v'));
    assert_eq!(visible_ids(&app), [2], "films");
    app.handle_key(key('v'));
    assert_eq!(visible_ids(&app), [1], "linux, with linux/iso");
    let top = line(render(&mut app, 120, 40).backend().buffer(), 0);
    assert!(top.contains("category: linux"), "{top}");
    app.handle_key(key('v'));
    assert_eq!(visible_ids(&app), [1], "linux/iso");
    app.handle_key(key('v'));
    assert_eq!(visible_ids(&app), [3, 4], "without a category");
    app.handle_key(key('v'));
    assert_eq!(visible_ids(&app), [1, 2, 3, 4], "all again");
    app.handle_key(key('V'));
    assert_eq!(visible_ids(&app), [1], "tag hd");
    app.handle_key(key('V'));
    app.handle_key(key('V'));
    assert_eq!(visible_ids(&app), [1, 3], "tag new");
    // the state filter on top: only the downloading one
    app.handle_key(key('f'));
    assert_eq!(visible_ids(&app), [1]);
    app.handle_key(code(KeyCode::Esc));
    assert_eq!(visible_ids(&app), [1, 2, 3, 4], "Esc clears every filter");
}

#[test]
fn category_dialog_at_80x24_picks_creates_and_sends() {
    let mut app = App::with_options(labelled_snapshot(1), options(false, false));
    // torrent 2 (films) selected, then torrent 4 marked too
    app.handle_key(key('j'));
    app.handle_key(key('C'));
    let terminal = render(&mut app, 80, 24);
    insta::assert_snapshot!("category_dialog_80x24", screen(&terminal));
    // Tab offers the categories: "films" is there; the next is "linux"
    app.handle_key(code(KeyCode::Tab));
    // its automatic management stays as it was (off)
    let cmds = app.handle_key(code(KeyCode::Enter));
    assert!(
        matches!(
            cmds.as_slice(),
            [Command::SetCategory { ids, category }, Command::SetAutoManaged { on: false, .. }]
                if category == "linux" && ids == &[TorrentId(2)]
        ),
        "{cmds:?}"
    );
    // a new one, with its save path
    app.handle_key(key('C'));
    type_text(&mut app, "docs");
    app.handle_key(code(KeyCode::Down));
    type_text(&mut app, "/srv/docs");
    let cmds = app.handle_key(code(KeyCode::Enter));
    match cmds.as_slice() {
        [
            Command::CreateCategory(c),
            Command::SetCategory { category, .. },
            _,
        ] => {
            assert_eq!((c.name.as_str(), category.as_str()), ("docs", "docs"));
            assert_eq!(c.save_path, PathBuf::from("/srv/docs"));
        }
        other => panic!("{other:?}"),
    }
    // tags: add one, take one off
    app.handle_key(key('T'));
    type_text(&mut app, "hd, -keep");
    let cmds = app.handle_key(code(KeyCode::Enter));
    assert!(
        matches!(
            cmds.as_slice(),
            [Command::AddTags { tags: a, .. }, Command::RemoveTags { tags: r, .. }]
                if a == &["hd"] && r == &["keep"]
        ),
        "{cmds:?}"
    );
}

/// The labelled rows with queueing on: places 1-4, the seed force started, the paused one
/// waiting for a download slot instead.
fn queued_snapshot(seq: u64) -> Arc<Snapshot> {
    let mut s = (*labelled_snapshot(seq)).clone();
    let mut rows: Vec<TorrentRow> = s.rows.iter().map(|r| (**r).clone()).collect();
    for (i, r) in rows.iter_mut().enumerate() {
        r.queue_pos = i as u32 + 1;
    }
    rows[1].forced = true;
    rows[2].state = TorrentState::QueuedDownload;
    rows[2].message = None;
    s.global.queueing = true;
    s.rows = rows.into_iter().map(Arc::new).collect();
    Arc::new(s)
}

#[test]
fn queue_column_states_and_filter_with_categories_and_tags_at_120x40() {
    let mut app = App::with_options(queued_snapshot(1), options(false, false));
    let wide = render(&mut app, 120, 40);
    insta::assert_snapshot!("list_queue_categories_120x40", screen(&wide));
    let header = line(wide.backend().buffer(), 1);
    for col in ["#", "Category", "Tags", "Ratio", "Peers"] {
        assert!(header.contains(col), "{col} at 120: {header}");
    }
    let body = screen(&wide);
    assert!(body.contains("[F] Seeding"), "{body}");
    assert!(body.contains("Queued"), "{body}");
    // the queued filter is in the bar, and `f` reaches it after paused
    let top = line(wide.backend().buffer(), 0);
    assert!(top.contains("queued 1"), "{top}");
    for _ in 0..4 {
        app.handle_key(key('f'));
    }
    assert_eq!(visible_ids(&app), [3], "only the queued one");
    app.handle_key(code(KeyCode::Esc));
    // at 80 the place gives way to the peers; General says it
    let narrow = render(&mut app, 80, 24);
    insta::assert_snapshot!("list_queue_80x24", screen(&narrow));
    assert!(!line(narrow.backend().buffer(), 1).contains(" # "));
    // queueing off: no # column, no queued filter
    let mut off = App::with_options(labelled_snapshot(1), options(false, false));
    let wide = render(&mut off, 120, 40);
    assert!(
        !line(wide.backend().buffer(), 1)
            .trim_start()
            .starts_with('#')
    );
    assert!(!line(wide.backend().buffer(), 0).contains("queued"));
}

#[test]
fn queue_keys_move_and_force_start_the_marked_or_selected_torrents() {
    use ratorrent::api::QueueMove;
    let mut app = App::with_options(queued_snapshot(1), options(false, false));
    // the first one is first already: the message says so, nothing is sent
    let cmds = app.handle_key(key('['));
    assert!(cmds.is_empty(), "{cmds:?}");
    let cmds = app.handle_key(key('}'));
    assert!(
        matches!(&cmds[..], [Command::QueueMove { ids, to: QueueMove::Bottom }] if ids == &[TorrentId(1)]),
        "{cmds:?}"
    );
    // two marked: both move, and force start goes to both
    app.handle_key(key('j'));
    app.handle_key(key(' '));
    app.handle_key(key(' '));
    for (k, want) in [
        (']', QueueMove::Down),
        ('[', QueueMove::Up),
        ('{', QueueMove::Top),
    ] {
        let cmds = app.handle_key(key(k));
        assert!(
            matches!(&cmds[..], [Command::QueueMove { ids, to }] if *to == want && ids == &[TorrentId(2), TorrentId(3)]),
            "{k}: {cmds:?}"
        );
    }
    // torrent 2 is forced, 3 is not: `!` force starts both
    let cmds = app.handle_key(key('!'));
    assert!(
        matches!(&cmds[..], [Command::SetForceStart { ids, forced: true }] if ids.len() == 2),
        "{cmds:?}"
    );
    // the General tab gives the place and the force start
    let mut one = App::with_options(queued_snapshot(1), options(false, false));
    one.handle_key(key('j'));
    one.handle_key(code(KeyCode::Enter));
    let screen_text = screen(&render(&mut one, 80, 24));
    assert!(
        screen_text.contains("place 2, force started"),
        "{screen_text}"
    );
}

#[test]
fn tracker_find_replace_dialog_counts_then_replaces() {
    use ratorrent::api::{Command, TrackerEdit, TrackerEditOutcome};
    let mut app = full_app(UiOptions::default());
    let _ = app.take_commands();
    app.handle_key(key('E'));
    assert!(app.dialog().is_some(), "E opens the dialog");
    type_text(&mut app, "pk=P1");
    app.handle_key(code(KeyCode::Tab));
    type_text(&mut app, "pk=P2");
    // the first Enter asks the engine to count; the dialog stays open
    let sent = app.handle_key(code(KeyCode::Enter));
    let [
        Command::EditTrackers {
            dry_run: true,
            edit,
            ids,
            ..
        },
    ] = &sent[..]
    else {
        panic!("{sent:?}");
    };
    assert_eq!(
        edit,
        &TrackerEdit::Replace {
            find: "pk=P1".into(),
            replace: "pk=P2".into()
        }
    );
    assert_eq!(ids.len(), 1, "the selected torrent");
    assert!(app.dialog().is_some());
    let outcome = TrackerEditOutcome {
        urls: 2,
        torrents: 1,
    };
    app.trackers_edited(true, ("pk=P1".into(), "pk=P2".into()), Ok(outcome));
    let terminal = render(&mut app, 80, 24);
    insta::assert_snapshot!("dialog_trackers_80x24", screen(&terminal));
    let small = screen(&terminal);
    assert!(
        small.contains("2 tracker URLs in 1 torrent would change."),
        "{small}"
    );
    // Enter again replaces and closes the dialog; the answer goes to the message line
    let sent = app.handle_key(code(KeyCode::Enter));
    assert!(
        matches!(&sent[..], [Command::EditTrackers { dry_run: false, .. }]),
        "{sent:?}"
    );
    assert!(app.dialog().is_none());
    app.trackers_edited(false, Default::default(), Ok(outcome));
    let small = screen(&render(&mut app, 80, 24));
    assert!(
        small.contains("tracker URLs replaced: 2 tracker URLs in 1 torrent"),
        "{small}"
    );
}

/// At 80 columns an error is read whole, never cut where its meaning is: the message line
/// takes more lines for the selected torrent's error, General wraps Error and What to do,
/// the Trackers tab wraps a tracker's error under its times.
#[test]
fn errors_are_read_whole_at_80_columns() {
    let mut long = errored();
    long.id = TorrentId(2);
    long.error = Some(TorrentError {
        kind: TorrentErrorKind::NoSpace,
        message: "no space left on device writing /srv/seedbox/downloads/tv/Some.Show.S01E01.1080p.WEB.h264-GROUP/Some.Show.S01E01.mkv".to_owned(),
    });
    let mut d = detail();
    d.id = TorrentId(2);
    d.trackers = vec![ratorrent::api::TrackerRow {
        url: "https://tracker.example.org/announce?passkey=…".to_owned(),
        announce_url: "https://tracker.example.org/announce?passkey=s3cr3t".to_owned(),
        tier: 0,
        status: ratorrent::api::TrackerStatus::Error,
        message: Some(
            "tracker failure: Unregistered torrent: this torrent was deleted by a moderator (dupe of a better release), download the new one".to_owned(),
        ),
        last_announce: None,
        next_announce: None,
        seeds: None,
        leechers: None,
        downloaded: None,
        peers: 0,
    }];
    let mut app = App::new(snapshot_with(1, vec![long], Some(d)));
    // the list: the message line wraps, the error's end and its hint are on screen
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("Some.Show.S01E01.mkv"), "{text}");
    assert!(text.contains("resumes)"), "{text}");
    insta::assert_snapshot!("error_whole_list_80x24", text);
    // General: the whole error and what to do
    app.handle_key(code(KeyCode::Enter));
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("Some.Show.S01E01.mkv"), "{text}");
    insta::assert_snapshot!("error_whole_general_80x24", text);
    // Trackers: the tracker's error to its last word
    while app.tab() != Tab::Trackers {
        app.handle_key(code(KeyCode::Tab));
    }
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("download the new one"), "{text}");
    insta::assert_snapshot!("error_whole_trackers_80x24", text);
}

/// Issue 17: sequential download and first and last pieces first are keys for the selected
/// or marked torrents (`z`, `Z`: on unless all have it on already), shown in the General
/// tab with the pieces added without a check (how many are still unchecked, how many did
/// not match); the add dialog offers skip hash check, sequential and first/last.
#[test]
fn piece_order_and_unchecked_pieces_show_in_general_and_their_keys_send_commands() {
    let mut row = seeding();
    row.state = TorrentState::Downloading;
    row.pieces_have = 2251;
    row.done -= 512 * 1024;
    row.up_rate = 0;
    row.sequential = true;
    row.first_last = true;
    row.unchecked = 1840;
    row.unchecked_failed = 1;
    let d = TorrentDetail {
        id: TorrentId(2),
        files: Vec::new(),
        ..detail()
    };
    let mut app = App::new(snapshot_with(1, vec![row.clone()], Some(d)));
    // on for all of them already: off
    let commands = app.handle_key(key('z'));
    assert!(
        matches!(&commands[..], [Command::SetSequential { ids, on: false }] if ids == &[TorrentId(2)]),
        "{commands:?}"
    );
    assert!(
        app.notice()
            .unwrap_or_default()
            .contains("sequential download off"),
        "{:?}",
        app.notice()
    );
    let commands = app.handle_key(key('Z'));
    assert!(
        matches!(&commands[..], [Command::SetFirstLastPiecePrio { ids, on: false }] if ids == &[TorrentId(2)]),
        "{commands:?}"
    );
    app.handle_key(code(KeyCode::Enter));
    snap_both(&mut app, "detail_general_piece_order");
    let text = screen(&render(&mut app, 80, 24));
    for part in [
        "Piece order  sequential, first and last pieces of each file first",
        "Unchecked    1840 pieces, each hashed before it is first sent (c: check all)",
        "Hash failed  1 unchecked piece did not match: not sent, fetched again",
    ] {
        assert!(text.contains(part), "{part}\n{text}");
    }
    // a torrent with neither: the keys switch them on, General says nothing of them
    let mut plain = App::new(snapshot_with(1, vec![seeding()], Some(detail())));
    let commands = plain.handle_key(key('z'));
    assert!(
        matches!(&commands[..], [Command::SetSequential { on: true, .. }]),
        "{commands:?}"
    );
    let commands = plain.handle_key(key('Z'));
    assert!(
        matches!(
            &commands[..],
            [Command::SetFirstLastPiecePrio { on: true, .. }]
        ),
        "{commands:?}"
    );
    plain.handle_key(code(KeyCode::Enter));
    let text = screen(&render(&mut plain, 80, 24));
    assert!(
        !text.contains("Piece order") && !text.contains("Unchecked"),
        "{text}"
    );
}

/// The add dialog's three checkboxes go with the add: space ticks the focused one.
#[test]
fn the_add_dialog_sends_skip_check_sequential_and_first_last() {
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('a'));
    type_text(
        &mut app,
        "magnet:?xt=urn:btih:cccccccccccccccccccccccccccccccccccccccc",
    );
    // down to "Skip hash check" (field 5 of 7) and tick it, then "First and last"
    for _ in 0..4 {
        app.handle_key(code(KeyCode::Down));
    }
    app.handle_key(key(' '));
    app.handle_key(code(KeyCode::Down));
    app.handle_key(code(KeyCode::Down));
    app.handle_key(key(' '));
    let text = screen(&render(&mut app, 80, 24));
    for part in [
        "[x] Skip hash check (the data is complete: cross-seeding)",
        "[ ] Sequential download (pieces in order)",
        "[x] First and last pieces of each file first",
    ] {
        assert!(text.contains(part), "{part}\n{text}");
    }
    let commands = app.handle_key(code(KeyCode::Enter));
    match &commands[..] {
        [Command::Add(req, _)] => {
            assert!(
                req.skip_check && !req.sequential && req.first_last,
                "{req:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// Web seeds (BEP 19) with a torrent's peers: one row per server in the Peers tab (its host,
/// its state, its rate), a block per server in the Trackers tab (its state, URL, error and
/// retry), a line in General (by state, the first one's trouble); at 80×24 and 200×50.
#[test]
fn web_seeds_in_the_peers_trackers_and_general_tabs() {
    use ratorrent::api::{WebSeedRow, WebSeedState};
    let retry = SystemTime::now() + Duration::from_secs(150);
    let mut d = detail();
    d.peers.truncate(2);
    d.trackers.truncate(1);
    let seed = |url: &str, state, rate, message: Option<&str>| WebSeedRow {
        url: url.into(),
        state,
        down_rate: rate,
        downloaded: rate * 60,
        requests: if state == WebSeedState::Active { 4 } else { 0 },
        failures: u32::from(state == WebSeedState::BackedOff) * 2,
        hash_fails: 0,
        max_hash_fails: 3,
        bad_bytes: 0,
        missing_files: 0,
        message: message.map(str::to_owned),
        retry_at: (state == WebSeedState::BackedOff).then_some(retry),
    };
    d.web_seeds = vec![
        seed(
            "https://mirror.example.org/pub/linux/",
            WebSeedState::Active,
            48 * MIB,
            None,
        ),
        seed(
            "http://slow.example.net:8080/files/",
            WebSeedState::BackedOff,
            0,
            Some(
                "linux/debian.iso: wrong Content-Range: asked for bytes 0-4194303/4194304, got bytes 16384-4210687/4194304",
            ),
        ),
    ];
    d.peer_sources.push(SourceCount {
        source: PeerSource::WebSeed,
        known: 2,
        connected: 1,
    });
    let mut app = App::new(snapshot_with(1, four(), Some(d)));
    app.handle_key(code(KeyCode::Enter));
    snap_both(&mut app, "web_seeds_general");
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("Web seeds") && text.contains("1 active, 1 backed off; slow.example.net"),
        "{text}"
    );
    assert!(text.contains("web seed 1/2"), "sources: {text}");
    while app.tab() != Tab::Peers {
        app.handle_key(code(KeyCode::Tab));
    }
    snap_both(&mut app, "web_seeds_peers");
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("Peers 4"),
        "two peers and two web seeds: {text}"
    );
    assert!(text.contains("mirror.example.org"), "{text}");
    assert!(text.contains("backed off"), "{text}");
    while app.tab() != Tab::Trackers {
        app.handle_key(code(KeyCode::Tab));
    }
    snap_both(&mut app, "web_seeds_trackers");
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("Trackers 3"), "{text}");
    assert!(text.contains("web seed backed off"), "{text}");
    assert!(text.contains("retry in 2m"), "{text}");
    assert!(text.contains("wrong Content-Range"), "{text}");
    // the cursor reaches the web seeds
    for _ in 0..2 {
        app.handle_key(key('j'));
    }
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("http://slow.example.net:8080/files/"),
        "{text}"
    );
}

#[test]
fn create_dialog_at_both_sizes_refuses_mistakes_and_sends_a_hybrid_to_seed() {
    let dir = tempfile::tempdir().unwrap();
    let album = dir.path().join("album");
    std::fs::create_dir(&album).unwrap();
    std::fs::write(album.join("a.bin"), b"some bytes").unwrap();
    let mut app = full_app(UiOptions::default());
    app.handle_key(key('N'));
    snap_both(&mut app, "dialog_create");
    // nothing typed, then a path that does not exist: said in the dialog, which stays open
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("type the file or folder to share"), "{text}");
    type_text(&mut app, "/nonexistent/album");
    assert!(app.handle_key(code(KeyCode::Enter)).is_empty());
    let text = screen(&render(&mut app, 80, 24));
    assert!(text.contains("no such file or folder"), "{text}");
    assert!(matches!(app.dialog(), Some(Dialog::Form(_))));
    // q and N type into the field instead of quitting or reopening
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, &format!("{}/alb", dir.path().display()));
    app.handle_key(code(KeyCode::Tab));
    let Some(Dialog::Form(form)) = app.dialog() else {
        panic!("form")
    };
    assert!(
        form.fields[0]
            .value()
            .starts_with(&album.display().to_string()),
        "Tab completes: {}",
        form.fields[0].value()
    );
    // trackers (two tiers), then private
    app.handle_key(code(KeyCode::Down));
    app.handle_key(code(KeyCode::Down));
    type_text(
        &mut app,
        "http://a/announce, http://b/announce; udp://c:6969",
    );
    app.handle_key(code(KeyCode::Down));
    app.handle_key(code(KeyCode::Down));
    app.handle_key(key(' '));
    let cmds = app.handle_key(code(KeyCode::Enter));
    match &cmds[..] {
        [Command::Add(req, None)] => {
            let AddSource::Create(c) = &req.source else {
                panic!("{:?}", req.source)
            };
            assert_eq!(c.path, album);
            assert_eq!(c.output_path(), dir.path().join("album.torrent"));
            assert_eq!(c.version, ratorrent::metainfo::MetaVersion::Hybrid);
            assert_eq!(
                c.trackers,
                [
                    vec![
                        "http://a/announce".to_owned(),
                        "http://b/announce".to_owned()
                    ],
                    vec!["udp://c:6969".to_owned()],
                ]
            );
            assert!(c.private && req.seed && !req.paused, "{req:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(app.dialog().is_none());
    assert!(
        app.notice()
            .is_some_and(|n| n.starts_with("creating /") && n.contains("/album.torrent…")),
        "{:?}",
        app.notice()
    );
    // the engine's refusal (an empty folder) is read on the message line
    app.add_result(Err(AddError::Invalid(format!(
        "cannot create a torrent of {}: nothing to share",
        album.display()
    ))));
    let text = screen(&render(&mut app, 80, 24));
    assert!(
        text.contains("not added: cannot create a torrent"),
        "{text}"
    );
    // made and seeding: the answer names the .torrent (it said "torrent added"); the
    // next add's answer is not about it
    std::fs::remove_file(dir.path().join("album.torrent")).ok();
    app.handle_key(key('N'));
    type_text(&mut app, &album.display().to_string());
    let cmds = app.handle_key(code(KeyCode::Enter));
    assert!(matches!(&cmds[..], [Command::Add(..)]), "{cmds:?}");
    app.add_result(Ok(TorrentId(7)));
    let want = format!(
        "created {}; seeding it",
        dir.path().join("album.torrent").display()
    );
    assert_eq!(app.notice(), Some(want.as_str()));
    app.add_result(Ok(TorrentId(8)));
    assert_eq!(app.notice(), Some("torrent added"));
}

/// A notice is read whole at 80 columns too: `r` on a torrent without trackers says where
/// its peers come from and names it, in more than one line (it was cut at "(DH…").
#[test]
fn a_long_notice_is_read_whole_at_80_columns() {
    let mut row = seeding();
    row.has_trackers = false;
    let mut app = App::new(snapshot_with(1, vec![row], None));
    app.handle_key(key('r'));
    let notice = app.notice().unwrap_or_default();
    assert!(notice.contains("no tracker to re-announce to"), "{notice}");
    let text = screen(&render(&mut app, 80, 24));
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(DHT off)"), "{text}");
    assert!(flat.contains("archlinux-2024.06.01-x86_64.iso"), "{text}");
}
