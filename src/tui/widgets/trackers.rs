//! The Trackers tab: one block per tracker: tier, status, swarm counts and announce times
//! on the first line, the URL (passkeys masked by the engine) on the second, its last error
//! or warning (or the peers of its last answer) on the third.

use std::time::SystemTime;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::api::{TorrentDetail, TrackerStatus};
use crate::tui::format;
use crate::tui::scroll::Scroll;
use crate::tui::theme::{Role, Theme};

use crate::tui::general::no_trackers_line;

/// Lines per tracker.
const BLOCK: usize = 3;

/// Draws the trackers of `detail` into `area`; `on` says whether the session runs a DHT
/// node and LSD (for what a torrent without trackers relies on).
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
    on: (bool, bool),
    theme: &Theme,
) {
    let Some(d) = detail else { return };
    let sym = theme.sym;
    if d.trackers.is_empty() {
        frame.render_widget(Line::styled(no_trackers_line(d, on), theme.dim()), area);
        return;
    }
    let now = SystemTime::now();
    let visible = (usize::from(area.height) / BLOCK).max(1);
    let first = scroll.window(d.trackers.len(), visible);
    let width = usize::from(area.width);
    let n = |v: Option<u32>| v.map_or("-".to_owned(), |v| v.to_string());
    let mut y = area.y;
    for (i, t) in d.trackers.iter().enumerate().skip(first).take(visible) {
        if y >= area.bottom() {
            break;
        }
        let status_style = match t.status {
            TrackerStatus::Working => theme.fg(Role::Good),
            TrackerStatus::Error => theme.error(),
            TrackerStatus::Unsupported => theme.warning(),
            _ => theme.dim(),
        };
        let head = Line::from(vec![
            Span::styled(format!(" tier {:<3}", t.tier + 1), theme.title()),
            Span::styled(format!("{:<12}", t.status.label()), status_style),
            Span::raw(format!(
                "seeds {}  leechers {}  downloaded {}",
                n(t.seeds),
                n(t.leechers),
                n(t.downloaded),
            )),
        ]);
        let times = format!(
            "   last {}, next {}: ",
            format::relative(t.last_announce, now),
            format::relative(t.next_announce, now),
        );
        let url = format::fit_with(&format!("   {}", t.url), width, sym.ascii, sym.ellipsis);
        let mut lines = vec![head, Line::from(url)];
        match &t.message {
            // an error or a warning is read whole: wrapped under the times, up to 3 lines
            Some(m) => {
                let text = format!("{times}{m}");
                let parts = if format::width(&text) <= width || width < 30 {
                    vec![format::fit_with(&text, width, sym.ascii, sym.ellipsis)]
                } else {
                    let mut parts =
                        format::wrap_with(m, width.saturating_sub(5), 3, sym.ascii, sym.ellipsis);
                    parts.insert(0, times.trim_end().to_owned());
                    parts
                        .into_iter()
                        .enumerate()
                        .map(|(k, p)| if k == 0 { p } else { format!("     {p}") })
                        .collect()
                };
                lines.extend(parts.into_iter().map(|p| Line::styled(p, theme.warning())));
            }
            None => lines.push(Line::styled(
                format::fit_with(
                    &format!(
                        "{times}{} {} in its last answer",
                        t.peers,
                        if t.peers == 1 { "peer" } else { "peers" }
                    ),
                    width,
                    sym.ascii,
                    sym.ellipsis,
                ),
                theme.dim(),
            )),
        }
        for (k, line) in lines.into_iter().enumerate() {
            if y >= area.bottom() {
                break;
            }
            let rect = Rect {
                y,
                height: 1,
                ..area
            };
            frame.render_widget(line, rect);
            if i == scroll.cursor && k == 0 {
                frame.buffer_mut().set_style(rect, theme.selected());
            }
            y += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{PeerSource, SourceCount};

    #[test]
    fn without_trackers_the_sources_in_effect_are_named_with_the_connected_ones() {
        let count = |source, connected| SourceCount {
            source,
            known: connected,
            connected,
        };
        let d = TorrentDetail {
            peer_sources: vec![
                count(PeerSource::Incoming, 0),
                count(PeerSource::Pex, 0),
                count(PeerSource::Magnet, 1),
            ],
            ..TorrentDetail::default()
        };
        assert_eq!(
            no_trackers_line(&d, (false, false)),
            " no trackers: peers come from the magnet link's peers (1 connected), PEX and incoming connections"
        );
        // nothing listed by the engine yet: what the session runs
        let empty = TorrentDetail::default();
        assert_eq!(
            no_trackers_line(&empty, (false, false)),
            crate::tui::general::session_sources_line(false, (false, false))
        );
    }
}
