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

/// What a torrent without trackers gets its peers from: the sources in effect for it as
/// the engine lists them (the magnet link's peers, peers added by hand, DHT, LSD, PEX,
/// incoming, with how many are connected), else what the session runs (`on`: DHT, LSD).
fn no_trackers_line(d: &TorrentDetail, on: (bool, bool)) -> String {
    use crate::api::PeerSource as S;
    // the peers the user gave first, incoming connections last
    let rank = |s: S| {
        [
            S::Magnet,
            S::Manual,
            S::Dht,
            S::Lsd,
            S::Pex,
            S::Incoming,
            S::Tracker,
        ]
        .iter()
        .position(|x| *x == s)
    };
    let mut sources: Vec<_> = d
        .peer_sources
        .iter()
        .filter(|c| c.source != S::Tracker)
        .collect();
    sources.sort_by_key(|c| rank(c.source));
    let from: Vec<String> = sources
        .into_iter()
        .map(|c| {
            let what = match c.source {
                S::Magnet => "the magnet link's peers",
                S::Manual => "peers added by hand",
                S::Dht => "the DHT",
                S::Lsd => "LSD",
                S::Pex => "PEX",
                S::Incoming => "incoming connections",
                S::Tracker => "trackers",
            };
            if c.connected > 0 {
                format!("{what} ({} connected)", c.connected)
            } else {
                what.to_owned()
            }
        })
        .collect();
    match from.split_last() {
        None => session_sources_line(d.private, on).to_owned(),
        Some((last, [])) => format!(" no trackers: peers come from {last}"),
        Some((last, rest)) => format!(
            " no trackers: peers come from {} and {last}",
            rest.join(", ")
        ),
    }
}

/// What a torrent without trackers gets its peers from, given whether the DHT and LSD
/// run (before the engine lists its sources).
fn session_sources_line(private: bool, (dht_on, lsd_on): (bool, bool)) -> &'static str {
    match (private, dht_on, lsd_on) {
        (true, _, _) => " no trackers: a private torrent (BEP 27) only takes incoming peers",
        (false, true, false) => {
            " no trackers: peers come from the DHT, PEX and incoming connections"
        }
        (false, true, true) => {
            " no trackers: peers come from the DHT, LSD, PEX and incoming connections"
        }
        (false, false, false) => {
            " no trackers: peers come from PEX and incoming connections (DHT off)"
        }
        (false, false, true) => {
            " no trackers: peers come from LSD, PEX and incoming connections (DHT off)"
        }
    }
}

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
    for (i, t) in d.trackers.iter().enumerate().skip(first).take(visible) {
        let y = area.y + ((i - first) * BLOCK) as u16;
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
        let (message, style) = match &t.message {
            Some(m) => (format!("{times}{m}"), theme.warning()),
            None => (
                format!(
                    "{times}{} {} in its last answer",
                    t.peers,
                    if t.peers == 1 { "peer" } else { "peers" }
                ),
                theme.dim(),
            ),
        };
        let message = format::fit_with(&message, width, sym.ascii, sym.ellipsis);
        let lines = [head, Line::from(url), Line::styled(message, style)];
        for (k, line) in lines.into_iter().enumerate() {
            let line_y = y + k as u16;
            if line_y >= area.bottom() {
                break;
            }
            let rect = Rect {
                y: line_y,
                height: 1,
                ..area
            };
            frame.render_widget(line, rect);
            if i == scroll.cursor && k == 0 {
                frame.buffer_mut().set_style(rect, theme.selected());
            }
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
            session_sources_line(false, (false, false))
        );
    }
}
