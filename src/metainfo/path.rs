//! Turning the names in a .torrent into safe relative paths on disk.
//!
//! BEP 3 gives a torrent's `name` and each file's `path` as lists of byte strings chosen by
//! whoever made the torrent. A hostile torrent can try to write outside the download
//! directory (`..`, `/etc/passwd`, `..\..\x`), or use names that cannot be created (NUL
//! bytes) or that only confuse (control characters, right-to-left overrides). Nothing is
//! refused for its name: every component is *sanitised* ([`sanitize_component`]), the way
//! libtorrent 2.0.8 does it where that is sane, so that a torrent libtorrent (and the
//! clients built on it) loads also loads here, with the same names on disk. The rules, per
//! component, in order:
//!
//! 1. Bytes that are not valid UTF-8 become `_`, one per invalid sequence as libtorrent
//!    counts them (the lead byte says how many bytes the sequence claims): legacy code
//!    pages (GBK, Shift-JIS) give the same names as in libtorrent.
//! 2. `/` and `\` are removed: inside a component they are never separators, so
//!    `foo/../../bar` is the single name `foo....bar` and `/etc` is `etc`. NUL bytes and
//!    the bidirectional-text controls ([`crate::untrusted::is_bidi_control`]: U+061C,
//!    U+200E, U+200F, U+202A..=U+202E, and the isolates U+2066..=U+2069, which libtorrent
//!    keeps) are removed too.
//! 3. Other control characters (C0, DEL, C1) become `_` (libtorrent replaces only C0):
//!    the macOS folder-icon file `Icon\r` is `Icon_`.
//! 4. Long components are cut as libtorrent cuts them: once [`CUT_COMPONENT_AT_BYTES`]
//!    bytes are written, the rest is dropped except an extension, a `.` among the last
//!    [`MAX_KEPT_EXTENSION_BYTES`] bytes, which is kept. The result is at most 252 bytes,
//!    under every file system's [`MAX_COMPONENT_BYTES`].
//! 5. What is left being empty, `.` or `..` makes the component *nameless*: it is dropped
//!    from the path (`None`). libtorrent drops these too, except a literally empty
//!    component, which it writes as `_`; we drop it, as ratorrent always did (old
//!    generators wrote a leading empty element, and files already downloaded stay where
//!    they are).
//! 6. A component made only of dots and spaces (`...`, `" "`, `". ."`) becomes `_`, and a
//!    Windows drive designator (`C:`) becomes `C_`. libtorrent keeps both on Linux; they are
//!    legal there, but turn into `..`, an empty name or an absolute path when the files are
//!    copied to another system, and ratorrent would rather not create them.
//!
//! The metainfo parser then puts the path together ([`super::FileInfo::path`]): a path
//! whose components are all nameless becomes `_`, a nameless torrent name becomes the info
//! hash in hex, and colliding paths are renamed. [`is_contained`] is the final check on a
//! joined path: relative, only normal components.
//!
//! [`check_component`] tells why a name would not survive as it is; the .torrent builder
//! uses it to refuse such names on the seeding side.

use std::path::{Component, Path};

use super::path_change::{PathChange, PathChanges};

/// Longest path component written to disk, in bytes (`NAME_MAX` of ext4, XFS, btrfs).
/// [`sanitize_component`] never returns more than 252 bytes; renaming a duplicate keeps
/// within this limit too.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Where [`sanitize_component`] cuts a long component: the first character that reaches
/// this many bytes is the last one kept (before the extension), as in libtorrent.
pub const CUT_COMPONENT_AT_BYTES: usize = 240;

/// A cut component keeps its extension when the extension's `.` is among its last this
/// many bytes (so the extension, dot included, is at most this long), as in libtorrent.
pub const MAX_KEPT_EXTENSION_BYTES: usize = 9;

/// What stands for a component or path that has no usable name left.
pub const PLACEHOLDER: &str = "_";

/// Why a name or path component would not be used on disk as it is (see
/// [`check_component`]); the parser sanitises such names instead of refusing them.
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

/// Check one component, as UTF-8 text, without changing it: the first rule that makes
/// [`sanitize_component`] drop or rewrite it for a reason of safety. (A component can
/// pass this check and still be changed, e.g. for control characters or its length.)
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
    if only_dots_and_spaces(text) {
        return Err(UnsafeComponent::OnlyDotsAndSpaces);
    }
    if is_drive_designator(text) {
        return Err(UnsafeComponent::DriveLetter);
    }
    Ok(())
}

