//! What sanitising did to a torrent's name or a file's path, so that a front end can show
//! the name that is used on disk and say what was changed, instead of the torrent's raw
//! name (which may hold `..`, `/`, control characters ... see [`super::path`]).
//!
//! [`super::path::sanitize_component_noting`] records a [`PathChange`] for each rule it
//! applies; the parser adds [`PathChange::Nameless`] and [`PathChange::Renamed`], and keeps
//! the set in [`super::Metainfo::name_changes`] and [`super::FileInfo::changes`].

use std::fmt;

/// One way the name or path used on disk differs from the one in the torrent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathChange {
    /// A path component `..` was dropped.
    ParentDropped,
    /// A `..` joined to other names by separators inside one component (`foo/../../bar`,
    /// `../x`) was neutralised: the separators were removed, so it is no parent any more.
    HiddenParent,
    /// A component started with `/` or `\` or a drive (`C:\`): an absolute path, made
    /// relative.
    Absolute,
    /// `/` or `\` inside a component were removed (they never separate folders there).
    Separator,
    /// An empty or `.` component was dropped.
    EmptyDropped,
    /// Control characters (C0, DEL, C1) were replaced by `_`.
    Control,
    /// NUL bytes and text-direction controls (U+200E, U+202E ...) were removed.
    Invisible,
    /// Bytes that are not UTF-8 were replaced by `_`.
    NotUtf8,
    /// A component of only dots and spaces (`...`, `" "`) was replaced by `_`.
    DotsAndSpaces,
    /// A Windows drive designator (`C:`) was renamed `C_`.
    DriveLetter,
    /// A component longer than 240 bytes was shortened (its extension kept).
    Shortened,
    /// Nothing usable was left of a file's path: it is named `_`.
    Nameless,
    /// Nothing usable was left of the torrent's name: its folder (or single file) is named
    /// after the info hash in hex, as in libtorrent.
    NamedAfterInfoHash,
    /// Another file of the torrent has the same path (or uses it as a folder), ignoring
    /// letter case: a counter was added (`b.1.bin`).
    Renamed,
}

impl PathChange {
    /// Every change, in the order [`PathChanges`] lists them.
    pub const ALL: [PathChange; 14] = [
        PathChange::ParentDropped,
        PathChange::HiddenParent,
        PathChange::Absolute,
        PathChange::Separator,
        PathChange::EmptyDropped,
        PathChange::Control,
        PathChange::Invisible,
        PathChange::NotUtf8,
        PathChange::DotsAndSpaces,
        PathChange::DriveLetter,
        PathChange::Shortened,
        PathChange::Nameless,
        PathChange::NamedAfterInfoHash,
        PathChange::Renamed,
    ];

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for PathChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathChange::ParentDropped => "'..' dropped",
            PathChange::HiddenParent => "'..' joined to a name by slashes neutralised",
            PathChange::Absolute => "absolute path made relative",
            PathChange::Separator => "slashes inside a name removed",
            PathChange::EmptyDropped => "empty or '.' folder dropped",
            PathChange::Control => "control characters replaced by '_'",
            PathChange::Invisible => "NUL and text-direction characters removed",
            PathChange::NotUtf8 => "bytes that are not UTF-8 replaced by '_'",
            PathChange::DotsAndSpaces => "a name of only dots and spaces replaced by '_'",
            PathChange::DriveLetter => "drive letter 'X:' renamed 'X_'",
            PathChange::Shortened => "name longer than 240 bytes shortened",
            PathChange::Nameless => "nothing usable left: named '_'",
            PathChange::NamedAfterInfoHash => "nothing usable left: named after the info hash",
            PathChange::Renamed => "a counter added: another file has the same path",
        })
    }
}

/// A set of [`PathChange`]s (two bytes). Empty when the name is used as the torrent gives
/// it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PathChanges(u16);

impl PathChanges {
    /// No change.
    pub const NONE: PathChanges = PathChanges(0);

    /// Whether nothing was changed.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `change` is in the set.
    pub fn contains(self, change: PathChange) -> bool {
        self.0 & change.bit() != 0
    }

    /// Add `change`.
    pub fn insert(&mut self, change: PathChange) {
        self.0 |= change.bit();
    }

    /// The changes of both sets.
    pub fn union(self, other: PathChanges) -> PathChanges {
        PathChanges(self.0 | other.0)
    }

