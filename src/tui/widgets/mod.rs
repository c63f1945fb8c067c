//! Pieces of the screen, each a function that draws one area from the app's state.
//!
//! Layout of every screen: a top bar (filters and sort, or the detail tabs), the body, a
//! message line (notices, errors with what to do, the search line) and the status bar
//! (session rates and limits, peers, free space, port, DHT).

pub(crate) mod dialog;
pub mod files;
pub(crate) mod general;
pub(crate) mod help;
pub(crate) mod log;
pub(crate) mod peers;
pub(crate) mod pieces;
pub(crate) mod speed;
pub(crate) mod torrent_table;
pub(crate) mod trackers;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::api::TorrentState;

use super::action::Action;
use super::app::{App, NoticeLevel, Screen, Tab};
use super::format;
use super::list::StateFilter;
use super::theme::{Role, Theme};
use crate::units;

/// Speed points handed to the Speed tab: (session, torrent).
pub type SpeedPoints = (Vec<(u64, u64)>, Option<Vec<(u64, u64)>>);

/// Draws the whole screen.
pub(crate) fn draw(app: &App, frame: &mut Frame, speed: Option<&SpeedPoints>) {
    let area = frame.area();
    let [top, body, message, status] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ]));
    let theme = &app.options().theme;
    match app.screen() {
        Screen::List => {
            top_bar_list(frame, top, app, theme);
            torrent_table::render(frame, body, app);
        }
        Screen::Detail => {
            top_bar_tabs(frame, top, app, theme);
            detail(frame, body, app, speed);
        }
        Screen::Log => {
            let title = format!(
                " Session log: {} events{}",
                app.events().len(),
                if app.events_lost() > 0 {
                    format!(" ({} lost: the UI was too slow)", app.events_lost())
                } else {
                    String::new()
                }
            );
            frame.render_widget(Line::styled(title, theme.title()), top);
            log::render(
                frame,
                body,
                app,
                app.events().iter(),
                app.scrolls().log,
                true,
            );
        }
    }
    message_line(frame, message, app, theme);
    status_bar(frame, status, app, theme);
    if let Some(d) = app.dialog() {
        dialog::render(frame, area, d, theme);
    }
    if let Some(scroll) = app.scrolls().help {
        help::render(frame, area, &app.options().keymap, scroll, theme);
    }
}

/// First row to show so that `selected` is visible, moving as little as possible from
/// `previous`, and never leaving blank lines at the bottom while rows are hidden above.
pub(crate) fn scroll_offset(
    previous: usize,
    selected: Option<usize>,
    len: usize,
    visible: usize,
) -> usize {
    let mut first = previous;
    if let Some(sel) = selected {
        let sel = sel.min(len.saturating_sub(1));
        if sel < first {
            first = sel;
        } else if visible > 0 && sel >= first + visible {
            first = sel + 1 - visible;
        }
    }
    first.min(len.saturating_sub(visible))
}

/// Paints the selection over table row `row` (below a header line counted in `row`), when
/// it is one of the `visible` rows: reverse video in the terminal's colours, even over
/// cells that have their own colour.
pub(crate) fn highlight_row(
    frame: &mut Frame,
    area: Rect,
    row: Option<usize>,
    visible: usize,
    theme: &Theme,
) {
    if let Some(r) = row
        && r >= 1
        && r <= visible
        && r < usize::from(area.height)
    {
        let line = Rect {
            y: area.y + r as u16,
            height: 1,
            ..area
        };
        frame.buffer_mut().set_style(line, theme.selected());
    }
}

/// A bar (done / to do) followed by the percentage, `width` cells in all.
pub(crate) fn progress_line(done: u64, size: u64, width: u16, theme: &Theme) -> Line<'static> {
    let percent = format::percent(done, size);
    let bar = usize::from(width.saturating_sub(6));
    if bar == 0 {
        return Line::from(percent).right_aligned();
    }
    let filled = if done >= size {
        bar
    } else {
        (u128::from(done) * bar as u128 / u128::from(size.max(1))) as usize
    };
    let (full, empty) = theme.sym.bar;
    Line::from(vec![
        Span::styled(full.repeat(filled), theme.fg(Role::Good)),
        Span::styled(empty.repeat(bar - filled), theme.dim()),
        Span::raw(format!(" {percent:>5}")),
    ])
}

/// Spans that fit in `width` cells: each item whole or not at all.
fn fit_spans<'a>(items: Vec<(String, Style)>, width: usize) -> Vec<Span<'a>> {
    let mut used = 0;
    let mut out = Vec::new();
    for (text, style) in items {
        let w = format::width(&text);
        if used + w > width {
            break;
        }
        used += w;
        out.push(Span::styled(text, style));
    }
    out
}

