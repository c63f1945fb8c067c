//! One line about the selected torrent, above the status bar: its message (tracker error,
//! storage error) in a warning colour (red for the `Error` state) when it has one, otherwise
//! its info hash, pieces, session totals and share ratio.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::api::{TorrentRow, TorrentState};
use crate::tui::{format, theme};

/// Draws the line for `row` (nothing when no torrent is selected) into `area`.
pub(crate) fn render(frame: &mut Frame, area: Rect, row: Option<&TorrentRow>) {
    let Some(row) = row else {
        return;
    };
    let width = usize::from(area.width);
    let line = match &row.message {
        Some(message) => {
            let style = if row.state == TorrentState::Error {
                theme::ERROR
            } else {
                theme::WARNING
            };
            Line::styled(format::fit(&format!(" {message}"), width), style)
        }
        None => {
            let ratio = if row.downloaded == 0 {
                "-".to_owned()
            } else {
                format!("{:.2}", row.uploaded as f64 / row.downloaded as f64)
            };
            let text = format!(
                " {}  pieces {}/{}  down {}  up {}  ratio {}",
                row.info_hash,
                row.pieces_have,
                row.pieces_total,
                format::size(row.downloaded),
                format::size(row.uploaded),
                ratio,
            );
            Line::styled(format::fit(&text, width), theme::DIM)
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}
