//! The torrent list: one row per torrent shown (after filter and search, in the sort
//! order), only the rows that fit are built. Columns that do not fit are dropped by
//! priority, so a narrow terminal keeps Name, Progress and State; names are cut by display
//! width, so CJK and emoji names keep the columns aligned.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table};

use crate::api::{TorrentRow, TorrentState};
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::format;
use crate::tui::list::SortColumn;
use crate::tui::scroll::scroll_offset;
use crate::tui::theme::{Role, Theme};
use crate::units;

use super::parts::row_progress_line;

/// A column of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Queue,
    Name,
    Size,
    Progress,
    State,
    Down,
    Up,
    Eta,
    Ratio,
    Seeds,
    Peers,
    Added,
    Category,
    Tags,
}

/// Every column in display order: header, fixed width in cells (Name takes the rest), the
/// sort column it stands for.
const COLUMNS: [(Column, &str, u16, SortColumn); 14] = [
    (Column::Queue, "#", 4, SortColumn::Queue),
    (Column::Name, "Name", 0, SortColumn::Name),
    (Column::Size, "Size", 9, SortColumn::Size),
    (Column::Progress, "Progress", 13, SortColumn::Progress),
    (Column::State, "State", 11, SortColumn::State),
    (Column::Down, "DOWN", 11, SortColumn::Down),
    (Column::Up, "UP", 11, SortColumn::Up),
    (Column::Eta, "ETA", 8, SortColumn::Eta),
    (Column::Ratio, "Ratio", 6, SortColumn::Ratio),
    (Column::Seeds, "Seeds", 10, SortColumn::Seeds),
    (Column::Peers, "Peers", 8, SortColumn::Peers),
    (Column::Added, "Added", 10, SortColumn::Added),
    (Column::Category, "Category", 10, SortColumn::Category),
    (Column::Tags, "Tags", 11, SortColumn::Tags),
];

/// One way to give Name more room.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Give the column up.
    Drop(Column),
    /// Show Progress as its percentage only ([`NARROW_PROGRESS`] cells, no bar).
    NarrowProgress,
}

/// What is given up, first to last, while Name would be narrower than it wants: chosen for
/// a seeding user as much as a downloading one, so the upload rate, the ratio and the
/// peers stay at 80 columns (the bar goes first), and at 120 only Seeds and Added go.
///
/// Category and Tags are offered only while some torrent has one (see [`render`]); at 120
/// columns they take the place of Size and ETA, at 80 they go before the bar narrows.
const STEPS: [Step; 14] = [
    Step::Drop(Column::Added),
    Step::Drop(Column::Seeds),
    Step::Drop(Column::Size),
    Step::Drop(Column::Eta),
    Step::Drop(Column::Tags),
    Step::Drop(Column::Category),
    Step::NarrowProgress,
    Step::Drop(Column::Queue),
    Step::Drop(Column::Peers),
    Step::Drop(Column::Ratio),
    Step::Drop(Column::Up),
    Step::Drop(Column::Down),
    Step::Drop(Column::Progress),
    Step::Drop(Column::State),
];

/// Progress as a percentage only, in cells.
const NARROW_PROGRESS: u16 = 6;

/// Narrowest Name column worth keeping other columns for, in cells; wider terminals keep a
/// fifth of their width for it.
const MIN_NAME: u16 = 16;
/// Blank cells between columns.
const SPACING: u16 = 1;
/// Cells before the first column: selection marker and mark.
const GUTTER: u16 = 2;

