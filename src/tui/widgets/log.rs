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
    }
}

/// Draws `events` into `area`; `names` adds the torrent's name to each line.
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
    let visible = usize::from(area.height);
    let cursor = scroll.cursor.min(events.len() - 1);
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
        // the label is in the head already: "not added  not added: …" says it twice
        let message = e
            .message
            .strip_prefix(kind_label(e.kind))
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(&e.message);
        let text = format::fit_with(&format!("{name}{message}"), rest, sym.ascii, sym.ellipsis);
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
