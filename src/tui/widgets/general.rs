//! The General tab: what the torrent is and where it is stored, its figures and dates, and,
//! for a torrent in error, what happened and what to do.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::api::TorrentDetail;
use crate::tui::action::Action;
use crate::tui::app::{App, Scroll};
use crate::tui::format;
use crate::units;

fn lines(app: &App, detail: Option<&TorrentDetail>) -> Vec<Line<'static>> {
    let theme = &app.options().theme;
    let sym = theme.sym;
    let Some(row) = app.selected_row() else {
        return Vec::new();
    };
    let clean = |s: &str| format::clean(s, sym.ascii);
    let mut out: Vec<(String, String, Style)> = Vec::new();
    let plain = Style::new();
    if let Some(err) = &row.error {
        let key = app.options().keymap.hint(Action::TogglePause);
        out.push(("Error".into(), clean(&err.message), theme.error()));
        out.push((
            "What to do".into(),
            format!("{} ({key} resumes)", err.kind.hint()),
            theme.error(),
        ));
    }
    if let Some(m) = &row.message {
        out.push(("Tracker".into(), clean(m), theme.warning()));
    }
    out.push(("Name".into(), clean(&row.name), theme.title()));
    // the name shown is the one used on disk: say when it is not the torrent's own
    if let Some(why) = detail.and_then(|d| d.name_changed.as_deref()) {
        out.push((
            "Renamed".into(),
            clean(&format!("changed from the torrent's name: {why}")),
            theme.warning(),
        ));
    }
    out.push(("State".into(), row.state.label().into(), theme.state(row)));
    out.push(("Info hash".into(), row.info_hash.clone(), plain));
    if let Some(d) = detail {
        out.push((
            "Save path".into(),
            clean(&d.save_path.display().to_string()),
            plain,
        ));
    }
    let piece_len = detail.map_or(String::new(), |d| {
        format!(" of {}", units::size(u64::from(d.piece_length)))
    });
    out.push((
        "Size".into(),
        format!(
            "{} ({} pieces{piece_len})",
            units::size(row.size),
            row.pieces_total
        ),
        plain,
    ));
    out.push((
        "Progress".into(),
        format!(
            "{} ({} of {}), {}/{} pieces",
            format::percent(row.done, row.size),
            units::size(row.done),
            units::size(row.size),
            row.pieces_have,
            row.pieces_total
        ),
        plain,
    ));
    let wasted = detail.map_or(String::new(), |d| {
        format!(", wasted {}", units::size(d.wasted))
    });
    out.push((
        "Transferred".into(),
        format!(
            "{} {}  {} {}  ratio {}{wasted}",
            sym.down,
            units::size(row.downloaded),
            sym.up,
            units::size(row.uploaded),
            format::ratio(row.ratio())
        ),
        plain,
    ));
    let lim = |v: u64| {
        if v == 0 {
            "unlimited".to_owned()
        } else {
            units::rate(v)
        }
    };
    out.push((
        "Rates".into(),
        format!(
            "{} {} (limit {})  {} {} (limit {})",
            sym.down,
            units::rate(row.down_rate),
            lim(row.down_limit),
            sym.up,
            units::rate(row.up_rate),
            lim(row.up_limit)
        ),
        plain,
    ));
    out.push((
        "Peers".into(),
        format!(
            "{} connected, {} seeds; swarm {} seeds, {} leechers",
            row.peers,
            row.seeds,
            row.swarm_seeds.map_or("?".into(), |n| n.to_string()),
            row.swarm_leechers.map_or("?".into(), |n| n.to_string())
        ),
        plain,
    ));
    if let Some(d) = detail
        && !d.peer_sources.is_empty()
    {
        let parts: Vec<String> = d
            .peer_sources
            .iter()
            .map(|c| format!("{} {}/{}", c.source.label(), c.connected, c.known))
            .collect();
        out.push((
            "Sources".into(),
            format!("{} (connected/known)", parts.join(", ")),
            plain,
        ));
    }
    out.push((
        "Added".into(),
        format::date_time(i64::try_from(row.added_at).unwrap_or(0)),
        plain,
    ));
    if let Some(d) = detail {
        out.push((
            "Created".into(),
            d.creation_date.map_or("-".into(), format::date_time),
            plain,
        ));
        out.push((
            "Created by".into(),
            d.created_by.as_deref().map_or("-".into(), clean),
            plain,
        ));
        out.push((
            "Comment".into(),
            d.comment.as_deref().map_or("-".into(), clean),
            plain,
        ));
        out.push((
            "Private".into(),
            if d.private {
                "yes (no DHT, no PEX)"
            } else {
                "no"
            }
            .into(),
            plain,
        ));
    } else {
        out.push((
            "".into(),
            "waiting for the engine's detail of this torrent…".into(),
            theme.dim(),
        ));
    }
    out.into_iter()
        .map(|(label, value, style)| {
            Line::from(vec![
                Span::styled(format!(" {label:<12} "), theme.dim()),
                Span::styled(value, style),
            ])
        })
        .collect()
}

/// Lines of the tab (for scrolling).
pub(crate) fn line_count(app: &App, detail: Option<&TorrentDetail>) -> usize {
    lines(app, detail).len()
}

/// Draws the tab into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
) {
    let lines = lines(app, detail);
    let visible = usize::from(area.height);
    let first = scroll.cursor.min(lines.len().saturating_sub(visible));
    scroll.offset.set(first);
    scroll.height.set(visible);
    let theme = &app.options().theme;
    let width = usize::from(area.width);
    // cut every line to the width (values can be long paths)
    let shown: Vec<Line<'static>> = lines
        .into_iter()
        .skip(first)
        .take(visible)
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            if format::width(&text) <= width {
                l
            } else {
                let style = l.spans.last().map_or(Style::new(), |s| s.style);
                Line::styled(
                    format::fit_with(&text, width, theme.sym.ascii, theme.sym.ellipsis),
                    style,
                )
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), area);
}
