//! The message line's notice: one short text ("torrent added", "not added: …") and how it
//! reads, shown until the next key that does something, or replaced by the next notice.

/// How a status-line message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    /// A confirmation ("added …").
    Info,
    /// Something did not work.
    Error,
}

/// The notice shown in the message line, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notice {
    shown: Option<(String, NoticeLevel)>,
}

impl Notice {
    /// Shows `text` as a confirmation, replacing what was shown.
    pub fn info(&mut self, text: String) {
        self.shown = Some((text, NoticeLevel::Info));
    }

    /// Shows `text` as an error, replacing what was shown.
    pub fn error(&mut self, text: String) {
        self.shown = Some((text, NoticeLevel::Error));
    }

    /// Shows the error that `text` builds only when nothing is shown, so a stream of engine
    /// errors never hides the answer to what the user just did. Returns whether it shows.
    pub fn error_if_quiet(&mut self, text: impl FnOnce() -> String) -> bool {
        if self.shown.is_some() {
            return false;
        }
        self.error(text());
        true
    }

    /// Shows `text` as a confirmation, or clears the line for `None`.
    pub fn set(&mut self, text: Option<String>) {
        self.shown = text.map(|t| (t, NoticeLevel::Info));
    }

    /// Clears the line.
    pub fn clear(&mut self) {
        self.shown = None;
    }

    /// The text shown and its level.
    pub fn get(&self) -> Option<(&str, NoticeLevel)> {
        self.shown.as_ref().map(|(t, l)| (t.as_str(), *l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_notice_wins_and_keeps_its_level() {
        let mut n = Notice::default();
        assert_eq!(n.get(), None);
        n.info("torrent added".to_owned());
        assert_eq!(n.get(), Some(("torrent added", NoticeLevel::Info)));
        n.error("not added: bad file".to_owned());
        assert_eq!(n.get(), Some(("not added: bad file", NoticeLevel::Error)));
        n.set(Some("shutting down…".to_owned()));
        assert_eq!(n.get(), Some(("shutting down…", NoticeLevel::Info)));
        n.set(None);
        assert_eq!(n.get(), None);
        n.info("x".to_owned());
        n.clear();
        assert_eq!(n.get(), None);
    }

    #[test]
    fn a_background_error_never_hides_what_is_shown() {
        let mut n = Notice::default();
        n.info("removed debian.iso".to_owned());
        assert!(!n.error_if_quiet(|| unreachable!("not built when hidden")));
        assert_eq!(n.get(), Some(("removed debian.iso", NoticeLevel::Info)));
        n.clear();
        assert!(n.error_if_quiet(|| "disk full".to_owned()));
        assert_eq!(n.get(), Some(("disk full", NoticeLevel::Error)));
        assert!(
            !n.error_if_quiet(|| "second".to_owned()),
            "the first error stays"
        );
        assert_eq!(n.get().map(|(t, _)| t), Some("disk full"));
    }
}
