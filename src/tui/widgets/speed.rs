//! The Speed tab: download and upload graphs of the torrent and of the whole session over
//! 1 min, 10 min or 1 h, with labelled axes (rate scale on the left, time below). ↓ and ↑
//! are separate graphs with their own titles, so they read apart without colour. Drawn with
//! braille, block elements or ASCII ([`GraphStyle`]).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::format;
use crate::tui::history::{POINTS, SpeedPoints, Window};
use crate::tui::theme::{GraphStyle, Role, Theme};
use crate::units;

/// Width of the rate labels on the left, in cells.
const LABEL: u16 = 11;

/// Draws the four graphs into `area`.
pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App, speed: Option<&SpeedPoints>) {
    let theme = &app.options().theme;
    let window = app.window();
    let [head, body] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
    ]));
    let key = app.options().keymap.hint(Action::SpeedWindow);
    frame.render_widget(
        Line::from(vec![
            Span::styled(format!(" window {}", window.label()), theme.title()),
            Span::styled(format!("   {key}: 1 min / 10 min / 1 h"), theme.dim()),
        ]),
        head,
    );
    let empty = Vec::new();
    let (session, torrent) = match speed {
        Some((s, t)) => (s, t.as_ref()),
        None => (&empty, None),
    };
    let torrent = torrent.unwrap_or(&empty);
    let [top, bottom] = body.layout(&Layout::vertical([
        Constraint::Fill(1),
        Constraint::Fill(1),
    ]));
    let sym = theme.sym;
    for (area, points, scope) in [(top, torrent, "torrent"), (bottom, session, "session")] {
        let [left, right] = area.layout(&Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Fill(1),
        ]));
        let downs: Vec<u64> = points.iter().map(|p| p.0).collect();
        let ups: Vec<u64> = points.iter().map(|p| p.1).collect();
        graph(
            frame,
            left,
            &format!("{} {scope} download", sym.down),
            &downs,
            window,
            theme,
            Role::Down,
        );
        graph(
            frame,
            right,
            &format!("{} {scope} upload", sym.up),
            &ups,
            window,
            theme,
            Role::Up,
        );
    }
}

/// A "nice" scale at or above `max`: 1, 2 or 5 times a power of 1024 or of ten within it.
fn scale(max: u64) -> u64 {
    if max == 0 {
        return 1024;
    }
    let mut unit = 1u64;
    while unit.saturating_mul(1024) <= max && unit < (1 << 60) {
        unit *= 1024;
    }
    for m in [1u64, 2, 5, 10, 20, 50, 100, 200, 500, 1024] {
        let s = unit.saturating_mul(m);
        if s >= max {
            return s;
        }
    }
    max
}

/// One graph: title with the current and peak rate, scale labels, the plot and the time
/// axis.
fn graph(
    frame: &mut Frame,
    area: Rect,
    title: &str,
    values: &[u64],
    window: Window,
    theme: &Theme,
    role: Role,
) {
    if area.height < 3 || area.width < LABEL + 4 {
        return;
    }
    let now = values.last().copied().unwrap_or(0);
    let peak = values.iter().copied().max().unwrap_or(0);
    let style = theme.fg(role);
    let head = format!(
        " {title}  now {}  peak {}",
        units::rate(now),
        units::rate(peak)
    );
    let sym = theme.sym;
    frame.render_widget(
        Line::styled(
            format::fit_with(&head, usize::from(area.width), sym.ascii, sym.ellipsis),
            style.add_modifier(ratatui::style::Modifier::BOLD),
        ),
        Rect { height: 1, ..area },
    );
    let plot_h = area.height - 2;
    let plot = Rect {
        x: area.x + LABEL,
        y: area.y + 1,
        width: area.width - LABEL - 1,
        height: plot_h,
    };
    let top = scale(peak);
    // y labels: the scale at the top, half way, 0 at the bottom
    let label = |v: u64| format!("{:>w$} ", short_rate(v), w = usize::from(LABEL) - 1);
    let labels = [
        (0u16, top),
        (plot_h / 2, top / 2),
        (plot_h.saturating_sub(1), 0),
    ];
    for (dy, v) in labels {
        if dy < plot_h {
            frame.render_widget(
                Line::styled(label(v), theme.dim()),
                Rect {
                    x: area.x,
                    y: plot.y + dy,
                    width: LABEL,
                    height: 1,
                },
            );
        }
    }
    let lines = plot_lines(values, plot.width, plot.height, top, theme.graph);
    for (dy, text) in lines.into_iter().enumerate() {
        frame.render_widget(
            Line::styled(text, style),
            Rect {
                y: plot.y + dy as u16,
                height: 1,
                ..plot
            },
        );
    }
    // time axis
    let span_secs = window.step_secs() * POINTS as u64;
    let left = format!(
        "-{}",
        units::duration(span_secs)
            .replace(" 00s", "")
            .replace(" 00m", "")
    );
    let axis_y = area.y + area.height - 1;
    let w = usize::from(plot.width);
    let mid = format!(
        "-{}",
        units::duration(span_secs / 2)
            .replace(" 00s", "")
            .replace(" 00m", "")
    );
    let mut axis = format::pad(&left, w);
    let mid_at = (w / 2).saturating_sub(format::width(&mid) / 2);
    if w > 20 {
        axis = format!(
            "{}{}",
            format::pad(&left, mid_at),
            format::pad(&mid, w - mid_at)
        );
    }
    let axis = format!(
        "{}now",
        &axis[..axis.len().saturating_sub(3).min(axis.len())]
    );
    frame.render_widget(
        Line::styled(axis, theme.dim()),
        Rect {
            x: plot.x,
            y: axis_y,
            width: plot.width,
            height: 1,
        },
    );
    let _ = Style::new();
}

