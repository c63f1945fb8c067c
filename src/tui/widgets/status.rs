//! The status bar (bottom line): session totals on the left, key hints on the right, and a
//! transient notice (e.g. "shutting down…") in front when there is one.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::api::Snapshot;
use crate::tui::{format, theme};

/// Draws the status bar into `area` (one line).
///
/// Left: `↓ 1.20 MiB/s  ↑ 300 KiB/s  peers 12  torrents 3  port 6881  DHT: 312 nodes`
/// (port `-` when not listening; `DHT: N nodes`, the DHT routing table's nodes (BEP 5),
/// only while the DHT runs),
/// preceded by the notice if any. Right: `? help  q quit`. On a narrow line the
/// hint goes first, then the figures from the right, so what is shown is never cut mid-word.
pub(crate) fn render(frame: &mut Frame, area: Rect, snapshot: &Snapshot, notice: Option<&str>) {
    let width = usize::from(area.width);
    let global = &snapshot.global;
    let port = if global.listen_port == 0 {
        "-".to_owned()
    } else {
        global.listen_port.to_string()
    };
    let mut figures = vec![
        format!("↓ {}", format::rate(global.down_rate)),
        format!("↑ {}", format::rate(global.up_rate)),
        format!("peers {}", global.peers),
        format!("torrents {}", snapshot.rows.len()),
        format!("port {port}"),
    ];
    // DHT routing-table nodes, when the DHT runs
    if let Some(n) = global.dht_nodes {
        figures.push(format!("DHT: {n} nodes"));
    }

    let mut left = Vec::new();
    let mut used = 0;
    if let Some(notice) = notice {
        let text = format::fit(&format!(" {notice} "), width);
        used += format::width(&text);
        left.push(Span::styled(text, theme::STATUS_NOTICE));
    }
    for (i, figure) in figures.iter().enumerate() {
        let sep = if i == 0 { " " } else { "  " };
        let w = sep.len() + format::width(figure);
        if used + w > width {
            break;
        }
        used += w;
        left.push(Span::raw(format!("{sep}{figure}")));
    }
    let hint = Line::from(vec![
        Span::styled("?", theme::STATUS_KEY),
        Span::raw(" help  "),
        Span::styled("q", theme::STATUS_KEY),
        Span::raw(" quit "),
    ]);
    let fits = used + 2 + hint.width() <= width;
    frame.render_widget(
        Paragraph::new(Line::from(left)).style(theme::STATUS_BAR),
        area,
    );
    if fits {
        frame.render_widget(hint.right_aligned(), area);
    }
}
