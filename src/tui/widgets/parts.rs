//! Pieces several widgets draw: the selection's highlight over a table row, and a progress
//! bar with its percentage.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

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
}
