//! Pieces several widgets draw: the selection's highlight over a table row, and a progress
//! bar with its percentage.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::api::TorrentRow;
use crate::tui::format;
use crate::tui::theme::{Role, Theme};

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

/// The progress of a torrent's row: its bar, or, while its size is not known (a magnet
/// link before its metadata), an empty bar and an unknown percentage: never "100%".
pub(crate) fn row_progress_line(row: &TorrentRow, width: u16, theme: &Theme) -> Line<'static> {
    if row.size_known() {
        return progress_line(row.done, row.size, width, theme);
    }
    let unknown = theme.sym.unknown;
    let bar = usize::from(width.saturating_sub(6));
    if bar == 0 {
        return Line::from(unknown).right_aligned();
    }
    Line::from(vec![
        Span::styled(theme.sym.bar.1.repeat(bar), theme.dim()),
        Span::raw(format!(" {unknown:>5}")),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_is_proportional() {
        let theme = Theme::default();
        let line = progress_line(50, 100, 14, &theme);
        assert_eq!(line.to_string(), "━━━━──── 50.0%");
        assert_eq!(line.width(), 14);
        assert_eq!(
            progress_line(100, 100, 14, &theme).to_string(),
            "━━━━━━━━  100%"
        );
        let ascii = Theme::new(&Default::default(), false, true);
        assert_eq!(
            progress_line(50, 100, 14, &ascii).to_string(),
            "####---- 50.0%"
        );
    }

    #[test]
    fn a_row_of_unknown_size_is_never_shown_done() {
        let theme = Theme::default();
        let fetching = TorrentRow {
            state: crate::api::TorrentState::FetchingMetadata,
            ..TorrentRow::default()
        };
        assert_eq!(
            row_progress_line(&fetching, 14, &theme).to_string(),
            "────────     –"
        );
        assert_eq!(row_progress_line(&fetching, 5, &theme).to_string(), "–");
        let ascii = Theme::new(&Default::default(), false, true);
        assert_eq!(
            row_progress_line(&fetching, 14, &ascii).to_string(),
            "--------     -"
        );
        let known = TorrentRow {
            size: 100,
            done: 100,
            pieces_total: 1,
            pieces_have: 1,
            ..TorrentRow::default()
        };
        assert_eq!(
            row_progress_line(&known, 14, &theme).to_string(),
            "━━━━━━━━  100%"
        );
    }
}
