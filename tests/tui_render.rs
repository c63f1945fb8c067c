//! Renders the terminal UI on ratatui's `TestBackend` from hand-built snapshots and checks
//! the screen (insta snapshots plus direct assertions) and the key handling of `App`.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratorrent::api::{Command, GlobalStats, Snapshot, TorrentId, TorrentRow, TorrentState};
use ratorrent::tui::App;
use ratorrent::tui::action::ACTIONS;

const MIB: u64 = 1024 * 1024;

fn downloading() -> TorrentRow {
    let size = 700 * MIB;
    let done = size / 100 * 42; // exactly 42.0 %
    TorrentRow {
        id: TorrentId(1),
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
        swarm_seeds: None,
        swarm_leechers: None,
        downloaded: done,
        uploaded: 10 * MIB,
        message: None,
        ..TorrentRow::default()
    }
}

fn seeding() -> TorrentRow {
    let size = 1126 * MIB;
    TorrentRow {
        id: TorrentId(2),
        name: "archlinux-2024.06.01-x86_64.iso".to_owned(),
        info_hash: "bb".repeat(20),
        size,
        done: size,
        pieces_have: 2252,
        pieces_total: 2252,
        state: TorrentState::Seeding,
        down_rate: 0,
        up_rate: 512 * 1024,
        eta_secs: None,
        seeds: 0,
        peers: 3,
        swarm_seeds: Some(120),
        swarm_leechers: Some(8),
        downloaded: size,
        uploaded: 2 * size,
        message: None,
        ..TorrentRow::default()
    }
}

fn paused_with_error() -> TorrentRow {
    let size = 4000 * MIB;
    TorrentRow {
        id: TorrentId(3),
        name: "A Very Long Name That Must Be Cut Short With An Ellipsis (2024) 1080p.mkv"
            .to_owned(),
        info_hash: "cc".repeat(20),
        size,
        done: size / 10,
        pieces_have: 410,
        pieces_total: 4096,
        state: TorrentState::Paused,
        message: Some("tracker: connection refused".to_owned()),
        ..TorrentRow::default()
    }
}

fn snapshot(seq: u64, rows: Vec<TorrentRow>) -> Arc<Snapshot> {
    Arc::new(Snapshot {
        seq,
        global: GlobalStats {
            down_rate: rows.iter().map(|r| r.down_rate).sum(),
            up_rate: rows.iter().map(|r| r.up_rate).sum(),
            downloaded: 0,
            uploaded: 0,
            peers: rows.iter().map(|r| r.peers).sum(),
            listen_port: 6881,
            ..GlobalStats::default()
        },
        rows: rows.into_iter().map(Arc::new).collect(),
        detail: None,
    })
}

fn three() -> Arc<Snapshot> {
    snapshot(1, vec![downloading(), seeding(), paused_with_error()])
}

