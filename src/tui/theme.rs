//! Colours, text styles and the symbols the screen is drawn with.
//!
//! Colours are the 16 named ANSI colours only, sent as SGR 30–37/90–97 (see
//! [`super::terminal::AnsiWriter`]), so the user's own terminal palette applies; each role can
//! be changed in the config's `[colors]` section. The selection is the whole row in reverse
//! video, so it shows without colour. `NO_COLOR` (any non-empty value) drops every colour and
//! keeps bold/reverse/dim. In ASCII mode no box drawing, block, braille or other non-ASCII
//! character is drawn, names included (non-ASCII characters show as `?`).

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

use crate::api::{TorrentRow, TorrentState};
use crate::config::ui::{EntryProblem, Lined};

/// A colour role that the config's `[colors]` section can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Download rates and the ↓ graph.
    Down,
    /// Upload rates and the ↑ graph.
    Up,
    /// Filled part of progress bars, Seeding/Completed, pieces we have.
    Good,
    /// Downloading state, pieces in flight.
    Active,
    /// Checking, metadata.
    Busy,
    /// Warnings (tracker errors on a running torrent), notices.
    Warning,
    /// Errors.
    Error,
    /// Secondary text, empty part of bars, missing pieces.
    Dim,
    /// Key names in hints and help.
    Key,
    /// Status bar background.
    StatusBg,
    /// Status bar text.
    StatusFg,
    /// Marked rows (bulk selection) marker.
    Mark,
}

impl Role {
    /// Every role with its config key and default colour.
    pub const ALL: [(Role, &'static str, Color); 12] = [
        (Role::Down, "down", Color::Cyan),
        (Role::Up, "up", Color::Magenta),
        (Role::Good, "good", Color::Green),
        (Role::Active, "active", Color::Cyan),
        (Role::Busy, "busy", Color::Magenta),
        (Role::Warning, "warning", Color::Yellow),
        (Role::Error, "error", Color::Red),
        (Role::Dim, "dim", Color::DarkGray),
        (Role::Key, "key", Color::Yellow),
        (Role::StatusBg, "status_bg", Color::Blue),
        (Role::StatusFg, "status_fg", Color::White),
        (Role::Mark, "mark", Color::Yellow),
    ];
}

/// Parses a colour name of the config file: `black`, `red`, `green`, `yellow`, `blue`,
/// `magenta`, `cyan`, `white` (SGR 37), their `bright_` forms (SGR 90–97; `bright_black` is
/// also `gray`/`grey`), or `default` (the terminal's own colour).
///
/// Errors: the list of accepted names.
pub fn parse_color(name: &str) -> Result<Color, String> {
    let n = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    Ok(match n.as_str() {
        "default" | "reset" | "none" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "white" => Color::Gray,
        "bright_black" | "gray" | "grey" => Color::DarkGray,
        "bright_red" => Color::LightRed,
        "bright_green" => Color::LightGreen,
        "bright_yellow" => Color::LightYellow,
        "bright_blue" => Color::LightBlue,
        "bright_magenta" => Color::LightMagenta,
        "bright_cyan" => Color::LightCyan,
        "bright_white" => Color::White,
        _ => {
            return Err(format!(
                "unknown colour {name:?}: use default, black, red, green, yellow, blue, \
                 magenta, cyan, white or bright_ with one of them"
            ));
        }
    })
}

/// The config file's `[colors]` entries (role name → colour name) as colours by role.
///
/// # Errors
/// Every entry naming a role there is not (with the roles there are) or a colour
/// [`parse_color`] does not know (with the names there are), each with its line.
pub fn colors_from_config(
    entries: &BTreeMap<String, Lined<String>>,
) -> Result<BTreeMap<Role, Color>, Vec<EntryProblem>> {
    let mut colors = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, value) in entries {
        let problem = |problem: String| EntryProblem {
            line: value.line,
            table: "colors",
            key: name.clone(),
            problem,
        };
        let Some((role, _, _)) = Role::ALL.iter().find(|(_, n, _)| n == name) else {
            let names: Vec<&str> = Role::ALL.iter().map(|(_, n, _)| *n).collect();
            problems.push(problem(format!(
                "unknown role (roles: {})",
                names.join(", ")
            )));
            continue;
        };
        match parse_color(&value.value) {
            Ok(color) => {
                colors.insert(*role, color);
            }
            Err(e) => problems.push(problem(e)),
        }
    }
    if problems.is_empty() {
        Ok(colors)
    } else {
        Err(problems)
    }
}

