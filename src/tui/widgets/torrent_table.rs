//! The torrent list: one row per torrent with name, size, progress bar, rates, ETA, peers
//! and state. Only the rows that fit on screen are built; the scroll offset follows the
//! selection. Columns that do not fit are dropped by priority, so a narrow terminal keeps
//! Name, Progress and State.

use std::cell::Cell;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{HighlightSpacing, Paragraph, Row, Table, TableState};

use crate::api::{TorrentRow, TorrentState};
use crate::tui::{format, theme};

/// A column of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Name,
    Size,
    Progress,
    Down,
    Up,
    Eta,
    Peers,
    State,
}

/// Every column in display order: header and fixed width in cells (Name takes the rest).
const COLUMNS: [(Column, &str, u16); 8] = [
    (Column::Name, "Name", 0),
    (Column::Size, "Size", 8),
    (Column::Progress, "Progress", 14),
    (Column::Down, "↓ Rate", 10),
    (Column::Up, "↑ Rate", 10),
    (Column::Eta, "ETA", 7),
    (Column::Peers, "Peers", 9),
    (Column::State, "State", 11),
];

/// Columns given up, first to last, while Name would be narrower than [`MIN_NAME`].
const DROP_ORDER: [Column; 7] = [
    Column::Peers,
    Column::Up,
    Column::Size,
    Column::Eta,
    Column::Down,
    Column::Progress,
    Column::State,
];

/// Narrowest Name column worth keeping other columns for, in cells.
const MIN_NAME: u16 = 12;
/// Blank cells between columns.
const SPACING: u16 = 1;
/// Cells of a progress cell taken by the percentage: a space and up to `"99.9%"`.
const PERCENT_CELLS: u16 = 6;

/// Draws the list (or, with no torrents, a hint on how to add one) into `area`.
///
/// `selected` is an index into `rows`; `offset` is the first visible row, kept across frames
/// and moved just enough to keep the selection visible.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    rows: &[std::sync::Arc<TorrentRow>],
    selected: Option<usize>,
    offset: &Cell<usize>,
) {
    if rows.is_empty() {
        offset.set(0);
        render_empty(frame, area);
        return;
    }
    let visible = usize::from(area.height.saturating_sub(1)); // minus the header row
    let first = scroll_offset(offset.get(), selected, rows.len(), visible);
    offset.set(first);

    let columns = columns(area.width);
    let header = Row::new(columns.iter().map(|&(column, width)| {
        let title = COLUMNS
            .iter()
            .find(|(c, _, _)| *c == column)
            .map_or("", |(_, t, _)| *t);
        align(column, Line::from(format::fit(title, usize::from(width))))
    }))
    .style(theme::HEADER);
    let body = rows
        .iter()
        .skip(first)
        .take(visible)
        .map(|row| torrent_row(row, &columns));
    let table = Table::new(body, columns.iter().map(|&(_, w)| Constraint::Length(w)))
        .header(header)
        .column_spacing(SPACING)
        .row_highlight_style(theme::SELECTED)
        .highlight_symbol(theme::SELECTED_SYMBOL)
        .highlight_spacing(HighlightSpacing::Always);
    let mut state = TableState::new().with_selected(
        selected
            .and_then(|s| s.checked_sub(first))
            .filter(|s| *s < visible),
    );
    frame.render_stateful_widget(table, area, &mut state);
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
        if sel < first {
            first = sel;
        } else if visible > 0 && sel >= first + visible {
            first = sel + 1 - visible;
        }
    }
    first.min(len.saturating_sub(visible))
}

/// The columns shown at `width` cells, with their widths; Name gets what the others leave.
fn columns(width: u16) -> Vec<(Column, u16)> {
    let symbol = format::width(theme::SELECTED_SYMBOL) as u16;
    let available = width.saturating_sub(symbol);
    let mut shown: Vec<Column> = COLUMNS.iter().map(|(c, _, _)| *c).collect();
    for drop in DROP_ORDER {
        if name_width(&shown, available) >= MIN_NAME {
            break;
        }
        shown.retain(|c| *c != drop);
    }
    let name = name_width(&shown, available);
    shown
        .into_iter()
        .map(|c| (c, if c == Column::Name { name } else { fixed(c) }))
        .collect()
}

fn fixed(column: Column) -> u16 {
    COLUMNS
        .iter()
        .find(|(c, _, _)| *c == column)
        .map_or(0, |(_, _, w)| *w)
}

fn name_width(shown: &[Column], available: u16) -> u16 {
    let others: u16 = shown.iter().map(|c| fixed(*c)).sum();
    let gaps = SPACING.saturating_mul(shown.len().saturating_sub(1) as u16);
    available.saturating_sub(others).saturating_sub(gaps)
}

fn torrent_row<'a>(row: &TorrentRow, columns: &[(Column, u16)]) -> Row<'a> {
    Row::new(columns.iter().map(|&(column, width)| {
        let line = match column {
            Column::Name => Line::from(format::fit(&row.name, usize::from(width))),
            Column::Size => Line::from(format::size(row.size)),
            Column::Progress => progress(row, width),
            Column::Down => Line::styled(format::rate_or_dash(row.down_rate), theme::DOWN),
            Column::Up => Line::styled(format::rate_or_dash(row.up_rate), theme::UP),
            Column::Eta => Line::from(eta(row)),
            Column::Peers => Line::from(peers(row)),
            Column::State => Line::styled(row.state.label(), theme::state(row)),
        };
        align(column, line)
    }))
}