fn render(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal.draw(|frame| app.draw(frame)).expect("draw");
    terminal
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

/// Text of line `y` of the buffer, trailing blanks removed.
fn line(buffer: &Buffer, y: u16) -> String {
    let mut text = String::new();
    for x in 0..buffer.area.width {
        text.push_str(buffer[(x, y)].symbol());
    }
    text.trim_end().to_owned()
}

#[test]
fn three_torrents_at_100x20() {
    let app = App::new(three());
    let terminal = render(&app, 100, 20);
    insta::assert_snapshot!("three_torrents_100x20", terminal.backend());

    let buffer = terminal.backend().buffer();
    let screen = terminal.backend().to_string();
    // Header and the three rows.
    let header = line(buffer, 0);
    for title in [
        "Name", "Size", "Progress", "↓ Rate", "↑ Rate", "ETA", "Peers", "State",
    ] {
        assert!(header.contains(title), "header lacks {title}: {header}");
    }
    let first = line(buffer, 1);
    assert!(first.starts_with('>'), "first row selected: {first}");
    assert!(first.contains("debian-12.5.0-amd64.iso"), "{first}");
    assert!(first.contains("700 MiB"), "{first}");
    assert!(first.contains("42.0%"), "{first}");
    assert!(first.contains("2.50 MiB/s"), "{first}");
    assert!(first.contains("128 KiB/s"), "{first}");
    assert!(first.contains("2m 42s"), "{first}");
    assert!(first.contains("12 (5)"), "{first}");
    assert!(first.contains("Downloading"), "{first}");
    let second = line(buffer, 2);
    assert!(second.contains("archlinux-2024.06.01"), "{second}");
    assert!(
        second.contains("100%") && second.contains("Seeding"),
        "{second}"
    );
    assert!(second.contains("3/128"), "swarm counts: {second}");
    let third = line(buffer, 3);
    assert!(third.contains("A Very Long Name"), "{third}");
    assert!(
        third.contains('…'),
        "long name cut with an ellipsis: {third}"
    );
    assert!(!screen.contains("1080p.mkv"), "long name must be truncated");
    assert!(
        third.contains("10.0%") && third.contains("Paused"),
        "{third}"
    );
    // Paused with a tracker error: state in the warning colour.
    let state_x = third
        .find("Paused")
        .map(|i| third[..i].chars().count() as u16);
    let state_x = state_x.expect("Paused on row 3");
    assert_eq!(buffer[(state_x, 3)].fg, Color::Yellow);
    // Selected row is highlighted.
    assert!(buffer[(5, 1)].modifier.contains(Modifier::REVERSED));
    assert!(!buffer[(5, 2)].modifier.contains(Modifier::REVERSED));
    // Status bar totals: 2.50 MiB/s down, 128 KiB/s + 512 KiB/s = 640 KiB/s up, 15 peers.
    let status = line(buffer, 19);
    for part in [
        "↓ 2.50 MiB/s",
        "↑ 640 KiB/s",
        "peers 15",
        "torrents 3",
        "port 6881",
        "? help",
        "q quit",
    ] {
        assert!(status.contains(part), "status bar lacks {part:?}: {status}");
    }
    // Detail line of the selected torrent (no message): its info hash.
    assert!(line(buffer, 18).contains(&"aa".repeat(20)));
}

#[test]
fn selected_torrent_message_is_shown() {
    let mut app = App::new(three());
    app.handle_key(key('G'));
    assert_eq!(app.selected(), Some(TorrentId(3)));
    let terminal = render(&app, 100, 20);
    let buffer = terminal.backend().buffer();
    let detail = line(buffer, 18);
    assert!(
        detail.contains("tracker: connection refused"),
        "message line: {detail}"
    );
    assert_eq!(buffer[(2, 18)].fg, Color::Yellow);
    assert!(line(buffer, 3).starts_with('>'));
}

#[test]
fn empty_list_shows_how_to_add() {
    let app = App::new(snapshot(1, Vec::new()));
    assert_eq!(app.selected(), None);
    let terminal = render(&app, 100, 20);
    insta::assert_snapshot!("empty_100x20", terminal.backend());
    let screen = terminal.backend().to_string();
    assert!(screen.contains("No torrents yet."));
    assert!(screen.contains("ratorrent FILE.torrent"));
    assert!(screen.contains("torrents 0"));
}

#[test]
fn help_overlay_lists_every_action() {
    let mut app = App::new(three());
    assert!(app.handle_key(key('?')).is_empty());
    assert!(app.help_open());
    let terminal = render(&app, 100, 20);
    insta::assert_snapshot!("help_100x20", terminal.backend());
    let screen = terminal.backend().to_string();
    for spec in ACTIONS {
        assert!(
            screen.contains(spec.description),
            "help lacks {}",
            spec.name
        );
        for key in spec.keys {
            assert!(screen.contains(&key.to_string()), "help lacks key {key}");
        }
    }
    // While help is open, list keys do nothing; Esc closes it, and so does `?`.
    assert!(app.handle_key(key('p')).is_empty());
    app.handle_key(key('j'));
    assert_eq!(app.selected(), Some(TorrentId(1)));
    app.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!app.help_open());
    app.handle_key(key('?'));
    app.handle_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT));
    assert!(!app.help_open());
}

#[test]
fn narrow_terminal_keeps_name_progress_and_state() {
    let mut app = App::new(three());
    let terminal = render(&app, 40, 10);
    insta::assert_snapshot!("three_torrents_40x10", terminal.backend());
    let buffer = terminal.backend().buffer();
    assert!(line(buffer, 1).contains("42.0%"));
    assert!(line(buffer, 1).contains("Downloading"));
    // Any size, help open or not, renders without panicking.
    for help in [false, true] {
        if help {
            app.handle_key(key('?'));
        }
        for (w, h) in [(40, 10), (20, 5), (10, 3), (1, 1), (100, 2), (3, 40)] {
            render(&app, w, h);
        }
    }
}

#[test]
fn selection_moves_and_follows_the_torrent_across_reorders() {
    let mut app = App::new(three());
    assert_eq!(app.selected(), Some(TorrentId(1)));
    app.handle_key(key('j'));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    app.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(app.selected(), Some(TorrentId(3)));
    app.handle_key(key('j')); // stays on the last row
    assert_eq!(app.selected(), Some(TorrentId(3)));
    app.handle_key(key('k'));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    app.handle_key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    assert_eq!(app.selected(), Some(TorrentId(1)));
    app.handle_key(key('k')); // stays on the first row
    assert_eq!(app.selected(), Some(TorrentId(1)));
    app.handle_key(KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT));
    assert_eq!(app.selected(), Some(TorrentId(3)));
    app.handle_key(key('g'));
    app.handle_key(key('j'));
    assert_eq!(app.selected(), Some(TorrentId(2)));

    // Rows reordered: the selection stays on torrent 2, now drawn first.
    let reordered = snapshot(2, vec![seeding(), paused_with_error(), downloading()]);
    assert!(app.set_snapshot(reordered));
    assert_eq!(app.selected(), Some(TorrentId(2)));
    let terminal = render(&app, 100, 20);
    let first = line(terminal.backend().buffer(), 1);
    assert!(
        first.starts_with('>') && first.contains("archlinux"),
        "{first}"
    );
    // Moving works in the new order.
    app.handle_key(key('j'));
    assert_eq!(app.selected(), Some(TorrentId(3)));

    // The selected torrent is removed: its successor in place is selected.
    assert!(app.set_snapshot(snapshot(3, vec![seeding(), downloading()])));
    assert_eq!(app.selected(), Some(TorrentId(1)));
    // Same content again: nothing to redraw.
    assert!(!app.set_snapshot(snapshot(3, vec![seeding(), downloading()])));
    // Everything removed, then a torrent added.
    app.set_snapshot(snapshot(4, Vec::new()));
    assert_eq!(app.selected(), None);
    app.handle_key(key('j'));
    assert!(app.handle_key(key('p')).is_empty());
    app.set_snapshot(snapshot(5, vec![seeding()]));
    assert_eq!(app.selected(), Some(TorrentId(2)));
}

