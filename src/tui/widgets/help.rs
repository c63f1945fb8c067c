//! The help overlay: a centred popup listing every action of the registry with its keys,
//! grouped by context. It reads [`ACTIONS`](crate::tui::action::ACTIONS), so it always
//! matches what the keys do.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::tui::action::{Context, in_context};
use crate::tui::{format, theme};

/// Width of the key column, in cells.
const KEYS_WIDTH: usize = 14;
/// Preferred popup width, in cells (smaller terminals get less).
const POPUP_WIDTH: u16 = 60;

/// The help text: per context a title line, then one line per action (`keys  description`).
pub(crate) fn lines() -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for context in Context::ALL {
        if !lines.is_empty() {
            lines.push(Line::from(""));
        }
        lines.push(Line::styled(context.title(), theme::TITLE));
        for spec in in_context(context) {
            let keys = spec
                .keys
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let pad = KEYS_WIDTH.saturating_sub(format::width(&keys));
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(keys, theme::KEY),
                Span::raw(" ".repeat(pad + 1)),
                Span::raw(spec.description),
            ]));
        }
    }
    lines
}

/// Draws the popup centred over `area`, clearing what is under it.
pub(crate) fn render(frame: &mut Frame, area: Rect) {
    let lines = lines();
    let height = (lines.len() as u16).saturating_add(2); // borders
    let popup = area.centered(
        Constraint::Length(POPUP_WIDTH.min(area.width)),
        Constraint::Length(height.min(area.height)),
    );
    let block = Block::new()
        .borders(Borders::ALL)
        .title(" Keys ")
        .title_bottom(Line::from(" ? or Esc to close ").right_aligned());
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
