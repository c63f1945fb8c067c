//! What the UI shows under any popup: a [`Screen`] and, on the detail screen, a [`Tab`]
//! (with each tab's scroll state, [`TabScrolls`]), and which key [`Context`] that makes
//! active.

use super::action::Context;
use super::cycle;
use super::scroll::Scroll;

/// The screen shown under any popup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The torrent list.
    List,
    /// One torrent's detail view.
    Detail,
    /// Every engine event.
    Log,
}

/// A tab of the detail view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    /// Info hash, paths, sizes, dates, error and what to do.
    General,
    /// Connected peers.
    Peers,
    /// The file tree with priorities.
    Files,
    /// Trackers and their state.
    Trackers,
    /// The piece map.
    Pieces,
    /// Speed graphs.
    Speed,
    /// This torrent's events.
    Log,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 7] = [
        Tab::General,
        Tab::Peers,
        Tab::Files,
        Tab::Trackers,
        Tab::Pieces,
        Tab::Speed,
        Tab::Log,
    ];

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::General => "General",
            Tab::Peers => "Peers",
            Tab::Files => "Files",
            Tab::Trackers => "Trackers",
            Tab::Pieces => "Pieces",
            Tab::Speed => "Speed",
            Tab::Log => "Log",
        }
    }

    /// The next tab (`forward`) or the previous one, wrapping around.
    pub fn step(self, forward: bool) -> Tab {
        cycle::step(&Self::ALL, self, forward)
    }
}

impl Screen {
    /// The key context of this screen showing `tab` (the tab counts on the detail screen
    /// only), when no popup, help or search line is open.
    pub fn context(self, tab: Tab) -> Context {
        match (self, tab) {
            (Screen::List, _) => Context::List,
            (Screen::Log, _) => Context::Log,
            (Screen::Detail, Tab::Files) => Context::Files,
            (Screen::Detail, Tab::Peers) => Context::Peers,
            (Screen::Detail, Tab::Speed) => Context::Speed,
            (Screen::Detail, _) => Context::Detail,
        }
    }
}

/// Scroll state of each scrollable tab of the detail view.
#[derive(Debug, Default)]
pub struct TabScrolls {
    /// The General tab.
    pub general: Scroll,
    /// The Peers tab.
    pub peers: Scroll,
    /// The Files tab.
    pub files: Scroll,
    /// The Trackers tab.
    pub trackers: Scroll,
    /// The Log tab.
    pub log: Scroll,
}

impl TabScrolls {
    /// The state for a torrent just opened: every tab at its top, the Log tab at its newest
    /// event.
    pub fn opened() -> TabScrolls {
        TabScrolls {
            log: Scroll::at(usize::MAX / 2),
            ..TabScrolls::default()
        }
    }

    /// The scroll state of `tab`; `None` for the tabs that do not scroll (Pieces, Speed).
    pub fn of_mut(&mut self, tab: Tab) -> Option<&mut Scroll> {
        match tab {
            Tab::General => Some(&mut self.general),
            Tab::Peers => Some(&mut self.peers),
            Tab::Files => Some(&mut self.files),
            Tab::Trackers => Some(&mut self.trackers),
            Tab::Log => Some(&mut self.log),
            Tab::Pieces | Tab::Speed => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_step_both_ways_and_wrap() {
        assert_eq!(Tab::General.step(true), Tab::Peers);
        assert_eq!(Tab::Log.step(true), Tab::General);
        assert_eq!(Tab::General.step(false), Tab::Log);
        for tab in Tab::ALL {
            assert_eq!(tab.step(true).step(false), tab);
        }
        let mut tab = Tab::Files;
        for _ in 0..Tab::ALL.len() {
            tab = tab.step(true);
        }
        assert_eq!(tab, Tab::Files, "a full round comes back");
    }

    #[test]
    fn titles_are_distinct() {
        let titles: std::collections::HashSet<_> = Tab::ALL.iter().map(|t| t.title()).collect();
        assert_eq!(titles.len(), Tab::ALL.len());
    }

    #[test]
    fn only_the_detail_screen_cares_about_the_tab() {
        assert_eq!(Screen::List.context(Tab::Files), Context::List);
        assert_eq!(Screen::Log.context(Tab::Speed), Context::Log);
        assert_eq!(Screen::Detail.context(Tab::Files), Context::Files);
        assert_eq!(Screen::Detail.context(Tab::Speed), Context::Speed);
        assert_eq!(Screen::Detail.context(Tab::Peers), Context::Peers);
        assert_eq!(Screen::Detail.context(Tab::Trackers), Context::Detail);
        assert_eq!(Screen::Detail.context(Tab::General), Context::Detail);
    }

    #[test]
    fn each_scrolling_tab_has_its_own_state() {
        let mut scrolls = TabScrolls::opened();
        assert_eq!(scrolls.general.cursor, 0);
        assert!(scrolls.log.cursor > 1 << 32, "the Log tab opens at its end");
        for (i, tab) in Tab::ALL.into_iter().enumerate() {
            if let Some(s) = scrolls.of_mut(tab) {
                s.cursor = i;
            }
        }
        assert_eq!(
            [
                scrolls.general.cursor,
                scrolls.peers.cursor,
                scrolls.files.cursor,
                scrolls.trackers.cursor,
                scrolls.log.cursor
            ],
            [0, 1, 2, 3, 6]
        );
        assert!(scrolls.of_mut(Tab::Pieces).is_none() && scrolls.of_mut(Tab::Speed).is_none());
    }
}