#[test]
fn long_lists_scroll_to_keep_the_selection_visible() {
    let rows: Vec<TorrentRow> = (0..50)
        .map(|i| TorrentRow {
            id: TorrentId(i),
            name: format!("torrent-{i:02}"),
            size: MIB,
            ..TorrentRow::default()
        })
        .collect();
    let mut app = App::new(snapshot(1, rows));
    // 12 lines: header + 9 rows + detail + status.
    let terminal = render(&app, 80, 12);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("torrent-08") && !screen.contains("torrent-09"));
    app.handle_key(key('G'));
    let terminal = render(&app, 80, 12);
    let buffer = terminal.backend().buffer();
    assert!(
        line(buffer, 9).starts_with(">torrent-49"),
        "{}",
        line(buffer, 9)
    );
    assert!(
        line(buffer, 1).contains("torrent-41"),
        "{}",
        line(buffer, 1)
    );
    // Moving up inside the window does not scroll.
    for _ in 0..8 {
        app.handle_key(key('k'));
    }
    let terminal = render(&app, 80, 12);
    let buffer = terminal.backend().buffer();
    assert!(line(buffer, 1).contains("torrent-41"));
    assert!(line(buffer, 1).starts_with('>'));
    // One more scrolls by one.
    app.handle_key(key('k'));
    let terminal = render(&app, 80, 12);
    let buffer = terminal.backend().buffer();
    assert!(line(buffer, 1).starts_with('>') && line(buffer, 1).contains("torrent-40"));
}

#[test]
fn p_toggles_pause_of_the_selected_torrent() {
    let mut app = App::new(three());
    app.handle_key(key('j'));
    let commands = app.handle_key(key('p'));
    assert_eq!(commands.len(), 1);
    assert!(
        matches!(commands.first(), Some(Command::TogglePause(TorrentId(2)))),
        "{commands:?}"
    );
    assert!(
        app.handle_key(key('x')).is_empty(),
        "unbound key does nothing"
    );
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = App::new(three());
    assert!(!app.should_quit());
    assert!(app.handle_key(key('q')).is_empty());
    assert!(app.should_quit());

    let mut app = App::new(three());
    app.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.should_quit());

    // A plain `c` is not Ctrl-C.
    let mut app = App::new(three());
    app.handle_key(key('c'));
    assert!(!app.should_quit());
}

#[test]
fn notice_shows_in_the_status_bar_and_clears_on_a_key() {
    let mut app = App::new(three());
    app.set_notice(Some("shutting down…".to_owned()));
    let terminal = render(&app, 100, 20);
    assert!(line(terminal.backend().buffer(), 19).contains("shutting down…"));
    app.handle_key(key('j'));
    assert_eq!(app.notice(), None);
}

#[test]
fn hostile_names_cannot_inject_escapes() {
    let mut row = downloading();
    row.name = "evil\x1b]0;pwned\x07\nname".to_owned();
    row.message = Some("bad\r\x1b[2Jtracker".to_owned());
    let app = App::new(snapshot(1, vec![row]));
    let terminal = render(&app, 100, 20);
    let screen = terminal.backend().to_string();
    assert!(!screen.contains('\x1b') && !screen.contains('\x07'));
    assert!(line(terminal.backend().buffer(), 1).contains("evil\u{fffd}]0;pwned"));
}

#[test]
fn status_bar_shows_dht_nodes_only_when_the_dht_runs() {
    let app = App::new(three());
    let terminal = render(&app, 100, 20);
    let status = line(terminal.backend().buffer(), 19);
    assert!(!status.contains("DHT"), "DHT off: {status}");
    let mut snap = (*three()).clone();
    snap.global.dht_nodes = Some(312);
    let app = App::new(Arc::new(snap));
    let terminal = render(&app, 100, 20);
    let status = line(terminal.backend().buffer(), 19);
    assert!(status.contains("port 6881  DHT: 312 nodes"), "{status}");
}