    /// The changes in the set, in [`PathChange::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = PathChange> {
        PathChange::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }

    /// The changes for people, `; `-separated (`"'..' dropped; control characters replaced
    /// by '_'"`), or `None` when there is none.
    pub fn describe(self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let parts: Vec<String> = self.iter().map(|c| c.to_string()).collect();
        Some(parts.join("; "))
    }
}

impl FromIterator<PathChange> for PathChanges {
    fn from_iter<I: IntoIterator<Item = PathChange>>(iter: I) -> PathChanges {
        let mut set = PathChanges::NONE;
        for c in iter {
            set.insert(c);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_each_change_once_in_a_fixed_order() {
        let mut s = PathChanges::NONE;
        assert!(s.is_empty());
        assert_eq!(s.describe(), None);
        s.insert(PathChange::Renamed);
        s.insert(PathChange::ParentDropped);
        s.insert(PathChange::Renamed);
        assert!(s.contains(PathChange::Renamed));
        assert!(!s.contains(PathChange::Control));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![PathChange::ParentDropped, PathChange::Renamed]
        );
        assert_eq!(
            s.describe().unwrap(),
            "'..' dropped; a counter added: another file has the same path"
        );
        let t: PathChanges = [PathChange::Control].into_iter().collect();
        assert_eq!(t.union(s).iter().count(), 3);
    }

    /// What the sanitiser says it did, for each unsafe shape of a component: the change
    /// named, and the component it gives (`None`: dropped).
    #[test]
    fn the_sanitiser_notes_each_rule_it_applies() {
        use super::super::path::{CUT_COMPONENT_AT_BYTES, sanitize_component_noting};
        use PathChange::*;
        let long = format!("{}.mkv", "a".repeat(300));
        for (raw, want, out) in [
            (&b"plain name.txt"[..], &[][..], Some("plain name.txt")),
            (b"..", &[ParentDropped], None),
            (b".", &[EmptyDropped], None),
            (b"", &[EmptyDropped], None),
            (b"foo/../../bar", &[HiddenParent], Some("foo....bar")),
            (b"../x", &[HiddenParent], Some("..x")),
            (b"a\\..", &[HiddenParent], Some("a..")),
            (b"/etc/passwd", &[Absolute, Separator], Some("etcpasswd")),
            (b"/", &[Absolute], None),
            (b"\\\\server", &[Absolute], Some("server")),
            (b"C:\\Windows", &[Absolute], Some("C:Windows")),
            (b"a/b", &[Separator], Some("ab")),
            (b"Icon\r", &[Control], Some("Icon_")),
            (b"red\x1b[31m", &[Control], Some("red_[31m")),
            (b"a\0b", &[Invisible], Some("ab")),
            ("exe\u{202e}txt".as_bytes(), &[Invisible], Some("exetxt")),
            (b"caf\xe9", &[NotUtf8], Some("caf_")),
            (b"...", &[DotsAndSpaces], Some("_")),
            (b" ", &[DotsAndSpaces], Some("_")),
            (b"C:", &[DriveLetter], Some("C_")),
            (b"X: The Movie", &[], Some("X: The Movie")),
            (b".hidden", &[], Some(".hidden")),
        ] {
            let mut got = PathChanges::NONE;
            let name = sanitize_component_noting(raw, &mut got);
            let want: PathChanges = want.iter().copied().collect();
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(raw));
            assert_eq!(name.as_deref(), out, "{:?}", String::from_utf8_lossy(raw));
        }
        let mut got = PathChanges::NONE;
        let name = sanitize_component_noting(long.as_bytes(), &mut got).unwrap();
        assert!(name.ends_with(".mkv") && name.len() < long.len(), "{name}");
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![Shortened]);
        // exactly at the cut: nothing dropped, nothing said
        let mut got = PathChanges::NONE;
        let at = "b".repeat(CUT_COMPONENT_AT_BYTES);
        assert_eq!(
            sanitize_component_noting(at.as_bytes(), &mut got).unwrap(),
            at
        );
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn every_change_has_its_own_bit_and_text() {
        let all: PathChanges = PathChange::ALL.into_iter().collect();
        assert_eq!(all.iter().collect::<Vec<_>>(), PathChange::ALL.to_vec());
        let texts: std::collections::HashSet<String> =
            PathChange::ALL.iter().map(|c| c.to_string()).collect();
        assert_eq!(texts.len(), PathChange::ALL.len());
    }
}
