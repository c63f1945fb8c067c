//! Untrusted text shown on a terminal: the one policy for every name, path, comment,
//! tracker message, client name and error text that came from a .torrent, a magnet link, a
//! tracker or a peer, wherever it is shown (the TUI, headless output, `info`, the event log).
//!
//! A terminal obeys what it prints. Such text must not be able to:
//! - run a terminal command: C0 controls (ESC starts every escape sequence; BEL, BS, NUL
//!   ...), DEL, and C1 controls (U+0080..=U+009F: CSI, OSC and DCS start sequences on their
//!   own on some terminals) — [`Class::Unsafe`];
//! - reorder what is shown: the bidirectional formatting characters (embeddings, overrides,
//!   isolates and marks, U+061C, U+200E, U+200F, U+202A..=U+202E, U+2066..=U+2069), with
//!   which `txt\u{202e}exe.` reads `txt.exe` — [`Class::Unsafe`];
//! - break the layout: line and paragraph breaks and tabs (`\n`, `\r`, VT, FF, NEL,
//!   U+2028, U+2029, `\t`) — [`Class::Break`], one space, so one line stays one line.
//!
//! Two renderings of the same policy: [`line()`] replaces (U+FFFD, or another character such
//! as `?` for an ASCII-only screen) where text is read at a glance (the TUI, status lines,
//! the log); [`escape`] writes Rust-style escapes (`\r`, `\u{1b}`, `\u{202e}`) where the
//! exact content matters (`info`'s listing, debug output). Everything else is kept,
//! including wide characters and combining marks. Bytes that may not be text (a tracker's
//! answer quoted in an error) have an ASCII-only rendering, [`escape_bytes`].

use std::borrow::Cow;

/// What the policy does with one character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Shown as it is.
    Plain,
    /// A line break or tab: one space (or an escape).
    Break,
    /// A control character or a bidirectional formatting character: replaced (or escaped).
    Unsafe,
}

/// The replacement for an unsafe character in [`line()`]: U+FFFD REPLACEMENT CHARACTER.
pub const REPLACEMENT: char = '\u{fffd}';

/// The class of `c` under the policy (see the module documentation).
pub fn class(c: char) -> Class {
    match c {
        '\n' | '\r' | '\t' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
            Class::Break
        }
        c if c.is_control() || is_bidi_control(c) => Class::Unsafe,
        _ => Class::Plain,
    }
}

/// Whether `c` is a bidirectional formatting character: the Arabic letter mark (U+061C),
/// the left-to-right and right-to-left marks (U+200E, U+200F), embeddings, overrides and
/// their pop (U+202A..=U+202E), and the isolates (U+2066..=U+2069). They change the order in
/// which a terminal shows the characters around them.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// Whether every character of `text` is [`Class::Plain`] (nothing to change).
pub fn is_plain(text: &str) -> bool {
    text.chars().all(|c| class(c) == Class::Plain)
}

/// `text` safe to show on one line: breaks become a space, unsafe characters
/// [`REPLACEMENT`]. Borrows when there is nothing to change.
///
/// `"evil\x1b]0;pwned\x07\nname"` → `"evil\u{fffd}]0;pwned\u{fffd} name"`.
pub fn line(text: &str) -> Cow<'_, str> {
    line_with(text, REPLACEMENT)
}

/// [`line()`] with `replacement` for unsafe characters (e.g. `'?'` on an ASCII-only screen).
pub fn line_with(text: &str, replacement: char) -> Cow<'_, str> {
    if is_plain(text) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match class(c) {
                Class::Plain => c,
                Class::Break => ' ',
                Class::Unsafe => replacement,
            })
            .collect(),
    )
}

/// Bytes that should be UTF-8 (a tracker's message, a peer's client name), as [`line()`]:
/// invalid sequences become U+FFFD first.
pub fn line_from_bytes(bytes: &[u8]) -> String {
    line(&String::from_utf8_lossy(bytes)).into_owned()
}

/// `text` safe to show with its exact content visible: breaks and unsafe characters as
/// Rust escapes (`\n`, `\r`, `\t`, `\u{1b}`, `\u{202e}`), and the backslash as `\\` so an
/// escape can be told from text that looks like one. Borrows when there is nothing to
/// change.
///
/// `"Icon\r"` → `"Icon\\r"`, `"a\u{1b}[2J"` → `"a\\u{1b}[2J"`.
pub fn escape(text: &str) -> Cow<'_, str> {
    if is_plain(text) && !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match (c, class(c)) {
            ('\\', _) => out.push_str("\\\\"),
            ('\n', _) => out.push_str("\\n"),
            ('\r', _) => out.push_str("\\r"),
            ('\t', _) => out.push_str("\\t"),
            (c, Class::Plain) => out.push(c),
            (c, Class::Break | Class::Unsafe) => out.extend(c.escape_unicode()),
        }
    }
    Cow::Owned(out)
}