/// Draws the list (or, with no torrents, a hint on how to add one) into `area`.
pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.options().theme;
    let scrolls = app.scrolls();
    let len = app.visible_len();
    if len == 0 {
        scrolls.list.offset.set(0);
        render_empty(frame, area, app);
        return;
    }
    let visible = usize::from(area.height.saturating_sub(1));
    let selected = app.selected_pos();
    let first = scroll_offset(scrolls.list.offset.get(), selected, len, visible);
    scrolls.list.offset.set(first);
    scrolls.list.height.set(visible);
    scrolls.list_top.set(area.y + 1);

    // the queue's places mean something only while queueing is on
    let queueing = app.snapshot().global.queueing;
    let picked: Vec<SortColumn> = (labelled_columns(app).into_iter())
        .filter(|c| queueing || *c != SortColumn::Queue)
        .collect();
    let columns = columns(area.width, &picked);
    scrolls.list_sorts.set(
        columns
            .iter()
            .filter_map(|&(column, _)| COLUMNS.iter().find(|c| c.0 == column))
            .fold(0, |set, c| set | c.3.bit()),
    );
    let view = app.view();
    let sym = theme.sym;
    let header = Row::new(std::iter::once(Line::from("")).chain(columns.iter().map(
        |&(column, width)| {
            let (_, title, _, sort) = COLUMNS
                .iter()
                .find(|c| c.0 == column)
                .copied()
                .unwrap_or(COLUMNS[0]);
            let title = match column {
                // the percentage without its bar
                Column::Progress if width == NARROW_PROGRESS => "Done".to_owned(),
                Column::Down => format!("{} Rate", sym.down),
                Column::Up => format!("{} Rate", sym.up),
                _ => title.to_owned(),
            };
            let marker =
                if sort == view.sort && !(sort == SortColumn::Added && column != Column::Added) {
                    if view.descending() {
                        sym.sort.1
                    } else {
                        sym.sort.0
                    }
                } else {
                    ""
                };
            let text = format::fit_with(
                &format!("{title}{marker}"),
                usize::from(width),
                sym.ascii,
                sym.ellipsis,
            );
            align(column, Line::from(text))
        },
    )))
    .style(theme.header());
    let marks = app.marks();
    let header_area = Rect { height: 1, ..area };
    let widths = std::iter::once(Constraint::Length(GUTTER - SPACING))
        .chain(columns.iter().map(|&(_, w)| Constraint::Length(w)));
    frame.render_widget(
        Table::new(Vec::<Row>::new(), widths)
            .header(header)
            .column_spacing(SPACING),
        header_area,
    );
    // The body is written straight into the buffer: only the visible rows, no per-cell
    // widgets (this is the hot path with thousands of torrents).
    let buf = frame.buffer_mut();
    for (i, row) in app.visible_range(first, visible).enumerate() {
        let pos = first + i;
        let y = area.y + 1 + i as u16;
        if y >= area.bottom() {
            break;
        }
        let row_area = Rect {
            y,
            height: 1,
            ..area
        };
        let is_sel = Some(pos) == selected;
        put(
            buf,
            area.x,
            y,
            1,
            if is_sel { ">" } else { " " },
            Style::new(),
            false,
        );
        if marks.contains(&row.id) {
            put(buf, area.x + 1, y, 1, sym.mark, theme.fg(Role::Mark), false);
        }
        let mut x = area.x + GUTTER;
        for &(column, width) in &columns {
            if x >= area.right() {
                break;
            }
            let w = width.min(area.right() - x);
            draw_cell(buf, x, y, w, column, row, theme);
            x = x.saturating_add(width + SPACING);
        }
        if is_sel {
            buf.set_style(row_area, theme.selected());
        }
    }
}

/// Writes `text` (already clean and fitted) at `x`,`y` within `width` cells, right-aligned
/// when `right`. ASCII text is written cell by cell; anything else goes through ratatui's
/// grapheme-aware writer (wide characters take two cells).
fn put(buf: &mut Buffer, x: u16, y: u16, width: u16, text: &str, style: Style, right: bool) {
    if width == 0 {
        return;
    }
    if text.is_ascii() {
        let len = text.len().min(usize::from(width)) as u16;
        let start = if right { x + width - len } else { x };
        for (i, b) in text.bytes().take(usize::from(len)).enumerate() {
            let cell = &mut buf[(start + i as u16, y)];
            cell.set_char(char::from(b));
            cell.set_style(style);
        }
    } else {
        let w = (format::width(text) as u16).min(width);
        let start = if right { x + width - w } else { x };
        buf.set_stringn(start, y, text, usize::from(width), style);
    }
}

