//! The Trackers tab: one block per tracker: tier, status, swarm counts and announce times
//! on the first line, the URL (passkeys masked by the engine) on the second, its last error
//! or warning (or the peers of its last answer) on the third. Then one block per web seed
//! (BEP 19): its state and what it sent, its URL, its last error and when it is retried.

use std::time::SystemTime;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::api::{TorrentDetail, TrackerRow, TrackerStatus, WebSeedRow, WebSeedState};
use crate::tui::format;
use crate::tui::scroll::Scroll;
use crate::tui::theme::{Role, Theme};
use crate::units;

use crate::tui::general::no_trackers_line;

/// Lines per tracker.
const BLOCK: usize = 3;

/// Draws the trackers of `detail` into `area`, then its web seeds (BEP 19) in blocks of
/// the same shape; `on` says whether the session runs a DHT node and LSD (for what a
/// torrent without trackers relies on).
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
    on: (bool, bool),
    theme: &Theme,
) {
    let Some(d) = detail else { return };
    let mut area = area;
    if d.trackers.is_empty() {
        frame.render_widget(Line::styled(no_trackers_line(d, on), theme.dim()), area);
        if d.web_seeds.is_empty() || area.height < 2 {
            return;
        }
        area.y += 1;
        area.height -= 1;
    }
    let now = SystemTime::now();
    let total = d.trackers.len() + d.web_seeds.len();
    let visible = (usize::from(area.height) / BLOCK).max(1);
    let first = scroll.window(total, visible);
    let mut y = area.y;
    for i in (first..total).take(visible) {
        if y >= area.bottom() {
            break;
        }
        let lines = match d.trackers.get(i) {
            Some(t) => tracker_block(t, now, usize::from(area.width), theme),
            None => match d.web_seeds.get(i - d.trackers.len()) {
                Some(w) => web_seed_block(w, now, usize::from(area.width), theme),
                None => break,
            },
        };
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

/// `message` under `times` as the third line of a block: whole when it fits, else wrapped
/// under the times, up to 3 lines, in the warning style.
fn message_lines(times: &str, m: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let sym = theme.sym;
    let text = format!("{times}{m}");
    let parts = if format::width(&text) <= width || width < 30 {
        vec![format::fit_with(&text, width, sym.ascii, sym.ellipsis)]
    } else {
        let mut parts = format::wrap_with(m, width.saturating_sub(5), 3, sym.ascii, sym.ellipsis);
        parts.insert(0, times.trim_end().to_owned());
        parts
            .into_iter()
            .enumerate()
            .map(|(k, p)| if k == 0 { p } else { format!("     {p}") })
            .collect()
    };
    parts
        .into_iter()
        .map(|p| Line::styled(p, theme.warning()))
        .collect()
}

/// The lines of one tracker.
fn tracker_block(
    t: &TrackerRow,
    now: SystemTime,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let sym = theme.sym;
    let n = |v: Option<u32>| v.map_or("-".to_owned(), |v| v.to_string());
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
        Some(m) => lines.extend(message_lines(&times, m, width, theme)),
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
    lines
}

/// The lines of one web seed: its state and counts, its URL, its last error (or how many
/// requests are in flight).
fn web_seed_block(
    w: &WebSeedRow,
    now: SystemTime,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let sym = theme.sym;
    let style = match w.state {
        WebSeedState::Active => theme.fg(Role::Good),
        WebSeedState::BackedOff => theme.warning(),
        WebSeedState::Dropped => theme.error(),
        WebSeedState::Idle => theme.dim(),
    };
    let mut counts = format!("received {}", units::size(w.downloaded));
    if w.missing_files > 0 {
        counts.push_str(&format!("  missing files {}", w.missing_files));
    }
    if w.hash_fails > 0 {
        counts.push_str(&format!(
            "  hash fails {}/{}",
            w.hash_fails, w.max_hash_fails
        ));
    }
    let head = Line::from(vec![
        Span::styled(" web seed ", theme.title()),
        Span::styled(format!("{:<12}", w.state.label()), style),
        Span::raw(format::fit_with(
            &counts,
            width.saturating_sub(22),
            sym.ascii,
            sym.ellipsis,
        )),
    ]);
    let url = format::fit_with(&format!("   {}", w.url), width, sym.ascii, sym.ellipsis);
    let times = match w.retry_at {
        Some(at) => format!("   retry {}: ", format::relative(Some(at), now)),
        None => "   ".to_owned(),
    };
    let mut lines = vec![head, Line::from(url)];
    match &w.message {
        Some(m) => lines.extend(message_lines(&times, m, width, theme)),
        None => lines.push(Line::styled(
            format::fit_with(
                &format!(
                    "{times}{} range request{} in flight",
                    w.requests,
                    if w.requests == 1 { "" } else { "s" }
                ),
                width,
                sym.ascii,
                sym.ellipsis,
            ),
            theme.dim(),
        )),
    }
    lines
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