/// Right-aligns numeric columns.
fn align(column: Column, line: Line<'_>) -> Line<'_> {
    match column {
        Column::Size | Column::Down | Column::Up | Column::Eta | Column::Peers => {
            line.right_aligned()
        }
        Column::Name | Column::Progress | Column::State => line,
    }
}

/// A bar (`━` done, `─` to do) followed by the percentage, `width` cells in all.
fn progress(row: &TorrentRow, width: u16) -> Line<'static> {
    let percent = format::percent(row.done, row.size);
    let bar = usize::from(width.saturating_sub(PERCENT_CELLS));
    if bar == 0 {
        return Line::from(percent);
    }
    let filled = if row.done >= row.size {
        bar
    } else {
        // u128: done * bar cannot overflow; done < size so the result is < bar.
        (u128::from(row.done) * bar as u128 / u128::from(row.size)) as usize
    };
    Line::from(vec![
        Span::styled("━".repeat(filled), theme::BAR_FILLED),
        Span::styled("─".repeat(bar - filled), theme::BAR_EMPTY),
        Span::raw(format!(" {percent:>5}")),
    ])
}

/// Estimated time left: the engine's estimate, `"∞"` while downloading without one (no
/// rate), `"-"` otherwise.
fn eta(row: &TorrentRow) -> String {
    match (row.eta_secs, row.state) {
        (Some(secs), _) => format::eta(secs),
        (None, TorrentState::Downloading) => "∞".to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// Connected peers: `"3 (1)"` = 3 connected of which 1 seeder; once a tracker reported the
/// swarm size, `"3/10"` = 3 connected of 10 in the swarm (seeders + leechers).
fn peers(row: &TorrentRow) -> String {
    match (row.swarm_seeds, row.swarm_leechers) {
        (None, None) => format!("{} ({})", row.peers, row.seeds),
        (seeds, leechers) => {
            let swarm = seeds.unwrap_or(0).saturating_add(leechers.unwrap_or(0));
            format!("{}/{}", row.peers, swarm)
        }
    }
}

fn render_empty(frame: &mut Frame, area: Rect) {
    let lines = vec![
        Line::styled("No torrents yet.", theme::TITLE),
        Line::from(""),
        Line::from(vec![
            Span::raw("Add one with  "),
            Span::styled("ratorrent FILE.torrent", theme::KEY),
        ]),
    ];
    let height = lines.len() as u16;
    let hint = Paragraph::new(lines).centered();
    frame.render_widget(hint, area.centered_vertically(Constraint::Length(height)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_moves_only_to_keep_the_selection_visible() {
        // 10 rows, 4 visible.
        assert_eq!(scroll_offset(0, Some(3), 10, 4), 0);
        assert_eq!(scroll_offset(0, Some(4), 10, 4), 1);
        assert_eq!(scroll_offset(0, Some(9), 10, 4), 6);
        // Moving up inside the window keeps the window.
        assert_eq!(scroll_offset(6, Some(7), 10, 4), 6);
        assert_eq!(scroll_offset(6, Some(5), 10, 4), 5);
        // Rows removed: no blank lines at the bottom.
        assert_eq!(scroll_offset(6, Some(2), 5, 4), 1);
        assert_eq!(scroll_offset(6, None, 3, 4), 0);
        // Zero-height area does not panic or move.
        assert_eq!(scroll_offset(2, Some(5), 10, 0), 2);
    }

    #[test]
    fn columns_fill_the_width_and_drop_by_priority() {
        for width in [0u16, 1, 10, 20, 40, 60, 80, 100, 200, 500] {
            let cols = columns(width);
            let used: u16 =
                cols.iter().map(|(_, w)| *w).sum::<u16>() + SPACING * (cols.len() as u16 - 1) + 1;
            if width >= 40 {
                assert_eq!(used, width, "width {width}");
            }
            assert_eq!(cols.first().map(|c| c.0), Some(Column::Name));
        }
        let at_100: Vec<Column> = columns(100).iter().map(|c| c.0).collect();
        assert_eq!(at_100.len(), 8);
        let at_40: Vec<Column> = columns(40).iter().map(|c| c.0).collect();
        assert_eq!(
            at_40,
            vec![Column::Name, Column::Progress, Column::State],
            "narrow terminals keep name, progress and state"
        );
    }

    #[test]
    fn progress_bar_is_proportional() {
        let row = TorrentRow {
            size: 100,
            done: 50,
            ..TorrentRow::default()
        };
        let line = progress(&row, 14);
        assert_eq!(line.to_string(), "━━━━──── 50.0%");
        assert_eq!(line.width(), 14);
        let done = TorrentRow {
            size: 100,
            done: 100,
            ..TorrentRow::default()
        };
        assert_eq!(progress(&done, 14).to_string(), "━━━━━━━━  100%");
        assert_eq!(progress(&done, 5).to_string(), "100%");
    }

    #[test]
    fn peers_show_seeds_or_swarm() {
        let mut row = TorrentRow {
            peers: 3,
            seeds: 1,
            ..TorrentRow::default()
        };
        assert_eq!(peers(&row), "3 (1)");
        row.swarm_seeds = Some(4);
        row.swarm_leechers = Some(6);
        assert_eq!(peers(&row), "3/10");
    }
}
