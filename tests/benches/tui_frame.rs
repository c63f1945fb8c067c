//! Frame time of the TUI with 10,000 torrents in the list at 200×50 (goal: ≤ 1 ms).
//!
//! Each frame is drawn through the same backend stack as the real terminal (quiet backend,
//! crossterm escape codes, SGR rewriting) into a sink, so the escape-code generation of the
//! changed cells is included. Run with `cargo bench --bench tui_frame`.

use std::io::sink;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use ratorrent::api::{GlobalStats, Snapshot, TorrentId, TorrentRow, TorrentState};
use ratorrent::tui::App;
use ratorrent::tui::terminal::{AnsiWriter, QuietBackend};

const ROWS: u64 = 10_000;
const MIB: u64 = 1 << 20;

type Term = Terminal<QuietBackend<CrosstermBackend<AnsiWriter<std::io::Sink>>>>;

fn main() {
    divan::main();
}

fn row(i: u64, tick: u64) -> TorrentRow {
    let state = match i % 5 {
        0 => TorrentState::Downloading,
        1 | 2 => TorrentState::Seeding,
        3 => TorrentState::Paused,
        _ => TorrentState::Checking,
    };
    let active = state == TorrentState::Downloading;
    TorrentRow {
        id: TorrentId(i),
        rev: tick,
        name: format!(
            "ubuntu-{}.{:02}-desktop-amd64 [{}].iso",
            20 + i % 6,
            i % 12,
            i
        ),
        info_hash: format!("{i:040x}"),
        size: (i % 100 + 1) * 64 * MIB,
        done: ((i % 100 + 1) * 64 * MIB) / 100 * ((i + tick) % 100),
        state,
        down_rate: if active {
            (i * 7919 + tick * 104_729) % (8 * MIB)
        } else {
            0
        },
        up_rate: (i * 31 + tick * 17) % (512 * 1024),
        eta_secs: active.then_some(i % 86_400),
        seeds: (i % 9) as u32,
        peers: (i % 23) as u32,
        swarm_seeds: Some((i % 500) as u32),
        swarm_leechers: Some((i % 70) as u32),
        downloaded: i * MIB,
        uploaded: i * MIB / 2,
        added_at: 1_700_000_000 + i * 60,
        ..TorrentRow::default()
    }
}

fn snapshot(seq: u64) -> Arc<Snapshot> {
    let rows: Vec<Arc<TorrentRow>> = (0..ROWS).map(|i| Arc::new(row(i, seq))).collect();
    Arc::new(Snapshot {
        seq,
        global: GlobalStats {
            down_rate: 12 * MIB,
            up_rate: 3 * MIB,
            peers: 4000,
            listen_port: 6881,
            ..GlobalStats::default()
        },
        rows: rows.into(),
        detail: None,
    })
}

fn terminal() -> Term {
    let writer = AnsiWriter::new(sink());
    Terminal::with_options(
        QuietBackend::new(CrosstermBackend::new(writer)),
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, 200, 50)),
        },
    )
    .expect("terminal")
}

/// A frame where nothing changed: the screen is built and diffed, nothing is written.
#[divan::bench]
fn frame_unchanged_10k(bencher: divan::Bencher) {
    let mut app = App::new(snapshot(1));
    let mut term = terminal();
    term.draw(|f| ratorrent::tui::draw(f, &mut app)).unwrap();
    bencher.bench_local(|| {
        term.draw(|f| ratorrent::tui::draw(f, &mut app)).unwrap();
    });
}

/// A new snapshot arrives (every visible row's figures changed) and is drawn: index
/// rebuild (engine order), counts, speed sampling, render, diff and escape codes.
#[divan::bench]
fn frame_new_snapshot_10k(bencher: divan::Bencher) {
    let snaps: Vec<Arc<Snapshot>> = (1..=8).map(snapshot).collect();
    let mut app = App::new(snaps[0].clone());
    let mut term = terminal();
    let mut i = 0usize;
    bencher.bench_local(|| {
        i += 1;
        app.set_snapshot(snaps[i % snaps.len()].clone());
        term.draw(|f| ratorrent::tui::draw(f, &mut app)).unwrap();
    });
}

/// As above, sorted by name (the most expensive key: case-insensitive text) with a search
/// active.
#[divan::bench]
fn frame_new_snapshot_sorted_searched_10k(bencher: divan::Bencher) {
    let snaps: Vec<Arc<Snapshot>> = (1..=8).map(snapshot).collect();
    let mut app = App::new(snaps[0].clone());
    app.handle_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
    app.handle_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
    let mut term = terminal();
    let mut i = 0usize;
    bencher.bench_local(|| {
        i += 1;
        app.set_snapshot(snaps[i % snaps.len()].clone());
        term.draw(|f| ratorrent::tui::draw(f, &mut app)).unwrap();
    });
}

/// A key press that moves the selection one row (the common interactive frame).
#[divan::bench]
fn frame_key_move_10k(bencher: divan::Bencher) {
    let mut app = App::new(snapshot(1));
    let mut term = terminal();
    let down = KeyEvent::new(KeyCode::Down, KeyModifiers::NONE);
    let up = KeyEvent::new(KeyCode::Up, KeyModifiers::NONE);
    let mut n = 0u64;
    bencher.bench_local(|| {
        n += 1;
        app.handle_key(if n % 200 < 100 { down } else { up });
        term.draw(|f| ratorrent::tui::draw(f, &mut app)).unwrap();
    });
}

/// Baseline: ratatui's own cost of a 200×50 frame with nothing drawn (buffer reset, diff).
#[divan::bench]
fn frame_baseline_empty(bencher: divan::Bencher) {
    let mut term = terminal();
    bencher.bench_local(|| {
        term.draw(|_| {}).unwrap();
    });
}
