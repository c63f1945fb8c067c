//! Pieces of the screen, each a function that draws one area from the app's state.
//!
//! Layout of every screen: a top bar (filters and sort, or the detail tabs), the body, a
//! message line (notices, errors with what to do, the search line) and the status bar
//! (session rates and limits, peers, free space, port, DHT).

mod bars;
pub(crate) mod dialog;
pub(crate) mod files;
pub(crate) mod general;
pub(crate) mod help;
pub(crate) mod log;
mod parts;
pub(crate) mod peers;
pub(crate) mod pieces;
pub(crate) mod speed;
pub(crate) mod torrent_table;
pub(crate) mod trackers;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;

use super::app::App;
use super::format;
use super::history::SpeedPoints;
use super::screen::{Screen, Tab};
use crate::units;

/// Draws the whole screen for `app`'s state, the Speed tab from `speed` (see
/// [`App::speed_points`]). Works at any size (tiny areas simply show less).
pub(crate) fn draw(frame: &mut Frame, app: &App, speed: Option<&SpeedPoints>) {
    let area = frame.area();
    let theme = &app.options().theme;
    let message_height = bars::message_height(app, theme, area.width, area.height);
    let [top, body, message, status] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(message_height),
        Constraint::Length(1),
    ]));
    match app.screen() {
        Screen::List => {
            bars::top_bar_list(frame, top, app, theme);
            torrent_table::render(frame, body, app);
        }
        Screen::Detail => {
            bars::top_bar_tabs(frame, top, app, theme);
            detail(frame, body, app, speed);
        }
        Screen::Log => {
            let title = format!(
                " Session log: {} events{}",
                app.events().len(),
                if app.events_lost() > 0 {
                    format!(" ({} lost: the UI was too slow)", app.events_lost())
                } else {
                    String::new()
                }
            );
            frame.render_widget(Line::styled(title, theme.title()), top);
            log::render(
                frame,
                body,
                app,
                app.events().iter(),
                app.scrolls().log,
                true,
            );
        }
    }
    bars::message_line(frame, message, app, theme);
    bars::status_bar(frame, status, app, theme);
    if let Some(d) = app.dialog() {
        dialog::render(frame, area, d, theme);
    }
    if let Some(scroll) = app.scrolls().help {
        help::render(frame, area, app.options(), scroll, theme);
    }
}

/// The detail view's body: the torrent's headline, then the tab shown.
fn detail(frame: &mut Frame, area: Rect, app: &App, speed: Option<&SpeedPoints>) {
    let theme = &app.options().theme;
    let sym = theme.sym;
    let [head, body] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
    ]));
    if let Some(row) = app.selected_row() {
        let done = if row.size_known() {
            format::percent(row.done, row.size)
        } else {
            sym.unknown.to_owned()
        };
        let text = format!(
            " {}  {}  {done}  {} {}  {} {}",
            row.name,
            row.state.label(),
            sym.down,
            units::rate(row.down_rate),
            sym.up,
            units::rate(row.up_rate),
        );
        let line = format::fit_with(&text, usize::from(head.width), sym.ascii, sym.ellipsis);
        frame.render_widget(Line::styled(line, theme.title()), head);
    }
    let d = app.detail().map(|d| &**d);
    if d.is_none() && !matches!(app.tab(), Tab::Speed | Tab::Log | Tab::General) {
        frame.render_widget(
            Line::styled(
                " waiting for the engine's detail of this torrent…",
                theme.dim(),
            ),
            body,
        );
        return;
    }
    let scrolls = app.scrolls();
    match app.tab() {
        Tab::General => general::render(frame, body, app, d, scrolls.general),
        Tab::Peers => peers::render(frame, body, d, scrolls.peers, theme),
        Tab::Files => files::render(frame, body, app.files(), scrolls.files, theme),
        Tab::Trackers => {
            let g = &app.snapshot().global;
            let on = (g.dht_nodes.is_some(), g.lsd);
            trackers::render(frame, body, d, scrolls.trackers, on, theme);
        }
        Tab::Pieces => pieces::render(frame, body, d, theme),
        Tab::Speed => speed::render(frame, body, app, speed),
        Tab::Log => log::render(
            frame,
            body,
            app,
            app.torrent_events(),
            scrolls.tab_log,
            false,
        ),
    }
}
