//! The Peers tab: one row per connected peer with its address, client, flags (letters as in
//! qBittorrent, explained in the help), progress, rates and totals; then one row per web
//! seed (BEP 19) with its host, its state and its rate.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Row, Table};

use crate::api::{PeerRow, PeerSource, TorrentDetail, WebSeedRow, WebSeedState};
use crate::tui::format;
use crate::tui::scroll::Scroll;
use crate::tui::theme::{Role, Theme};
use crate::units;

use super::parts::highlight_row;

/// The flag letters of a peer, e.g. `"D U I E"`: see [`crate::tui::help::PEER_FLAGS`].
pub fn flags(peer: &PeerRow) -> String {
    let f = peer.flags;
    let mut out = Vec::new();
    if f.am_interested {
        out.push(if f.peer_choking { 'd' } else { 'D' });
    } else if !f.peer_choking {
        out.push('K');
    }
    if f.peer_interested {
        out.push(if f.am_choking { 'u' } else { 'U' });
    } else if !f.am_choking {
        out.push('?');
    }
    if f.optimistic {
        out.push('O');
    }
    if f.snubbed {
        out.push('S');
    }
    if f.incoming {
        out.push('I');
    }
    if f.encrypted {
        out.push('E');
    } else if f.obfuscated {
        out.push('e');
    }
    if f.utp {
        out.push('P');
    }
    match peer.source {
        PeerSource::Pex => out.push('X'),
        PeerSource::Dht => out.push('H'),
        PeerSource::Lsd => out.push('L'),
        _ => {}
    }
    out.into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The host (and port) of a web seed's URL, e.g. `mirror.example.org:8080`.
pub fn web_seed_host(url: &str) -> String {
    let host = crate::net::host_of(url);
    host.split_once("://")
        .map_or(host.clone(), |(_, h)| h.to_owned())
}

/// What the Client column says of a web seed: `web seed`, its state and why, e.g.
/// `web seed, 2 requests` or `web seed, backed off: HTTP 503 Service Unavailable`.
pub fn web_seed_client(w: &WebSeedRow) -> String {
    match w.state {
        WebSeedState::Active if w.requests > 0 => format!(
            "web seed, {} request{}",
            w.requests,
            if w.requests == 1 { "" } else { "s" }
        ),
        WebSeedState::Active => "web seed, waiting for a piece".to_owned(),
        WebSeedState::Idle => "web seed, idle".to_owned(),
        s => match &w.message {
            Some(m) => format!("web seed, {}: {m}", s.label()),
            None => format!("web seed, {}", s.label()),
        },
    }
}

/// Draws the peers of `detail` into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
    theme: &Theme,
) {
    let Some(d) = detail else { return };
    let sym = theme.sym;
    if d.peers.is_empty() && d.web_seeds.is_empty() {
        frame.render_widget(Line::styled(" no peers connected", theme.dim()), area);
        return;
    }
    let total = d.peers.len() + d.web_seeds.len();
    let visible = usize::from(area.height.saturating_sub(1));
    let first = scroll.window(total, visible);
    let wide = area.width >= 120;
    let mut widths = vec![
        Constraint::Length(22),
        Constraint::Fill(1),
        Constraint::Length(12),
        Constraint::Length(6),
        Constraint::Length(11),
        Constraint::Length(11),
    ];
    let mut header = vec![
        "Address".to_owned(),
        "Client".to_owned(),
        "Flags".to_owned(),
        "Done".to_owned(),
        format!("{} Rate", sym.down),
        format!("{} Rate", sym.up),
    ];
    if wide {
        widths.extend([
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(8),
        ]);
        header.extend([
            format!("{} Total", sym.down),
            format!("{} Total", sym.up),
            "Source".to_owned(),
        ]);
    }
    let header = Row::new(header.into_iter().map(Line::from)).style(theme.header());
    let peer_rows = d.peers.iter().map(|p| {
        let mut cells = vec![
            Line::from(p.addr.to_string()),
            Line::from(format::fit_with(&p.client, 30, sym.ascii, sym.ellipsis)),
            Line::from(flags(p)),
            Line::from(format!(
                "{:.0}%",
                (p.progress.clamp(0.0, 1.0) * 100.0).floor()
            ))
            .right_aligned(),
            Line::styled(units::rate_or_dash(p.down_rate), theme.fg(Role::Down)).right_aligned(),
            Line::styled(units::rate_or_dash(p.up_rate), theme.fg(Role::Up)).right_aligned(),
        ];
        if wide {
            cells.extend([
                Line::from(units::size(p.downloaded)).right_aligned(),
                Line::from(units::size(p.uploaded)).right_aligned(),
                Line::from(p.source.label()),
            ]);
        }
        cells
    });
    let seed_rows = d.web_seeds.iter().map(|w| {
        // at 80 columns the Client column holds a word: the state is in Flags, the error in
        // the Trackers tab and General
        let state = if wide {
            web_seed_client(w)
        } else {
            "web seed".to_owned()
        };
        let style = match w.state {
            WebSeedState::BackedOff | WebSeedState::Dropped => theme.warning(),
            _ => theme.fg(Role::Good),
        };
        let mut cells = vec![
            Line::from(format::fit_with(
                &web_seed_host(&w.url),
                22,
                sym.ascii,
                sym.ellipsis,
            )),
            Line::styled(
                format::fit_with(&state, 100, sym.ascii, sym.ellipsis),
                style,
            ),
            Line::styled(w.state.label(), style),
            Line::from("100%").right_aligned(),
            Line::styled(units::rate_or_dash(w.down_rate), theme.fg(Role::Down)).right_aligned(),
            Line::styled(units::rate_or_dash(0), theme.fg(Role::Up)).right_aligned(),
        ];
        if wide {
            cells.extend([
                Line::from(units::size(w.downloaded)).right_aligned(),
                Line::from(units::size(0)).right_aligned(),
                Line::from(PeerSource::WebSeed.label()),
            ]);
        }
        cells
    });
    let rows = peer_rows
        .chain(seed_rows)
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, cells)| {
            let row = Row::new(cells);
            if i == scroll.cursor {
                row.style(theme.selected())
            } else {
                row
            }
        });
    frame.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
    highlight_row(
        frame,
        area,
        scroll.cursor.checked_sub(first).map(|r| r + 1),
        visible,
        theme,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PeerFlags;

    #[test]
    fn flag_letters() {
        let mut p = PeerRow {
            addr: "127.0.0.1:1".parse().unwrap(),
            client: String::new(),
            flags: PeerFlags {
                am_choking: true,
                peer_choking: true,
                ..PeerFlags::default()
            },
            progress: 0.0,
            down_rate: 0,
            up_rate: 0,
            downloaded: 0,
            uploaded: 0,
            source: PeerSource::Tracker,
        };
        assert_eq!(flags(&p), "");
        p.flags.am_interested = true;
        assert_eq!(flags(&p), "d");
        p.flags.peer_choking = false;
        p.flags.peer_interested = true;
        p.flags.am_choking = false;
        p.flags.incoming = true;
        p.flags.encrypted = true;
        assert_eq!(flags(&p), "D U I E");
        p.source = PeerSource::Pex;
        p.flags.snubbed = true;
        assert_eq!(flags(&p), "D U S I E X");
        // an MSE handshake with plaintext after it
        p.flags.encrypted = false;
        p.flags.obfuscated = true;
        assert_eq!(flags(&p), "D U S I e X");
    }
}
