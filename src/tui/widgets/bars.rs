//! The bars around every screen's body: the top bar (the list's filters with their counts,
//! the category and tag filters, the sort and the search; or the detail view's tabs), the message line (the search line
//! being edited, a notice, the selected torrent's error or message, or its figures) and the
//! status bar (session rates and limits, peers, attempts the IP filter blocked, free space,
//! torrents, port, DHT, and the help and quit keys).

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::api::TorrentState;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::format;
use crate::tui::list::StateFilter;
use crate::tui::notice::NoticeLevel;
use crate::tui::screen::{Screen, Tab};
use crate::tui::theme::{Role, Theme};
use crate::units;

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

/// The list's top bar: filters with their counts, the sort, marks and the search.
pub(crate) fn top_bar_list(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let view = app.view();
    let counts = app.counts();
    let short = area.width < 100;
    let mut items = Vec::new();
    for (i, f) in StateFilter::ALL.iter().enumerate() {
        // the queue's filter only where queueing can matter
        if *f == StateFilter::Queued
            && counts[i] == 0
            && view.filter != StateFilter::Queued
            && !app.snapshot().global.queueing
        {
            continue;
        }
        // lower case, so the bar never reads like a row's state ("Seeding")
        let label = if short {
            match f {
                StateFilter::All => "all",
                StateFilter::Downloading => "down",
                StateFilter::Seeding => "seed",
                StateFilter::Paused => "paused",
                StateFilter::Queued => "queued",
                StateFilter::Checking => "check",
                StateFilter::Error => "error",
            }
        } else {
            match f {
                StateFilter::All => "all",
                StateFilter::Downloading => "downloading",
                StateFilter::Seeding => "seeding",
                StateFilter::Paused => "paused",
                StateFilter::Queued => "queued",
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
    let bold = theme
        .selected()
        .add_modifier(ratatui::style::Modifier::BOLD);
    for (what, f) in [("category", &view.category), ("tag", &view.tag)] {
        if let Some(label) = f.label() {
            let label = if label == "-" { "none" } else { label };
            let label = format::fit_with(label, 16, theme.sym.ascii, theme.sym.ellipsis);
            items.push((format!(" {what}: {label} "), bold));
        }
    }
    let (asc, desc) = theme.sym.sort;
    let dir = if view.descending() { desc } else { asc };
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

/// The detail view's top bar: the tabs, with the counts of peers, files and trackers.
pub(crate) fn top_bar_tabs(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let detail = app.detail();
    let mut items = Vec::new();
    for tab in Tab::ALL {
        let count = match (tab, detail) {
            (Tab::Peers, Some(d)) => format!(" {}", d.peers.len() + d.web_seeds.len()),
            (Tab::Files, Some(d)) => format!(" {}", d.files.len()),
            (Tab::Trackers, Some(d)) => format!(" {}", d.trackers.len() + d.web_seeds.len()),
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

/// The message line: the search being edited, a notice, or the selected torrent's error,
/// message or figures.
pub(crate) fn message_line(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
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
    let Some((text, style, wraps)) = message(app, theme) else {
        return;
    };
    if wraps && area.height > 1 {
        // wrapped a cell in, as the one-line form starts
        let lines: Vec<Line> = format::wrap_with(
            &text,
            width.saturating_sub(1),
            usize::from(area.height),
            sym.ascii,
            sym.ellipsis,
        )
        .into_iter()
        .map(|l| Line::styled(format!(" {l}"), style))
        .collect();
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    let line = format::fit_with(&text, width, sym.ascii, sym.ellipsis);
    frame.render_widget(Line::styled(line, style), area);
}

/// Most lines the message line takes for an error that does not fit in one.
const MESSAGE_MAX_LINES: usize = 3;

/// Lines the message line needs at `width` cells on a screen of `height` rows: one, or up
/// to [`MESSAGE_MAX_LINES`] for a notice (information or error) or the selected torrent's
/// error that would be cut in one, so what happened and what to do are read whole at 80
/// columns; always one on a screen under 20 rows.
pub(crate) fn message_height(app: &App, theme: &Theme, width: u16, height: u16) -> u16 {
    if app.searching() || height < 20 {
        return 1;
    }
    match message(app, theme) {
        Some((text, _, true)) if format::width(&text) > usize::from(width) => {
            let sym = theme.sym;
            let n = format::wrap_with(
                &text,
                usize::from(width).saturating_sub(1),
                MESSAGE_MAX_LINES,
                sym.ascii,
                sym.ellipsis,
            )
            .len();
            n.clamp(1, MESSAGE_MAX_LINES) as u16
        }
        _ => 1,
    }
}

/// What the message line shows (the search aside): a notice, or the selected torrent's
/// error, message or figures, with its style and whether it may wrap (errors do).
fn message(app: &App, theme: &Theme) -> Option<(String, Style, bool)> {
    let sym = theme.sym;
    if let Some((text, level)) = app.notice_level() {
        let style = match level {
            NoticeLevel::Info => theme.fg(Role::Good),
            NoticeLevel::Error => theme.error(),
        };
        // more to read after this one: said first, so a long text cannot cut it off
        let more = match app.notices_queued() {
            0 => String::new(),
            n => format!(" [+{n} more]"),
        };
        // a notice is read whole too (it says what just happened and what to do): it
        // wraps like an error
        return Some((format!("{more} {text}"), style, true));
    }
    let Some(row) = app.selected_row() else {
        if app.screen() == Screen::List && app.visible_len() == 0 && !app.snapshot().rows.is_empty()
        {
            let line = format!(
                " nothing matches; {}: clear the filter and search",
                app.options().keymap.hint(Action::ClearMarks)
            );
            return Some((line, theme.dim(), false));
        }
        return None;
    };
    Some(if let Some(err) = &row.error {
        let key = app.options().keymap.hint(Action::TogglePause);
        (
            format!(
                " Error: {} — {} ({key} resumes)",
                err.message,
                err.kind.hint()
            ),
            theme.error(),
            true,
        )
    } else if let Some(m) = &row.message {
        let error = row.state == TorrentState::Error;
        (
            format!(" {m}"),
            if error {
                theme.error()
            } else {
                theme.warning()
            },
            error,
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
            false,
        )
    })
}

/// The status bar: session figures that fit, whole, and the help and quit keys.
pub(crate) fn status_bar(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let width = usize::from(area.width);
    let snapshot = app.snapshot();
    let g = &snapshot.global;
    let sym = theme.sym;
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
    // the rates with their limits: "(max 10.0 MiB/s)", or "≤10.0 MiB/s" when both would
    // not fit beside the turtle otherwise (80 columns with alternative speeds on)
    let rates = |short: bool| {
        let limit = |v: u64| match (v, short) {
            (0, _) => String::new(),
            (v, false) => format!(" (max {})", units::rate(v)),
            (v, true) => format!(" {}{}", if sym.ascii { "<=" } else { "≤" }, units::rate(v)),
        };
        [
            format!(
                "{} {}{}",
                sym.down,
                units::rate(g.down_rate),
                limit(g.down_limit)
            ),
            format!("{} {}{}", sym.up, units::rate(g.up_rate), limit(g.up_limit)),
        ]
    };
    let turtle = if sym.ascii { "ALT" } else { "🐢 alt" };
    let lead_width = if g.alt_speed {
        2 + format::width(turtle)
    } else {
        0
    };
    let full = rates(false);
    let fits = lead_width + full.iter().map(|f| 2 + format::width(f)).sum::<usize>() <= room + 1;
    // alternative speeds on: the turtle first, the limits in effect follow with the rates
    let lead = usize::from(g.alt_speed);
    let mut figures: Vec<String> = Vec::new();
    if g.alt_speed {
        figures.push(turtle.to_owned());
    }
    figures.extend(if fits { full } else { rates(true) });
    figures.push(format!("peers {}", g.peers));
    // only while an IP filter is loaded (0 then says it blocked nothing yet)
    if g.ip_filter_ranges.is_some() {
        figures.push(format!("blocked {}", g.blocked));
    }
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
    // what goes first when the room is short: the torrent count, the DHT and free space
    // before the listen port (with --port 0 the bar is the only place it shows)
    let port = figures
        .iter()
        .position(|f| f.starts_with("port "))
        .unwrap_or(0);
    let mut order: Vec<usize> = (0..figures.len()).collect();
    order.sort_by_key(|&i| if i <= 1 + lead || i == port { 0 } else { i });
    let mut kept = vec![false; figures.len()];
    let mut used = 0;
    for i in order {
        // two cells of separator each, but one before the first (the `+ 1`)
        let w = 2 + format::width(&figures[i]);
        if used + w <= room + 1 {
            used += w;
            kept[i] = true;
        }
    }
    let mut left = Vec::new();
    used = 0;
    for (figure, _) in figures.iter().zip(&kept).filter(|(_, k)| **k) {
        let sep = if left.is_empty() { " " } else { "  " };
        used += sep.len() + format::width(figure);
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
