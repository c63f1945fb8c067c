//! Event lists: the session log screen and the Log tab (one torrent's events): time, level,
//! kind, torrent and message, newest at the bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::api::{EngineEvent, EventKind, EventLevel};
use crate::tui::app::App;
use crate::tui::format;
use crate::tui::scroll::{Scroll, scroll_offset};

/// Short label of an event kind.
pub fn kind_label(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Added => "added",
        EventKind::Removed => "removed",
        EventKind::StateChanged => "state",
        EventKind::Completed => "completed",
        EventKind::TrackerError => "tracker",
        EventKind::TrackerWarning => "tracker",
        EventKind::HashFailed => "hash",
        EventKind::PeerBanned => "ban",
        EventKind::DiskError => "disk",
        EventKind::Checked => "checked",
        EventKind::AddRefused => "not added",
        EventKind::Hook => "program",
        EventKind::IpFilter => "ip filter",
        EventKind::AltSpeed => "speed",
        EventKind::TrackersEdited => "tracker",
        EventKind::Settings => "settings",
        EventKind::PeerRefused => "peer",
        EventKind::PieceOrder => "order",
        EventKind::WebSeed => "web seed",
    }
}

/// Cells of a line's head: " 12:34:56 level kind      ".
const HEAD_WIDTH: usize = 26;

/// The message without the kind's label in front: the label is in the line's head
/// already ("not added  not added: …" said it twice).
fn message(e: &EngineEvent) -> &str {
    e.message
        .strip_prefix(kind_label(e.kind))
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(&e.message)
}

/// The event's text whole: its torrent's full name (when `names` and the message does not
/// start with it), then the message.
fn whole(e: &EngineEvent, app: &App, names: bool) -> String {
    let name = names
        .then(|| e.torrent.and_then(|id| app.snapshot().row(id)))
        .flatten()
        .map(|r| r.name.as_str());
    let e = EngineEvent {
        message: message(e).to_owned(),
        ..e.clone()
    };
    e.with_name(name)
}

/// Draws `events` into `area`; `names` adds the torrent's name to each line. When the
/// selected event's line is cut, it is shown whole under the list.
pub(crate) fn render<'a>(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    events: impl Iterator<Item = &'a EngineEvent>,
    scroll: &Scroll,
    names: bool,
) {
    let theme = &app.options().theme;
    let sym = theme.sym;
    let events: Vec<&EngineEvent> = events.collect();
    if events.is_empty() {
        frame.render_widget(Line::styled(" no events yet", theme.dim()), area);
        return;
    }
    let cursor = scroll.cursor.min(events.len() - 1);
    // the selected event, whole, under the list when its line is cut (up to 4 lines, a
    // third of the room at most)
    let full = whole(events[cursor], app, names);
    let room = usize::from(area.width).saturating_sub(HEAD_WIDTH);
    let footer = if format::width(&full) > room && area.height >= 9 {
        let max = usize::from(area.height / 3).min(4);
        format::wrap_with(
            &full,
            usize::from(area.width).saturating_sub(2),
            max,
            sym.ascii,
            sym.ellipsis,
        )
    } else {
        Vec::new()
    };
    let footer_height = footer.len() as u16 + u16::from(!footer.is_empty());
    let area = Rect {
        height: area.height - footer_height,
        ..area
    };
    if !footer.is_empty() {
        let top = area.y + area.height;
        frame.render_widget(
            Line::styled("─".repeat(usize::from(area.width)), theme.dim()),
            Rect {
                y: top,
                height: 1,
                ..area
            },
        );
        for (i, text) in footer.iter().enumerate() {
            frame.render_widget(
                Line::from(format!(" {text}")),
                Rect {
                    y: top + 1 + i as u16,
                    height: 1,
                    ..area
                },
            );
        }
    }
    let visible = usize::from(area.height);
    let first = scroll_offset(scroll.offset.get(), Some(cursor), events.len(), visible);
    scroll.offset.set(first);
    scroll.height.set(visible);
    let width = usize::from(area.width);
    for (i, (at, e)) in events
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .enumerate()
    {
        let _ = at;
        let (level, style) = match e.level {
            EventLevel::Info => ("info ", theme.dim()),
            EventLevel::Warn => ("warn ", theme.warning()),
            EventLevel::Error => ("ERROR", theme.error()),
        };
        let name = if names {
            e.torrent
                .and_then(|id| app.snapshot().row(id))
                // the engine's messages usually start with the torrent's name already
                .filter(|r| !e.message.starts_with(&r.name))
                .map(|r| {
                    format!(
                        "{}: ",
                        format::fit_with(&r.name, 30, sym.ascii, sym.ellipsis)
                    )
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let head = format!(
            " {} {level} {:<9} ",
            format::clock(e.at),
            kind_label(e.kind)
        );
        let rest = width.saturating_sub(format::width(&head));
        let text = format::fit_with(
            &format!("{name}{}", message(e)),
            rest,
            sym.ascii,
            sym.ellipsis,
        );
        let mut line = Line::from(vec![Span::styled(head, style), Span::raw(text)]);
        if first + i == cursor {
            line = line.style(theme.selected());
        }
        let y = area.y + i as u16;
        frame.render_widget(
            line,
            Rect {
                y,
                height: 1,
                ..area
            },
        );
    }
}
