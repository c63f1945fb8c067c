//! The Trackers tab: URL (passkeys masked by the engine), tier, status, its last error or
//! warning, swarm counts and announce times.

use std::time::SystemTime;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Row, Table};

use crate::api::{TorrentDetail, TrackerStatus};
use crate::tui::app::Scroll;
use crate::tui::format;
use crate::tui::theme::{Role, Theme};

/// Draws the trackers of `detail` into `area`: one row per tracker, its message on a
/// second row when it has one.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
    theme: &Theme,
) {
    let Some(d) = detail else { return };
    let sym = theme.sym;
    if d.trackers.is_empty() {
        frame.render_widget(
            Line::styled(" no trackers (DHT and PEX only)", theme.dim()),
            area,
        );
        return;
    }
    let now = SystemTime::now();
    let visible = usize::from(area.height.saturating_sub(1)) / 2;
    let first = scroll.window(d.trackers.len(), visible.max(1));
    let widths = [
        Constraint::Length(4),
        Constraint::Fill(1),
        Constraint::Length(11),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(10),
    ];
    let header = Row::new([
        "Tier", "URL", "Status", "Seeds", "Leech", "Done", "Last", "Next",
    ])
    .style(theme.header());
    let n = |v: Option<u32>| v.map_or("-".to_owned(), |v| v.to_string());
    let url_width = usize::from(area.width.saturating_sub(4 + 11 + 7 * 3 + 20 + 7));
    let mut rows = Vec::new();
    for (i, t) in d
        .trackers
        .iter()
        .enumerate()
        .skip(first)
        .take(visible.max(1))
    {
        let status_style = match t.status {
            TrackerStatus::Working => theme.fg(Role::Good),
            TrackerStatus::Error => theme.error(),
            TrackerStatus::Unsupported => theme.warning(),
            _ => theme.dim(),
        };
        let mut row = Row::new(vec![
            Line::from((t.tier + 1).to_string()),
            Line::from(format::fit_with(&t.url, url_width, sym.ascii, sym.ellipsis)),
            Line::styled(t.status.label(), status_style),
            Line::from(n(t.seeds)).right_aligned(),
            Line::from(n(t.leechers)).right_aligned(),
            Line::from(n(t.downloaded)).right_aligned(),
            Line::from(format::relative(t.last_announce, now)),
            Line::from(format::relative(t.next_announce, now)),
        ]);
        if i == scroll.cursor {
            row = row.style(theme.selected());
        }
        rows.push(row);
        let message = t.message.as_deref().map_or_else(
            || format!("{} peers in the last answer", t.peers),
            |m| format::clean(m, sym.ascii),
        );
        let style = if t.message.is_some() {
            theme.warning()
        } else {
            theme.dim()
        };
        rows.push(Row::new(vec![Line::from(""), Line::styled(message, style)]));
    }
    frame.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}