fn only_dots_and_spaces(text: &str) -> bool {
    text.chars().all(|c| c == '.' || c == ' ')
}

fn is_drive_designator(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Characters removed from names: path separators, NUL, and the controls that reorder
/// text (a name like `txt.exe` shown as `exe.txt`: [`crate::untrusted::is_bidi_control`]).
fn is_removed(c: char) -> bool {
    matches!(c, '/' | '\\' | '\0') || crate::untrusted::is_bidi_control(c)
}

/// The character at the start of `bytes` and how many bytes it takes, or `None` (an
/// invalid sequence) and how many bytes to skip: the lead byte's claimed length (1 for a
/// byte that cannot start a sequence, at most what is left).
fn decode_unit(bytes: &[u8]) -> (Option<char>, usize) {
    let claimed = match bytes[0] {
        0x00..=0x7f => return (Some(char::from(bytes[0])), 1),
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        0xf8..=0xfb => 5,
        _ => return (None, 1),
    };
    if claimed > bytes.len() || claimed > 4 {
        return (None, claimed.min(bytes.len()));
    }
    // from_utf8 refuses bad continuation bytes, overlong forms, surrogates and values past
    // U+10FFFF, the same sequences libtorrent refuses
    match std::str::from_utf8(&bytes[..claimed]) {
        Ok(s) => (s.chars().next(), claimed),
        Err(_) => (None, claimed),
    }
}

/// The on-disk form of one name or path component given as raw bytes (see the module
/// documentation for the rules), or `None` when nothing usable is left (the component is
/// empty, `.` or `..` once sanitised) and it is to be dropped.
///
/// `Some` is always a single normal path component: non-empty, no `/`, no NUL, not `.` or
/// `..`, at most [`MAX_COMPONENT_BYTES`] bytes.
pub fn sanitize_component(raw: &[u8]) -> Option<String> {
    let mut ignored = PathChanges::NONE;
    sanitize_component_noting(raw, &mut ignored)
}

/// [`sanitize_component`], adding to `changes` what it changed (see [`PathChange`]): what
/// a front end says beside the name it shows. A dropped component (`None`) adds why.
pub fn sanitize_component_noting(raw: &[u8], changes: &mut PathChanges) -> Option<String> {
    note_separators(raw, changes);
    match raw {
        b".." => changes.insert(PathChange::ParentDropped),
        b"" | b"." => changes.insert(PathChange::EmptyDropped),
        _ => {}
    }
    let mut out = String::with_capacity(raw.len().min(MAX_COMPONENT_BYTES));
    let mut extension_found = false;
    let mut i = 0;
    while i < raw.len() {
        let (c, len) = decode_unit(&raw[i..]);
        match c {
            Some(c) if is_removed(c) => {
                if c != '/' && c != '\\' {
                    changes.insert(PathChange::Invisible);
                }
                i += len;
                continue;
            }
            Some(c) if c.is_control() => {
                changes.insert(PathChange::Control);
                out.push('_');
            }
            Some(c) => out.push(c),
            None => {
                changes.insert(PathChange::NotUtf8);
                out.push('_');
            }
        }
        if out.len() >= CUT_COMPONENT_AT_BYTES && !extension_found {
            // keep a short extension: a dot among the last bytes, after this point
            let from = raw
                .len()
                .saturating_sub(MAX_KEPT_EXTENSION_BYTES)
                .max(i + 1);
            match raw
                .get(from..)
                .and_then(|t| t.iter().rposition(|&b| b == b'.'))
            {
                Some(dot) => {
                    extension_found = true;
                    if from + dot > i + len {
                        changes.insert(PathChange::Shortened);
                    }
                    i = from + dot;
                    continue;
                }
                None => {
                    if i + len < raw.len() {
                        changes.insert(PathChange::Shortened);
                    }
                    break;
                }
            }
        }
        i += len;
    }
    if out.is_empty() || out == "." || out == ".." {
        return None;
    }
    if only_dots_and_spaces(&out) {
        changes.insert(PathChange::DotsAndSpaces);
        out = PLACEHOLDER.to_owned();
    } else if is_drive_designator(&out) {
        changes.insert(PathChange::DriveLetter);
        out.replace_range(1..2, "_");
    }
    debug_assert!(out.len() <= MAX_COMPONENT_BYTES && check_component(&out).is_ok());
    Some(out)
}

/// Note what the separators inside `raw` meant: a leading one (or a drive, `C:\`) an
/// absolute path, a `..` between them a hidden parent, others a mere separator.
fn note_separators(raw: &[u8], changes: &mut PathChanges) {
    let is_sep = |b: &u8| *b == b'/' || *b == b'\\';
    if !raw.iter().any(is_sep) {
        return;
    }
    let drive = raw.len() >= 3 && raw[0].is_ascii_alphabetic() && raw[1] == b':' && is_sep(&raw[2]);
    if is_sep(&raw[0]) || drive {
        changes.insert(PathChange::Absolute);
    }
    if raw.split(is_sep).any(|part| part == b"..") {
        changes.insert(PathChange::HiddenParent);
    }
    // a separator after the leading ones (and after a drive) that is not beside a `..`
    let start = if drive { 2 } else { 0 };
    let rest = &raw[start..];
    let inner = rest.iter().skip_while(|b| is_sep(b)).any(is_sep);
    if inner && !changes.contains(PathChange::HiddenParent) {
        changes.insert(PathChange::Separator);
    }
}

/// `name` with a counter before its extension, as libtorrent renames duplicates:
/// `bar.txt` → `bar.1.txt`, `_` → `_.1`, and (unlike libtorrent, which writes
/// `.1.hidden`) `.hidden` → `.hidden.1`. The stem is shortened when needed to keep the
/// result within [`MAX_COMPONENT_BYTES`].
pub fn numbered(name: &str, n: u64) -> String {
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => name.split_at(i),
        _ => (name, ""),
    };
    let suffix = format!(".{n}{ext}");
    let mut keep = MAX_COMPONENT_BYTES
        .saturating_sub(suffix.len())
        .min(stem.len());
    while !stem.is_char_boundary(keep) {
        keep -= 1;
    }
    let mut out = String::with_capacity(keep + suffix.len());
    out.push_str(&stem[..keep]);
    out.push_str(&suffix);
    out
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

    fn san(s: &str) -> Option<String> {
        sanitize_component(s.as_bytes())
    }

    #[test]
    fn check_names_each_unsafe_shape() {
        for (text, why) in [
            ("", UnsafeComponent::Empty),
            (".", UnsafeComponent::Dot),
            ("..", UnsafeComponent::DotDot),
            ("../x", UnsafeComponent::Separator),
            ("/etc", UnsafeComponent::Separator),
            ("..\\..\\x", UnsafeComponent::Separator),
            ("a\0b", UnsafeComponent::Nul),
            ("...", UnsafeComponent::OnlyDotsAndSpaces),
            (" ", UnsafeComponent::OnlyDotsAndSpaces),
            ("C:", UnsafeComponent::DriveLetter),
        ] {
            assert_eq!(check_component(text), Err(why), "{text:?}");
        }
        assert_eq!(check_component("X: The Movie"), Ok(()));
    }

    #[test]
    fn nameless_components_are_dropped() {
        for text in [
            "", ".", "..", "/", "\\", "//", "/..", "./.", "\\..", "\0", "\u{202e}",
        ] {
            assert_eq!(san(text), None, "{text:?}");
        }
    }

    #[test]
    fn separators_are_removed_not_followed() {
        assert_eq!(san("/etc/passwd").unwrap(), "etcpasswd");
        assert_eq!(san("foo/../../../bar").unwrap(), "foo......bar");
        assert_eq!(san("..\\..\\x").unwrap(), "....x");
        assert_eq!(san("../sample.bin").unwrap(), "..sample.bin");
        assert_eq!(san("/foobar").unwrap(), "foobar");
        assert_eq!(san("a\0b").unwrap(), "ab");
        assert_eq!(san("txt\u{202e}exe.").unwrap(), "txtexe.");
    }

    #[test]
    fn controls_dots_and_drives() {
        assert_eq!(san("a.txt").unwrap(), "a.txt");
        assert_eq!(san(".hidden").unwrap(), ".hidden");
        assert_eq!(san("Icon\r").unwrap(), "Icon_");
        assert_eq!(san("a\u{1b}[2Jb").unwrap(), "a_[2Jb");
        assert_eq!(san("\u{85}x").unwrap(), "_x");
        assert_eq!(san("foobar ").unwrap(), "foobar ");
        for text in ["...", " ", ". .", "/.../"] {
            assert_eq!(san(text).unwrap(), "_", "{text:?}");
        }
        assert_eq!(san("C:").unwrap(), "C_");
        assert_eq!(san("/C:").unwrap(), "C_");
        assert_eq!(san("C:x").unwrap(), "C:x");
    }

    #[test]
    fn invalid_utf8_is_replaced_per_sequence() {
        // GBK "样例" (d1 f9 c0 fd): two claimed two-byte sequences
        assert_eq!(
            sanitize_component(b"\xd1\xf9\xc0\xfd.txt").unwrap(),
            "__.txt"
        );
        // GBK "\x95\x5c": a stray continuation byte, then a '\' that is removed
        assert_eq!(sanitize_component(b"\x95\x5c.txt").unwrap(), "_.txt");
        assert_eq!(sanitize_component(b"\xff\xfe").unwrap(), "__");
        // a truncated sequence at the end counts once
        assert_eq!(sanitize_component(b"\xe6\x96").unwrap(), "_");
        // overlong '/' is not a separator, and not a slash either
        assert_eq!(sanitize_component(b"a\xc0\xafb").unwrap(), "a_b");
        // a genuine U+FFFD stays
        assert_eq!(
            sanitize_component("\u{fffd}".as_bytes()).unwrap(),
            "\u{fffd}"
        );
    }

    #[test]
    fn long_components_are_cut_like_libtorrent() {
        let long = format!("{}.mkv", "x".repeat(300));
        assert_eq!(san(&long).unwrap(), format!("{}.mkv", "x".repeat(240)));
        let wide = format!("{}.mkv", "é".repeat(150));
        assert_eq!(san(&wide).unwrap(), format!("{}.mkv", "é".repeat(120)));
        // an extension longer than 8 bytes after its dot is cut with the rest
        let ext = format!("{}.verylongext", "x".repeat(300));
        assert_eq!(san(&ext).unwrap(), "x".repeat(240));
        // libtorrent's quirk, kept for identical names: cut inside the extension
        let edge = format!("{}.mkv", "x".repeat(238));
        assert_eq!(san(&edge).unwrap(), format!("{}.m", "x".repeat(238)));
        // 240 bytes exactly are kept as they are
        assert_eq!(san(&"y".repeat(240)).unwrap(), "y".repeat(240));
        // a multi-byte character crossing 240 is kept whole
        let cross = format!("{}€€€€", "z".repeat(239));
        assert_eq!(san(&cross).unwrap(), format!("{}€", "z".repeat(239)));
        // a cut that leaves only dots is a placeholder
        assert_eq!(san(&".".repeat(400)).unwrap(), "_");
        for s in [long, wide, ext, cross] {
            assert!(san(&s).unwrap().len() <= MAX_COMPONENT_BYTES);
        }
    }

    #[test]
    fn numbering_keeps_the_extension_and_the_limit() {
        assert_eq!(numbered("bar.txt", 1), "bar.1.txt");
        assert_eq!(numbered("_", 1), "_.1");
        assert_eq!(numbered("foo", 12), "foo.12");
        assert_eq!(numbered(".hidden", 1), ".hidden.1");
        assert_eq!(numbered("a.tar.gz", 2), "a.tar.2.gz");
        let long = format!("{}.mkv", "é".repeat(125));
        let n = numbered(&long, 100);
        assert!(n.len() <= MAX_COMPONENT_BYTES, "{}", n.len());
        assert!(n.ends_with(".100.mkv"));
    }

    #[test]
    fn arbitrary_bytes_always_give_a_normal_component() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let alphabet: &[u8] = b"./\\\0 :a\xc0\xaf\xe2\x80\xae\xff\r";
        for _ in 0..20_000 {
            let len = rng.random_range(0..300);
            let raw: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            if let Some(s) = sanitize_component(&raw) {
                assert!(check_component(&s).is_ok(), "{raw:?} -> {s:?}");
                assert!(s.len() <= MAX_COMPONENT_BYTES);
                let mut comps = Path::new(&s).components();
                assert!(matches!(comps.next(), Some(Component::Normal(_))));
                assert!(comps.next().is_none());
            }
        }
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
