//! Turning the names in a .torrent into safe relative paths on disk.
//!
//! BEP 3 gives a torrent's `name` and each file's `path` as lists of strings chosen by
//! whoever made the torrent. A hostile torrent can try to write outside the download
//! directory (`..`, `/etc/passwd`, `C:`), or use names that cannot be created (NUL bytes)
//! or that only confuse (`...`, `"  "`). The rules applied here, per component:
//!
//! - `..`, a `/` or `\` separator, a NUL byte, a Windows drive designator (`C:`), and a
//!   component made only of dots and spaces (`...`, `". ."`) are refused
//!   ([`UnsafeComponent`]).
//! - Empty components and `.` are refused by [`disk_component`]; the metainfo parser drops
//!   them from file `path` lists instead (old generators wrote a leading empty element), but
//!   refuses them as the torrent `name`.
//! - Control characters (C0, DEL, C1) are replaced by `_` on disk (the display name keeps
//!   them): the macOS folder-icon file `Icon\r` loads as `Icon_`.
//! - Components longer than [`MAX_COMPONENT_BYTES`] bytes are cut on a character boundary,
//!   keeping a short extension (up to [`MAX_KEPT_EXTENSION_BYTES`] bytes, dot included).
//! - Names that were not valid UTF-8 (legacy code pages such as GBK, whose second bytes
//!   may be 0x5C) are converted lossily (U+FFFD for invalid bytes) and their `\` bytes are
//!   read as `_` rather than as a separator; every other rule still applies.
//!
//! [`is_contained`] is the final check on a joined path: relative, only normal components.

use std::path::{Component, Path};

/// Longest path component written to disk, in bytes (`NAME_MAX` of ext4, XFS, btrfs).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Longest extension (dot included), in bytes, that [`disk_component`] keeps when it has
/// to shorten a component; longer "extensions" are cut with the rest of the name.
pub const MAX_KEPT_EXTENSION_BYTES: usize = 32;

/// Why a name or path component from a torrent cannot be used on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeComponent {
    /// The component is the empty string.
    #[error("is empty")]
    Empty,
    /// The component is `.` (the current directory).
    #[error("is '.' (the current directory)")]
    Dot,
    /// The component is `..` (the parent directory).
    #[error("is '..' (would escape the download directory)")]
    DotDot,
    /// The component contains `/` or `\`, so it is really several components, possibly
    /// absolute (`/etc/x`) or climbing (`..\..`).
    #[error("contains a path separator ('/' or '\\') (could escape the download directory)")]
    Separator,
    /// The component contains a NUL byte, which no file name can hold.
    #[error("contains a NUL byte")]
    Nul,
    /// The component is made only of dots and spaces (`...`, `" "`), which some systems
    /// trim to `..` or to nothing.
    #[error("consists only of dots and spaces")]
    OnlyDotsAndSpaces,
    /// The component is a Windows drive designator such as `C:` (an absolute path there).
    #[error("is a Windows drive designator such as 'C:'")]
    DriveLetter,
}

/// Check one component as decoded from the torrent (after lossy UTF-8 conversion), without
/// changing it.
///
/// # Errors
/// The first [`UnsafeComponent`] rule it breaks.
pub fn check_component(text: &str) -> Result<(), UnsafeComponent> {
    if text.contains('\0') {
        return Err(UnsafeComponent::Nul);
    }
    match text {
        "" => return Err(UnsafeComponent::Empty),
        "." => return Err(UnsafeComponent::Dot),
        ".." => return Err(UnsafeComponent::DotDot),
        _ => {}
    }
    if text.contains(['/', '\\']) {
        return Err(UnsafeComponent::Separator);
    }
    if text.chars().all(|c| c == '.' || c == ' ') {
        return Err(UnsafeComponent::OnlyDotsAndSpaces);
    }
    let b = text.as_bytes();
    if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(UnsafeComponent::DriveLetter);
    }
    Ok(())
}

/// The on-disk form of one name or path component: checked with [`check_component`],
/// control characters replaced by `_`, cut to [`MAX_COMPONENT_BYTES`] bytes.
///
/// `text` is the component as decoded; `was_utf8` is false when it came from bytes that
/// were not valid UTF-8 (then `\` is taken as a legacy multi-byte trail byte and becomes
/// `_`). The result is always a single normal path component.
///
/// # Errors
/// An [`UnsafeComponent`] when the component is refused (also when shortening would turn
/// it into something unsafe, e.g. only dots).
pub fn disk_component(text: &str, was_utf8: bool) -> Result<String, UnsafeComponent> {
    let text = if was_utf8 {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.replace('\\', "_"))
    };
    check_component(&text)?;
    let replaced: String = text
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    let out = truncate_component(replaced, MAX_COMPONENT_BYTES);
    // The transformations cannot introduce a separator or `..`, but check the result again
    // so that nothing unsafe ever leaves this function.
    check_component(&out)?;
    let mut comps = Path::new(&out).components();
    match (comps.next(), comps.next()) {
        (Some(Component::Normal(_)), None) => Ok(out),
        _ => Err(UnsafeComponent::Separator),
    }
}