fn top_bar_list(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let view = app.view();
    let counts = app.counts();
    let short = area.width < 100;
    let mut items = Vec::new();
    for (i, f) in StateFilter::ALL.iter().enumerate() {
        // lower case, so the bar never reads like a row's state ("Seeding")
        let label = if short {
            match f {
                StateFilter::All => "all",
                StateFilter::Downloading => "down",
                StateFilter::Seeding => "seed",
                StateFilter::Paused => "paused",
                StateFilter::Checking => "check",
                StateFilter::Error => "error",
            }
        } else {
            match f {
                StateFilter::All => "all",
                StateFilter::Downloading => "downloading",
                StateFilter::Seeding => "seeding",
                StateFilter::Paused => "paused",
                StateFilter::Checking => "checking",
                StateFilter::Error => "error",
            }
        };
        let style = if *f == view.filter {
            theme
                .selected()
                .add_modifier(ratatui::style::Modifier::BOLD)
        } else if *f == StateFilter::Error && counts[i] > 0 {
            theme.error()
        } else {
            Style::new()
        };
        items.push((format!(" {label} {} ", counts[i]), style));
    }
    let (asc, desc) = theme.sym.sort;
    let dir = if view.reverse { desc } else { asc };
    items.push((format!(" sort: {} {dir}", view.sort.label()), theme.dim()));
    if !app.marks().is_empty() {
        items.push((
            format!("  {} marked", app.marks().len()),
            theme.fg(Role::Mark),
        ));
    }
    if !view.query.is_empty() && !app.searching() {
        let q = format::fit_with(&view.query, 20, theme.sym.ascii, theme.sym.ellipsis);
        items.push((format!("  /{q}"), theme.key()));
    }
    let spans = fit_spans(items, usize::from(area.width));
    frame.render_widget(Line::from(spans), area);
}

fn top_bar_tabs(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let detail = app.detail();
    let mut items = Vec::new();
    for tab in Tab::ALL {
        let count = match (tab, detail) {
            (Tab::Peers, Some(d)) => format!(" {}", d.peers.len()),
            (Tab::Files, Some(d)) => format!(" {}", d.files.len()),
            (Tab::Trackers, Some(d)) => format!(" {}", d.trackers.len()),
            _ => String::new(),
        };
        let style = if tab == app.tab() {
            theme
                .selected()
                .add_modifier(ratatui::style::Modifier::BOLD)
        } else {
            Style::new()
        };
        items.push((format!(" {}{count} ", tab.title()), style));
    }
    let spans = fit_spans(items, usize::from(area.width));
    frame.render_widget(Line::from(spans), area);
}

fn detail(frame: &mut Frame, area: Rect, app: &App, speed: Option<&SpeedPoints>) {
    let theme = &app.options().theme;
    let sym = theme.sym;
    let [head, body] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
    ]));
    if let Some(row) = app.selected_row() {
        let text = format!(
            " {}  {}  {}  {} {}  {} {}",
            row.name,
            row.state.label(),
            format::percent(row.done, row.size),
            sym.down,
            units::rate(row.down_rate),
            sym.up,
            units::rate(row.up_rate),
        );
        let line = format::fit_with(&text, usize::from(head.width), sym.ascii, sym.ellipsis);
        frame.render_widget(Line::styled(line, theme.title()), head);
    }
    let d = app.detail().map(|d| &**d);
    if d.is_none() && !matches!(app.tab(), Tab::Speed | Tab::Log | Tab::General) {
        frame.render_widget(
            Line::styled(
                " waiting for the engine's detail of this torrent…",
                theme.dim(),
            ),
            body,
        );
        return;
    }
    let scrolls = app.scrolls();
    match app.tab() {
        Tab::General => general::render(frame, body, app, d, scrolls.general),
        Tab::Peers => peers::render(frame, body, d, scrolls.peers, theme),
        Tab::Files => files::render(frame, body, app.files(), scrolls.files, theme),
        Tab::Trackers => {
            let g = &app.snapshot().global;
            let on = (g.dht_nodes.is_some(), g.lsd);
            trackers::render(frame, body, d, scrolls.trackers, on, theme);
        }
        Tab::Pieces => pieces::render(frame, body, d, theme),
        Tab::Speed => speed::render(frame, body, app, speed),
        Tab::Log => log::render(
            frame,
            body,
            app,
            app.torrent_events(),
            scrolls.tab_log,
            false,
        ),
    }
}