fn draw_cell(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    width: u16,
    column: Column,
    row: &TorrentRow,
    theme: &Theme,
) {
    let sym = theme.sym;
    let plain = Style::new();
    let right = align_right(column);
    match column {
        Column::Progress => {
            let line = row_progress_line(row, width, theme);
            buf.set_line(x, y, &line, width);
        }
        Column::Name => {
            let name = format::fit_with(&row.name, usize::from(width), sym.ascii, sym.ellipsis);
            put(buf, x, y, width, &name, plain, false);
        }
        Column::State => put(
            buf,
            x,
            y,
            width,
            state_label(row, width),
            theme.state(row),
            false,
        ),
        Column::Down => put(
            buf,
            x,
            y,
            width,
            &rate(row.down_rate, row.down_limit),
            theme.fg(Role::Down),
            right,
        ),
        Column::Up => put(
            buf,
            x,
            y,
            width,
            &rate(row.up_rate, row.up_limit),
            theme.fg(Role::Up),
            right,
        ),
        other => {
            let text = match other {
                Column::Size if !row.size_known() => sym.unknown.to_owned(),
                Column::Size => units::size(row.size),
                Column::Eta => eta(row, theme),
                Column::Ratio => format::ratio(row.ratio()),
                Column::Seeds => swarm(row.seeds, row.swarm_seeds),
                Column::Peers => swarm_fit(row.peers, swarm_size(row), width),
                Column::Queue => row.queue_pos.to_string(),
                Column::Category => {
                    format::fit_with(&row.category, usize::from(width), sym.ascii, sym.ellipsis)
                }
                Column::Tags => format::fit_with(
                    &row.tags.join(","),
                    usize::from(width),
                    sym.ascii,
                    sym.ellipsis,
                ),
                _ => format::date(i64::try_from(row.added_at).unwrap_or(0)),
            };
            put(buf, x, y, width, &text, plain, right);
        }
    }
}

fn align_right(column: Column) -> bool {
    matches!(
        column,
        Column::Size
            | Column::Queue
            | Column::Down
            | Column::Up
            | Column::Eta
            | Column::Ratio
            | Column::Seeds
            | Column::Peers
    )
}

/// A row's state in `width` cells: in full when it fits, else its short form
/// ("Fetching metadata" becomes "Metadata"); a torrent the disk guard paused reads
/// "Disk full", one a seeding goal stopped "Done", not like one the user paused.
fn state_label(row: &TorrentRow, width: u16) -> &'static str {
    let state = row.state;
    if state == TorrentState::Paused {
        match row.paused_by {
            Some(crate::api::PauseCause::DiskGuard(_)) => return "Disk full",
            // a seeding goal stopped it: done
            Some(crate::api::PauseCause::Goal(_)) => return "Done",
            None => {}
        }
    }
    let full = state.label();
    if row.forced {
        // qBittorrent's "[F] Downloading": runs whatever the queue says
        let forced = match state {
            TorrentState::Downloading => Some(("[F] Downloading", "[F] Down")),
            TorrentState::Seeding => Some(("[F] Seeding", "[F] Seed")),
            TorrentState::FetchingMetadata => Some(("[F] Metadata", "[F] Meta")),
            _ => None,
        };
        if let Some((long, short)) = forced {
            return if long.len() <= usize::from(width) {
                long
            } else {
                short
            };
        }
    }
    match state {
        TorrentState::FetchingMetadata if full.len() > usize::from(width) => "Metadata",
        _ => full,
    }
}

/// The config's columns, less Category and Tags while no torrent has a category (a tag):
/// an empty column would only take room from the names.
fn labelled_columns(app: &App) -> Vec<SortColumn> {
    let rows = &app.snapshot().rows;
    let any_category = rows.iter().any(|r| !r.category.is_empty());
    let any_tag = rows.iter().any(|r| !r.tags.is_empty());
    app.options()
        .columns
        .iter()
        .copied()
        .filter(|c| match c {
            SortColumn::Category => any_category,
            SortColumn::Tags => any_tag,
            _ => true,
        })
        .collect()
}