/// Cut `s` to at most `max` bytes on a character boundary, keeping its extension when the
/// extension is at most [`MAX_KEPT_EXTENSION_BYTES`] bytes (dot included).
fn truncate_component(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let ext_len = match s.rfind('.') {
        Some(i) if i > 0 && s.len() - i <= MAX_KEPT_EXTENSION_BYTES && s.len() - i < max => {
            s.len() - i
        }
        _ => 0,
    };
    let stem_end = floor_char_boundary(&s, max - ext_len);
    let mut out = String::with_capacity(max);
    out.push_str(&s[..stem_end]);
    out.push_str(&s[s.len() - ext_len..]);
    out
}

/// The largest index `<= i` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// True when `path` is non-empty, relative, and made only of normal components (no `..`,
/// `.`, root or Windows prefix), i.e. joining it to a directory stays inside that directory.
pub fn is_contained(path: &Path) -> bool {
    let mut any = false;
    for c in path.components() {
        match c {
            Component::Normal(_) => any = true,
            Component::CurDir
            | Component::ParentDir
            | Component::RootDir
            | Component::Prefix(_) => {
                return false;
            }
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_unsafe_components() {
        for (text, why) in [
            ("", UnsafeComponent::Empty),
            (".", UnsafeComponent::Dot),
            ("..", UnsafeComponent::DotDot),
            ("../x", UnsafeComponent::Separator),
            ("/etc", UnsafeComponent::Separator),
            ("a/b", UnsafeComponent::Separator),
            ("..\\..\\x", UnsafeComponent::Separator),
            ("a\0b", UnsafeComponent::Nul),
            ("...", UnsafeComponent::OnlyDotsAndSpaces),
            (" ", UnsafeComponent::OnlyDotsAndSpaces),
            (". .", UnsafeComponent::OnlyDotsAndSpaces),
            ("C:", UnsafeComponent::DriveLetter),
            ("z:", UnsafeComponent::DriveLetter),
        ] {
            assert_eq!(disk_component(text, true), Err(why), "{text:?}");
        }
    }

    #[test]
    fn keeps_ordinary_names_and_replaces_controls() {
        assert_eq!(disk_component("a.txt", true).unwrap(), "a.txt");
        assert_eq!(
            disk_component("X: The Movie", true).unwrap(),
            "X: The Movie"
        );
        assert_eq!(disk_component(".hidden", true).unwrap(), ".hidden");
        assert_eq!(disk_component("Icon\r", true).unwrap(), "Icon_");
        assert_eq!(disk_component("a\u{1b}[2Jb", true).unwrap(), "a_[2Jb");
        assert_eq!(disk_component("\u{85}x", true).unwrap(), "_x");
    }

    #[test]
    fn legacy_backslash_is_not_a_separator() {
        // GBK "\x95\x5c" decodes lossily to U+FFFD followed by '\'.
        let text = String::from_utf8_lossy(b"\x95\x5c.txt").into_owned();
        assert_eq!(disk_component(&text, false).unwrap(), "\u{fffd}_.txt");
        assert_eq!(disk_component(&text, true), Err(UnsafeComponent::Separator));
        // ".." stays refused even through the legacy path.
        assert_eq!(disk_component("..", false), Err(UnsafeComponent::DotDot));
    }

    #[test]
    fn long_components_are_cut_keeping_the_extension() {
        let long = format!("{}.mkv", "é".repeat(200)); // 400 + 4 bytes
        let out = disk_component(&long, true).unwrap();
        assert!(out.len() <= MAX_COMPONENT_BYTES);
        assert!(out.ends_with(".mkv"));
        assert!(out.starts_with("éé"));
        // an over-long "extension" is cut like the rest
        let weird = format!("a.{}", "b".repeat(400));
        let out = disk_component(&weird, true).unwrap();
        assert_eq!(out.len(), MAX_COMPONENT_BYTES);
        assert!(out.starts_with("a.bbb"));
        // a cut that leaves only spaces is refused
        let spaces = format!("{}x", " ".repeat(300));
        assert_eq!(
            disk_component(&spaces, true),
            Err(UnsafeComponent::OnlyDotsAndSpaces)
        );
    }

    #[test]
    fn containment() {
        assert!(is_contained(Path::new("a/b/c")));
        assert!(is_contained(Path::new("a")));
        assert!(!is_contained(Path::new("")));
        assert!(!is_contained(Path::new("/a")));
        assert!(!is_contained(Path::new("a/../b")));
        assert!(!is_contained(Path::new("./a")));
    }
}