/// A compact rate label, e.g. `"2.0 MiB/s"`.
fn short_rate(v: u64) -> String {
    units::rate(v).replace(".00 ", " ")
}

/// The value at sub-column `s` of `subcols`, right-aligned so the newest point is at the
/// right edge; `None` left of the oldest point.
fn sample(values: &[u64], s: usize, subcols: usize) -> Option<u64> {
    let p = ((s + 1) * POINTS / subcols.max(1)).saturating_sub(1);
    let missing = POINTS.saturating_sub(values.len());
    p.checked_sub(missing).and_then(|i| values.get(i).copied())
}

/// The plot as `height` lines of `width` cells (top line first).
pub(crate) fn plot_lines(
    values: &[u64],
    width: u16,
    height: u16,
    top: u64,
    style: GraphStyle,
) -> Vec<String> {
    let (w, h) = (usize::from(width), usize::from(height));
    let top = top.max(1) as u128;
    match style {
        GraphStyle::Braille => {
            // 2 sub-columns and 4 dot rows per cell
            let levels = h * 4;
            let heights: Vec<usize> = (0..w * 2)
                .map(|s| sample(values, s, w * 2).map_or(0, |v| level(v, top, levels)))
                .collect();
            (0..h)
                .map(|row| {
                    // dot rows covered by this cell row, counted from the bottom
                    let base = (h - 1 - row) * 4;
                    (0..w)
                        .map(|c| {
                            let mut bits = 0u32;
                            for (side, hgt) in [(0, heights[c * 2]), (1, heights[c * 2 + 1])] {
                                for dot in 0..4 {
                                    if hgt > base + dot {
                                        bits |= braille_bit(side, dot);
                                    }
                                }
                            }
                            char::from_u32(0x2800 + bits).unwrap_or(' ')
                        })
                        .map(|c| if c == '\u{2800}' { ' ' } else { c })
                        .collect()
                })
                .collect()
        }
        GraphStyle::Block | GraphStyle::Ascii => {
            let per_cell = if style == GraphStyle::Block { 8 } else { 2 };
            let levels = h * per_cell;
            let heights: Vec<usize> = (0..w)
                .map(|s| sample(values, s, w).map_or(0, |v| level(v, top, levels)))
                .collect();
            (0..h)
                .map(|row| {
                    let base = (h - 1 - row) * per_cell;
                    heights
                        .iter()
                        .map(|&hgt| {
                            let fill = hgt.saturating_sub(base).min(per_cell);
                            match (style, fill) {
                                (_, 0) => ' ',
                                (GraphStyle::Ascii, 1) => '.',
                                (GraphStyle::Ascii, _) => '#',
                                (_, f) => [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'][f],
                            }
                        })
                        .collect()
                })
                .collect()
        }
    }
}

/// Filled levels (0..=levels) for `v` on a scale of `top`; any non-zero rate shows at
/// least one level.
fn level(v: u64, top: u128, levels: usize) -> usize {
    if v == 0 {
        return 0;
    }
    let l = (u128::from(v) * levels as u128).div_ceil(top) as usize;
    l.clamp(1, levels)
}

/// The braille bit of dot row `dot` (0 = bottom) in column `side` (0 = left).
fn braille_bit(side: usize, dot: usize) -> u32 {
    // dots from the top: left 1,2,3,7 / right 4,5,6,8
    let left = [0x40, 0x04, 0x02, 0x01];
    let right = [0x80, 0x20, 0x10, 0x08];
    if side == 0 { left[dot] } else { right[dot] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round() {
        assert_eq!(scale(0), 1024);
        assert_eq!(scale(900), 1024);
        assert_eq!(scale(1500), 2048);
        assert_eq!(scale(3 << 20), 5 << 20);
        assert!(scale(u64::MAX) >= u64::MAX / 2);
    }

    #[test]
    fn plots_fill_from_the_bottom_newest_right() {
        let values = vec![100u64; POINTS];
        let block = plot_lines(&values, 4, 2, 200, GraphStyle::Block);
        assert_eq!(block, vec!["    ".to_owned(), "████".to_owned()]);
        let ascii = plot_lines(&[200], 4, 2, 200, GraphStyle::Ascii);
        assert_eq!(ascii, vec!["   #".to_owned(), "   #".to_owned()]);
        let braille = plot_lines(&values, 3, 1, 100, GraphStyle::Braille);
        assert_eq!(braille, vec!["⣿⣿⣿".to_owned()]);
        let none = plot_lines(&[], 3, 2, 100, GraphStyle::Braille);
        assert!(none.iter().all(|l| l.trim().is_empty()));
        // tiny rates still show
        let small = plot_lines(&[1], 2, 2, 1 << 30, GraphStyle::Block);
        assert_eq!(small[1], " ▁");
    }
}