/// Bytes that may not be text at all (a tracker's HTML page or binary answer), for an error
/// message that quotes them: the ASCII-only rendering of the policy. Printable ASCII
/// ([`Class::Plain`]) is kept except `"` and `\`, which are escaped (the text is shown
/// between quotes); `\n`, `\r`, `\t` are written as such; every other byte (controls, DEL,
/// any byte of a multi-byte or invalid sequence) as `\xNN`. At most `max_chars` characters
/// (`max_chars` >= 3): a cut rendering ends in `...` and never splits an escape.
///
/// `b"<html>\r\n"` → `"<html>\\r\\n"`, `b"\x1b[2J\xff"` → `"\\x1b[2J\\xff"`.
pub fn escape_bytes(bytes: &[u8], max_chars: usize) -> String {
    let mut out = String::new();
    // Length of `out` up to the last byte that still leaves room for "...".
    let mut cut = 0usize;
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b if b.is_ascii() && class(char::from(b)) == Class::Plain => out.push(char::from(b)),
            b => {
                out.push_str("\\x");
                data_encoding::HEXLOWER.encode_append(&[b], &mut out);
            }
        }
        if out.len() > max_chars {
            out.truncate(cut);
            out.push_str("...");
            return out;
        }
        if out.len() + 3 <= max_chars {
            cut = out.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_bytes_keeps_printable_ascii_and_escapes_every_other_byte() {
        assert_eq!(escape_bytes(b"<html>\r\n", 80), "<html>\\r\\n");
        assert_eq!(
            escape_bytes(b"a\"b\\c\x00\xff", 80),
            "a\\\"b\\\\c\\x00\\xff"
        );
        // an escape sequence, C1 CSI as UTF-8, DEL, a bidi override as UTF-8, a tab
        assert_eq!(
            escape_bytes("\x1b[2J\u{9b}\x7f\u{202e}\t".as_bytes(), 80),
            "\\x1b[2J\\xc2\\x9b\\x7f\\xe2\\x80\\xae\\t"
        );
        assert_eq!(escape_bytes(b"", 80), "");
    }

    #[test]
    fn escape_bytes_caps_without_splitting_an_escape() {
        let e = escape_bytes(&[b'x'; 1000], 80);
        assert_eq!(e, format!("{}...", "x".repeat(77)));
        // exactly max_chars printable bytes fit without "..."
        assert_eq!(escape_bytes(&[b'y'; 80], 80), "y".repeat(80));
        // 4-character escapes: 19 of them (76) then "..."; never a cut "\x0"
        let e = escape_bytes(&[0x01; 500], 80);
        assert_eq!(e, format!("{}...", "\\x01".repeat(19)));
        assert!(e.is_ascii());
    }

    /// Hostile text of every class, what [`line()`] and [`escape`] make of it.
    const CASES: &[(&str, &str, &str)] = &[
        // an escape sequence (CSI clear screen), an OSC title with BEL
        ("a\x1b[2Jb", "a\u{fffd}[2Jb", "a\\u{1b}[2Jb"),
        (
            "\x1b]0;pwned\x07x",
            "\u{fffd}]0;pwned\u{fffd}x",
            "\\u{1b}]0;pwned\\u{7}x",
        ),
        // C1 controls: CSI, OSC, NEL (a line break)
        ("a\u{9b}31mb", "a\u{fffd}31mb", "a\\u{9b}31mb"),
        ("\u{9d}0;t", "\u{fffd}0;t", "\\u{9d}0;t"),
        ("a\u{85}b", "a b", "a\\u{85}b"),
        // bidi overrides, isolates, marks
        ("txt\u{202e}exe.", "txt\u{fffd}exe.", "txt\\u{202e}exe."),
        (
            "x\u{2066}y\u{2069}",
            "x\u{fffd}y\u{fffd}",
            "x\\u{2066}y\\u{2069}",
        ),
        ("\u{200f}\u{061c}", "\u{fffd}\u{fffd}", "\\u{200f}\\u{61c}"),
        // line breaks and tabs
        ("one\ntwo\r\n", "one two  ", "one\\ntwo\\r\\n"),
        ("a\tb\u{2028}c", "a b c", "a\\tb\\u{2028}c"),
        // NUL, DEL, backspace
        (
            "a\0b\x7fc\x08",
            "a\u{fffd}b\u{fffd}c\u{fffd}",
            "a\\u{0}b\\u{7f}c\\u{8}",
        ),
        // kept: wide characters, combining marks, emoji, a backslash (escaped by escape)
        ("日本語 é 🎬", "日本語 é 🎬", "日本語 é 🎬"),
        ("C:\\x", "C:\\x", "C:\\\\x"),
    ];

    #[test]
    fn every_class_of_hostile_text() {
        for &(raw, shown, escaped) in CASES {
            assert_eq!(line(raw), shown, "{raw:?}");
            assert_eq!(escape(raw), escaped, "{raw:?}");
            for out in [line(raw), escape(raw)] {
                assert!(
                    out.chars().all(|c| !c.is_control() && !is_bidi_control(c)),
                    "{out:?}"
                );
            }
        }
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(line("debian-12.iso"), Cow::Borrowed(_)));
        assert!(matches!(escape("debian 12 é"), Cow::Borrowed(_)));
        assert!(matches!(line("a\\b"), Cow::Borrowed(_)));
        assert!(matches!(escape("a\\b"), Cow::Owned(_)));
    }

    #[test]
    fn replacement_can_be_ascii_and_bytes_are_read_lossily() {
        assert_eq!(line_with("a\x1b[1mb\u{202e}\n", '?'), "a?[1mb? ");
        assert_eq!(
            line_from_bytes(b"ok\xff\x1b[2J\r\n"),
            "ok\u{fffd}\u{fffd}[2J  "
        );
        assert_eq!(line_from_bytes(b""), "");
    }

    #[test]
    fn classes() {
        for c in ['a', ' ', 'é', '日', '\u{301}', '\u{fffd}', '\u{200b}'] {
            assert_eq!(class(c), Class::Plain, "{c:?}");
        }
        for c in [
            '\n', '\r', '\t', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
        ] {
            assert_eq!(class(c), Class::Break, "{c:?}");
        }
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            assert_ne!(class(c), Class::Plain, "{c:?}");
        }
        for c in [
            '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200e}', '\u{061c}',
        ] {
            assert_eq!(class(c), Class::Unsafe, "{c:?}");
        }
        assert!(is_plain("plain text"));
        assert!(!is_plain("tab\there"));
    }
}
