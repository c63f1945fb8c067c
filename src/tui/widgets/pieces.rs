//! The Pieces tab: a compact map of the torrent's pieces, have / downloading / missing. When
//! there are more pieces than cells, each cell stands for a run of pieces: full when all
//! are verified, partly full when some are, "downloading" when any is in flight.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::api::{PieceState, TorrentDetail};
use crate::tui::theme::{Role, Theme};

/// What one cell shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cell {
    Have,
    Downloading,
    Partial,
    Missing,
}

/// The cells for `pieces` in `cells` cells (at most one cell per piece).
pub(crate) fn cells(pieces: &[PieceState], cells: usize) -> Vec<Cell> {
    let n = pieces.len();
    if n == 0 || cells == 0 {
        return Vec::new();
    }
    let cells = cells.min(n);
    (0..cells)
        .map(|c| {
            let start = c * n / cells;
            let end = ((c + 1) * n / cells).max(start + 1);
            let run = &pieces[start..end];
            if run.contains(&PieceState::Downloading) {
                Cell::Downloading
            } else if run.iter().all(|p| *p == PieceState::Have) {
                Cell::Have
            } else if run.contains(&PieceState::Have) {
                Cell::Partial
            } else {
                Cell::Missing
            }
        })
        .collect()
}

/// Draws the map of `detail` into `area`: a legend line with counts, then the map.
pub(crate) fn render(frame: &mut Frame, area: Rect, detail: Option<&TorrentDetail>, theme: &Theme) {
    let Some(d) = detail else { return };
    let sym = theme.sym;
    let pieces = &d.pieces;
    let have = pieces.iter().filter(|p| **p == PieceState::Have).count();
    let busy = pieces
        .iter()
        .filter(|p| **p == PieceState::Downloading)
        .count();
    let missing = pieces.len() - have - busy;
    let [legend, map] = area.layout(&Layout::vertical([
        Constraint::Length(2),
        Constraint::Fill(1),
    ]));
    let style = |c: Cell| -> Style {
        match c {
            Cell::Have | Cell::Partial => theme.fg(Role::Good),
            Cell::Downloading => theme.fg(Role::Active),
            Cell::Missing => theme.dim(),
        }
    };
    let [h, dl, part, miss] = sym.pieces;
    let width = usize::from(map.width.saturating_sub(2)).max(1);
    let rows = usize::from(map.height);
    let n_cells = width * rows;
    let per = pieces.len().div_ceil(n_cells.max(1)).max(1);
    frame.render_widget(
        Line::from(vec![
            Span::styled(format!(" {h}"), style(Cell::Have)),
            Span::raw(format!(" have {have}   ")),
            Span::styled(dl, style(Cell::Downloading)),
            Span::raw(format!(" downloading {busy}   ")),
            Span::styled(part, style(Cell::Partial)),
            Span::raw(" some   "),
            Span::styled(miss, style(Cell::Missing)),
            Span::raw(format!(
                " missing {missing}   ({} pieces{})",
                pieces.len(),
                if per > 1 {
                    format!(", about {per} per cell")
                } else {
                    String::new()
                }
            )),
        ]),
        legend,
    );
    let cells = cells(pieces, n_cells);
    for (y, chunk) in cells.chunks(width).enumerate().take(rows) {
        let spans: Vec<Span> = std::iter::once(Span::raw(" "))
            .chain(chunk.iter().map(|c| {
                let s = match c {
                    Cell::Have => h,
                    Cell::Downloading => dl,
                    Cell::Partial => part,
                    Cell::Missing => miss,
                };
                Span::styled(s, style(*c))
            }))
            .collect();
        let line_area = Rect {
            y: map.y + y as u16,
            height: 1,
            ..map
        };
        frame.render_widget(Line::from(spans), line_area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_pieces_per_cell() {
        use PieceState::*;
        let p = [
            Have,
            Have,
            Have,
            Missing,
            Downloading,
            Missing,
            Missing,
            Missing,
        ];
        assert_eq!(
            cells(&p, 4),
            vec![Cell::Have, Cell::Partial, Cell::Downloading, Cell::Missing]
        );
        assert_eq!(cells(&p, 100).len(), 8);
        assert!(cells(&[], 10).is_empty());
        assert_eq!(cells(&p, 3).len(), 3);
    }
}