/// The columns shown at `width` cells out of those `picked` (the config's; Name always),
/// with their widths; Name gets what the others leave.
pub(crate) fn columns(width: u16, picked: &[SortColumn]) -> Vec<(Column, u16)> {
    let available = width.saturating_sub(GUTTER);
    let mut shown: Vec<(Column, u16)> = COLUMNS
        .iter()
        .filter(|c| c.0 == Column::Name || picked.contains(&c.3))
        .map(|c| (c.0, c.2))
        .collect();
    let want = MIN_NAME.max(width / 5);
    for step in STEPS {
        if name_width(&shown, available) >= want {
            break;
        }
        match step {
            Step::Drop(column) => shown.retain(|c| c.0 != column),
            Step::NarrowProgress => {
                for c in shown.iter_mut().filter(|c| c.0 == Column::Progress) {
                    c.1 = NARROW_PROGRESS;
                }
            }
        }
    }
    let name = name_width(&shown, available);
    for c in shown.iter_mut().filter(|c| c.0 == Column::Name) {
        c.1 = name;
    }
    shown
}

fn name_width(shown: &[(Column, u16)], available: u16) -> u16 {
    let others: u16 = shown
        .iter()
        .filter(|c| c.0 != Column::Name)
        .map(|c| c.1)
        .sum();
    let gaps = SPACING.saturating_mul(shown.len().saturating_sub(1) as u16);
    available.saturating_sub(others).saturating_sub(gaps)
}

/// A rate, `"-"` for zero, with `*` when the torrent has its own limit.
fn rate(rate: u64, limit: u64) -> String {
    let mut s = units::rate_or_dash(rate);
    if limit > 0 {
        s.push('*');
    }
    s
}