/// The characters the screen is drawn with: Unicode or ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbols {
    /// ASCII only.
    pub ascii: bool,
    /// Box borders.
    pub border: border::Set<'static>,
    /// Filled / empty part of a progress bar.
    pub bar: (&'static str, &'static str),
    /// Marker of marked rows.
    pub mark: &'static str,
    /// Download / upload arrows.
    pub down: &'static str,
    /// Upload arrow.
    pub up: &'static str,
    /// Cut text ends with this.
    pub ellipsis: char,
    /// Sort direction markers (ascending, descending).
    pub sort: (&'static str, &'static str),
    /// Piece map cells: have, downloading, partly have (a cell of several pieces), missing.
    pub pieces: [&'static str; 4],
    /// Folder fold markers (open, closed).
    pub fold: (&'static str, &'static str),
    /// Separator between status bar items and tabs.
    pub sep: &'static str,
    /// Infinity (ETA unknown).
    pub infinity: &'static str,
    /// A figure not known yet (the size of a magnet link before its metadata).
    pub unknown: &'static str,
}

/// Unicode symbols.
pub const UNICODE: Symbols = Symbols {
    ascii: false,
    border: border::ROUNDED,
    bar: ("━", "─"),
    mark: "●",
    down: "↓",
    up: "↑",
    ellipsis: '…',
    sort: ("▲", "▼"),
    pieces: ["█", "▒", "▓", "·"],
    fold: ("▾", "▸"),
    sep: "│",
    infinity: "∞",
    unknown: "–",
};

/// ASCII-only symbols.
pub const ASCII: Symbols = Symbols {
    ascii: true,
    border: border::Set {
        top_left: "+",
        top_right: "+",
        bottom_left: "+",
        bottom_right: "+",
        vertical_left: "|",
        vertical_right: "|",
        horizontal_top: "-",
        horizontal_bottom: "-",
    },
    bar: ("#", "-"),
    mark: "*",
    down: "v",
    up: "^",
    ellipsis: '~',
    sort: ("^", "v"),
    pieces: ["#", "+", "=", "."],
    fold: ("-", "+"),
    sep: "|",
    infinity: "inf",
    unknown: "-",
};

/// How speed graphs are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphStyle {
    /// Braille dots: 2×4 points per cell.
    Braille,
    /// Block elements (eighths): for terminals and fonts without braille (the Linux console).
    Block,
    /// `#` and `.`.
    Ascii,
}

impl GraphStyle {
    /// The style for a terminal: ASCII in ASCII mode, blocks on the Linux console (`TERM`
    /// `linux`, whose font has no braille), braille elsewhere.
    pub fn for_terminal(ascii: bool, term: Option<&str>) -> GraphStyle {
        if ascii {
            GraphStyle::Ascii
        } else if term == Some("linux") {
            GraphStyle::Block
        } else {
            GraphStyle::Braille
        }
    }
}

/// Colours and symbols in effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// How graphs are drawn.
    pub graph: GraphStyle,
    colors: BTreeMap<Role, Color>,
    /// `NO_COLOR`: colours dropped, modifiers kept.
    pub no_color: bool,
    /// The characters to draw with.
    pub sym: Symbols,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::new(&BTreeMap::new(), false, false)
    }
}