fn message_line(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let width = usize::from(area.width);
    let sym = theme.sym;
    if app.searching() {
        let field = app.search_field();
        let text = format::clean(field.text(), sym.ascii);
        let matches = app.visible_len();
        let prefix = "/";
        let line = Line::from(vec![
            Span::styled(prefix, theme.key()),
            Span::raw(format::fit_with(
                &text,
                width.saturating_sub(20),
                sym.ascii,
                sym.ellipsis,
            )),
            Span::styled(
                format!("   {matches} match{}", if matches == 1 { "" } else { "es" }),
                theme.dim(),
            ),
        ]);
        frame.render_widget(line, area);
        let before: String = text.chars().take(field.cursor()).collect();
        let x = area.x + (1 + format::width(&before)).min(width.saturating_sub(1)) as u16;
        frame.set_cursor_position(Position::new(x, area.y));
        return;
    }
    if let Some((text, level)) = app.notice_level() {
        let style = match level {
            NoticeLevel::Info => theme.fg(Role::Good),
            NoticeLevel::Error => theme.error(),
        };
        let line = format::fit_with(&format!(" {text}"), width, sym.ascii, sym.ellipsis);
        frame.render_widget(Line::styled(line, style), area);
        return;
    }
    let Some(row) = app.selected_row() else {
        if app.screen() == Screen::List && app.visible_len() == 0 && !app.snapshot().rows.is_empty()
        {
            let line = format!(
                " nothing matches; {}: clear the filter and search",
                app.options().keymap.hint(Action::ClearMarks)
            );
            frame.render_widget(Line::styled(line, theme.dim()), area);
        }
        return;
    };
    let (text, style) = if let Some(err) = &row.error {
        let key = app.options().keymap.hint(Action::TogglePause);
        (
            format!(
                " Error: {} — {} ({key} resumes)",
                err.message,
                err.kind.hint()
            ),
            theme.error(),
        )
    } else if let Some(m) = &row.message {
        (
            format!(" {m}"),
            if row.state == TorrentState::Error {
                theme.error()
            } else {
                theme.warning()
            },
        )
    } else {
        (
            format!(
                " {}  pieces {}/{}  {} {}  {} {}  ratio {}",
                row.info_hash,
                row.pieces_have,
                row.pieces_total,
                sym.down,
                units::size(row.downloaded),
                sym.up,
                units::size(row.uploaded),
                format::ratio(row.ratio()),
            ),
            theme.dim(),
        )
    };
    let line = format::fit_with(&text, width, sym.ascii, sym.ellipsis);
    frame.render_widget(Line::styled(line, style), area);
}

fn status_bar(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let width = usize::from(area.width);
    let snapshot = app.snapshot();
    let g = &snapshot.global;
    let sym = theme.sym;
    let limit = |v: u64| {
        if v == 0 {
            String::new()
        } else {
            format!(" (max {})", units::rate(v))
        }
    };
    let mut figures = vec![
        format!(
            "{} {}{}",
            sym.down,
            units::rate(g.down_rate),
            limit(g.down_limit)
        ),
        format!("{} {}{}", sym.up, units::rate(g.up_rate), limit(g.up_limit)),
        format!("peers {}", g.peers),
    ];
    if let Some(free) = g.free_space {
        figures.push(format!("free {}", units::size(free)));
    }
    figures.push(format!("torrents {}", snapshot.rows.len()));
    figures.push(if g.listen_port == 0 {
        "port -".to_owned()
    } else {
        format!("port {}", g.listen_port)
    });
    if let Some(n) = g.dht_nodes {
        figures.push(format!("DHT {n}"));
    }
    let keymap = &app.options().keymap;
    let help_key = keymap.hint(Action::Help);
    let quit_key = keymap.hint(Action::Quit);
    let hint = Line::from(vec![
        Span::styled(help_key.clone(), theme.status_key()),
        Span::raw(" help  "),
        Span::styled(quit_key.clone(), theme.status_key()),
        Span::raw(" quit "),
    ]);
    let hint_width = hint.width();
    // the key hint keeps its place; figures fill what is left, whole or not at all
    let room = if width >= 60 {
        width.saturating_sub(hint_width + 1)
    } else {
        width
    };
    let mut used = 0;
    let mut left = Vec::new();
    for (i, figure) in figures.iter().enumerate() {
        let sep = if i == 0 { " " } else { "  " };
        let w = sep.len() + format::width(figure);
        if used + w > room {
            continue;
        }
        used += w;
        left.push(Span::raw(format!("{sep}{figure}")));
    }
    frame.render_widget(
        Paragraph::new(Line::from(left)).style(theme.status_bar()),
        area,
    );
    if used + 1 + hint_width <= width {
        frame.render_widget(hint.right_aligned(), area);
    }
}