/// Right-aligns numeric columns.
fn align(column: Column, line: Line<'_>) -> Line<'_> {
    if align_right(column) {
        line.right_aligned()
    } else {
        line
    }
}

/// Estimated time left: the engine's estimate, infinity while downloading without one (no
/// rate), `"-"` otherwise.
fn eta(row: &TorrentRow, theme: &Theme) -> String {
    match (row.eta_secs, row.state) {
        (Some(secs), _) if secs < units::DURATION_MAX_SECS => units::duration(secs),
        (Some(_), _) | (None, TorrentState::Downloading) => theme.sym.infinity.to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// Everyone in the swarm a tracker reported, seeds and leechers, if one did.
fn swarm_size(row: &TorrentRow) -> Option<u32> {
    match (row.swarm_seeds, row.swarm_leechers) {
        (None, None) => None,
        (s, l) => Some(s.unwrap_or(0).saturating_add(l.unwrap_or(0))),
    }
}

/// [`swarm`] in `width` cells: the swarm's count goes when it does not fit.
fn swarm_fit(connected: u32, swarm_count: Option<u32>, width: u16) -> String {
    let text = swarm(connected, swarm_count);
    if text.len() <= usize::from(width) {
        text
    } else {
        connected.to_string()
    }
}

/// Connected and, once a tracker reported it, in the swarm: `"5 (120)"` or `"5"`.
pub(crate) fn swarm(connected: u32, swarm: Option<u32>) -> String {
    match swarm {
        Some(n) => format!("{connected} ({n})"),
        None => connected.to_string(),
    }
}

fn render_empty(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.options().theme;
    let keymap = &app.options().keymap;
    let lines = if app.snapshot().rows.is_empty() {
        vec![
            Line::styled("No torrents yet.", theme.title()),
            Line::from(""),
            Line::from(vec![
                Span::raw("Press "),
                Span::styled(keymap.hint(Action::Add), theme.key()),
                Span::raw(" to add one, or start with  "),
                Span::styled("ratorrent FILE.torrent", theme.key()),
            ]),
            Line::from(vec![
                Span::styled(keymap.hint(Action::Create), theme.key()),
                Span::raw(" makes a torrent of a file or folder and seeds it."),
            ]),
            Line::from(vec![
                Span::styled(keymap.hint(Action::Help), theme.key()),
                Span::raw(" lists every key."),
            ]),
        ]
    } else {
        vec![
            Line::styled("No torrent matches the filter or search.", theme.title()),
            Line::from(vec![
                Span::styled(keymap.hint(Action::FilterNext), theme.key()),
                Span::raw(" changes the filter, "),
                Span::styled(keymap.hint(Action::ClearMarks), theme.key()),
                Span::raw(" clears the search."),
            ]),
        ]
    };
    let height = lines.len() as u16;
    let hint = Paragraph::new(lines).centered();
    frame.render_widget(hint, area.centered_vertically(Constraint::Length(height)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column but Category and Tags (no torrent has one).
    fn unlabelled() -> Vec<SortColumn> {
        SortColumn::ALL
            .into_iter()
            .filter(|c| !matches!(c, SortColumn::Category | SortColumn::Tags))
            .collect()
    }

    fn ids(width: u16) -> Vec<Column> {
        columns(width, &unlabelled()).iter().map(|c| c.0).collect()
    }

    #[test]
    fn category_and_tags_show_at_120_and_go_at_80() {
        let at = |w| -> Vec<Column> { columns(w, &SortColumn::ALL).iter().map(|c| c.0).collect() };
        use Column as C;
        assert_eq!(
            at(120),
            [
                C::Queue,
                C::Name,
                C::Progress,
                C::State,
                C::Down,
                C::Up,
                C::Ratio,
                C::Peers,
                C::Category,
                C::Tags
            ]
        );
        assert_eq!(at(80), ids(80), "at 80 they give way");
        assert_eq!(at(200).len(), COLUMNS.len());
    }

    #[test]
    fn columns_fill_the_width_and_drop_by_priority() {
        for width in [0u16, 1, 10, 20, 40, 60, 80, 100, 120, 200, 500] {
            let cols = columns(width, &unlabelled());
            let used: u16 = cols.iter().map(|(_, w)| *w).sum::<u16>()
                + SPACING * (cols.len() as u16 - 1)
                + GUTTER;
            if width >= 40 {
                assert_eq!(used, width, "width {width}");
            }
            assert!(cols.iter().any(|c| c.0 == Column::Name));
        }
        assert_eq!(
            ids(200).len(),
            COLUMNS.len() - 2,
            "all but Category and Tags"
        );
        use Column as C;
        // a seeding user keeps the upload rate, the ratio and the peers at 80 and 120
        for width in [80, 120] {
            let shown = ids(width);
            for c in [
                C::Name,
                C::Progress,
                C::State,
                C::Down,
                C::Up,
                C::Ratio,
                C::Peers,
            ] {
                assert!(shown.contains(&c), "{width}: {c:?} in {shown:?}");
            }
        }
        assert_eq!(
            ids(120),
            [
                C::Queue,
                C::Name,
                C::Size,
                C::Progress,
                C::State,
                C::Down,
                C::Up,
                C::Eta,
                C::Ratio,
                C::Peers
            ]
        );
        let at_80 = columns(80, &unlabelled());
        assert!(at_80.contains(&(C::Progress, NARROW_PROGRESS)), "{at_80:?}");
        assert!(
            !at_80.iter().any(|c| c.0 == C::Queue),
            "the queue's place goes before the peers at 80 (General shows it)"
        );
        assert!(at_80.iter().any(|c| c.0 == C::Name && c.1 >= MIN_NAME));
        assert_eq!(ids(40), [C::Name, C::Progress, C::State]);
    }

    #[test]
    fn the_config_picks_the_columns_and_keeps_their_order() {
        let picked = [SortColumn::Name, SortColumn::Peers, SortColumn::Up];
        let cols: Vec<Column> = columns(200, &picked).iter().map(|c| c.0).collect();
        assert_eq!(cols, [Column::Name, Column::Up, Column::Peers]);
        let cols: Vec<Column> = columns(200, &[]).iter().map(|c| c.0).collect();
        assert_eq!(cols, [Column::Name], "name is always shown");
    }

    #[test]
    fn swarm_counts() {
        assert_eq!(swarm(3, None), "3");
        assert_eq!(swarm(3, Some(120)), "3 (120)");
        assert_eq!(swarm_fit(3, Some(120), 8), "3 (120)");
        assert_eq!(swarm_fit(12, Some(1200), 8), "12", "the swarm goes first");
        let row = TorrentRow {
            swarm_seeds: Some(5),
            ..TorrentRow::default()
        };
        assert_eq!(swarm_size(&row), Some(5));
        assert_eq!(swarm_size(&TorrentRow::default()), None);
    }
}