impl Theme {
    /// The default colours with `overrides` (role → colour), without colours when
    /// `no_color`, drawn in ASCII when `ascii`.
    pub fn new(overrides: &BTreeMap<Role, Color>, no_color: bool, ascii: bool) -> Theme {
        let mut colors: BTreeMap<Role, Color> =
            Role::ALL.iter().map(|(r, _, c)| (*r, *c)).collect();
        colors.extend(overrides.iter().map(|(r, c)| (*r, *c)));
        Theme {
            graph: if ascii {
                GraphStyle::Ascii
            } else {
                GraphStyle::Braille
            },
            colors,
            no_color,
            sym: if ascii { ASCII } else { UNICODE },
        }
    }

    /// The colour of `role` (`Reset` under `NO_COLOR`).
    pub fn color(&self, role: Role) -> Color {
        if self.no_color {
            Color::Reset
        } else {
            self.colors.get(&role).copied().unwrap_or(Color::Reset)
        }
    }

    /// Foreground style of `role`.
    pub fn fg(&self, role: Role) -> Style {
        Style::new().fg(self.color(role))
    }

    /// Table header.
    pub fn header(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    /// The selected row: reverse video over the whole row, in the terminal's own
    /// foreground and background, so the bar is one even block (coloured cells would turn
    /// into coloured patches in reverse).
    pub fn selected(&self) -> Style {
        Style::new()
            .fg(Color::Reset)
            .bg(Color::Reset)
            .add_modifier(Modifier::REVERSED)
    }

    /// Titles (help sections, field labels, the active tab).
    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    /// Secondary text: the dim colour, and the dim attribute without colours.
    pub fn dim(&self) -> Style {
        if self.no_color {
            Style::new().add_modifier(Modifier::DIM)
        } else {
            self.fg(Role::Dim)
        }
    }

    /// Key names.
    pub fn key(&self) -> Style {
        self.fg(Role::Key).add_modifier(Modifier::BOLD)
    }

    /// Warnings.
    pub fn warning(&self) -> Style {
        self.fg(Role::Warning)
    }

    /// Errors (bold, so they show without colour).
    pub fn error(&self) -> Style {
        self.fg(Role::Error).add_modifier(Modifier::BOLD)
    }

    /// The status bar line.
    pub fn status_bar(&self) -> Style {
        if self.no_color {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
                .fg(self.color(Role::StatusFg))
                .bg(self.color(Role::StatusBg))
        }
    }

    /// Key names inside the status bar.
    pub fn status_key(&self) -> Style {
        self.status_bar()
            .fg(self.color(Role::Key))
            .add_modifier(Modifier::BOLD)
    }

    /// Style of a torrent's state label: errors, warnings (a tracker message on a running
    /// torrent), otherwise a colour per state.
    pub fn state(&self, row: &TorrentRow) -> Style {
        match row.state {
            TorrentState::Error => self.error(),
            _ if row.message.is_some() => self.warning(),
            TorrentState::Downloading => self.fg(Role::Active),
            TorrentState::Seeding | TorrentState::Completed => self.fg(Role::Good),
            TorrentState::Checking | TorrentState::FetchingMetadata | TorrentState::Moving => {
                self.fg(Role::Busy)
            }
            TorrentState::Paused
            | TorrentState::Queued
            | TorrentState::QueuedDownload
            | TorrentState::QueuedSeed => self.dim(),
        }
    }
}

/// Whether the locale's character set is UTF-8, from `LC_ALL`, then `LC_CTYPE`, then `LANG`
/// (the first one set and non-empty decides, as the C library does); unset everywhere means
/// the "C" locale, which is ASCII.
pub fn locale_is_utf8(var: impl Fn(&str) -> Option<String>) -> bool {
    for name in ["LC_ALL", "LC_CTYPE", "LANG"] {
        if let Some(value) = var(name).filter(|v| !v.is_empty()) {
            let v = value.to_ascii_lowercase();
            return v.contains("utf-8") || v.contains("utf8");
        }
    }
    false
}

/// Whether `NO_COLOR` asks for no colours (set and not empty, per no-color.org).
pub fn no_color_requested(var: impl Fn(&str) -> Option<String>) -> bool {
    var("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_detection() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(locale_is_utf8(env(&[("LANG", "en_US.UTF-8")])));
        assert!(locale_is_utf8(env(&[
            ("LANG", "C"),
            ("LC_CTYPE", "C.utf8")
        ])));
        assert!(!locale_is_utf8(env(&[
            ("LANG", "en_US.UTF-8"),
            ("LC_ALL", "C")
        ])));
        assert!(!locale_is_utf8(env(&[])));
        assert!(!locale_is_utf8(env(&[("LANG", "POSIX")])));
        assert!(locale_is_utf8(env(&[
            ("LC_ALL", ""),
            ("LANG", "de_DE.UTF-8")
        ])));
        assert!(no_color_requested(env(&[("NO_COLOR", "1")])));
        assert!(!no_color_requested(env(&[("NO_COLOR", "")])));
    }

    #[test]
    fn colour_names() {
        assert_eq!(parse_color("cyan"), Ok(Color::Cyan));
        assert_eq!(parse_color("Bright-White"), Ok(Color::White));
        assert_eq!(parse_color("white"), Ok(Color::Gray));
        assert_eq!(parse_color("grey"), Ok(Color::DarkGray));
        assert_eq!(parse_color("default"), Ok(Color::Reset));
        assert!(parse_color("#ff0000").unwrap_err().contains("bright_"));
    }

    #[test]
    fn config_colours_by_role_and_problems_with_their_line() {
        let lined = |pairs: &[(&str, &str, usize)]| -> BTreeMap<String, Lined<String>> {
            pairs
                .iter()
                .map(|(role, color, line)| {
                    let value = (*color).to_owned();
                    ((*role).to_owned(), Lined { value, line: *line })
                })
                .collect()
        };
        let c =
            colors_from_config(&lined(&[("down", "bright_cyan", 4), ("mark", "red", 5)])).unwrap();
        assert_eq!(c[&Role::Down], Color::LightCyan);
        assert_eq!(c[&Role::Mark], Color::Red);
        let e = colors_from_config(&lined(&[("down", "pink", 4), ("sky", "red", 6)])).unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        let pink = e.iter().find(|p| p.key == "down").unwrap();
        assert_eq!((pink.line, pink.table), (4, "colors"));
        assert!(
            pink.problem.contains("pink") && pink.problem.contains("bright_"),
            "{pink:?}"
        );
        let sky = e.iter().find(|p| p.key == "sky").unwrap();
        assert_eq!(sky.line, 6);
        assert!(
            sky.to_string()
                .starts_with("line 6: [colors] sky: unknown role (roles: down, up,")
        );
    }

    #[test]
    fn no_color_keeps_modifiers_only() {
        let t = Theme::new(&BTreeMap::new(), true, false);
        assert_eq!(t.fg(Role::Down).fg, Some(Color::Reset));
        assert!(t.error().add_modifier.contains(Modifier::BOLD));
        assert!(t.status_bar().add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn ascii_symbols_are_ascii() {
        let s = ASCII;
        let all = [
            s.bar.0,
            s.bar.1,
            s.mark,
            s.down,
            s.up,
            s.sort.0,
            s.sort.1,
            s.fold.0,
            s.fold.1,
            s.sep,
            s.infinity,
            s.unknown,
            s.border.top_left,
            s.border.horizontal_top,
            s.border.vertical_left,
        ];
        for text in all.iter().chain(s.pieces.iter()) {
            assert!(text.is_ascii(), "{text:?}");
        }
        assert!(s.ellipsis.is_ascii());
    }
}
