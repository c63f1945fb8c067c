//! Human-readable figures for the UI: percentages, ratios, dates, and names fitted to a
//! column width. Sizes, rates and durations are [`crate::units`]'s.
//!
//! All functions are pure and total: any `u64` input gives a short string, never a panic.

use unicode_width::UnicodeWidthChar;

use crate::{units, untrusted};

/// Formats `done` of `total` bytes as a percentage rounded *down* to 0.1 %, so a torrent
/// shows `"100%"` only when it is complete: `"0.0%"`, `"42.0%"`, `"99.9%"`, `"100%"`.
/// An empty torrent (`total == 0`) and `done > total` both read `"100%"`. At most 5 characters.
pub fn percent(done: u64, total: u64) -> String {
    if done >= total {
        return "100%".to_owned();
    }
    // u128: done * 1000 cannot overflow.
    let permille = u128::from(done) * 1000 / u128::from(total);
    format!("{}.{}%", permille / 10, permille % 10)
}

/// Display width of `text` in terminal cells (East Asian wide characters count 2).
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Makes untrusted text (a torrent name, a tracker message) safe and fitting for one cell of
/// `max_width` terminal columns: made safe by [`crate::untrusted::line`] (escapes and other
/// controls become `'�'`, line breaks a space), and cut with a trailing `'…'` when wider than
/// `max_width`. The result is never wider than `max_width`.
pub fn fit(text: &str, max_width: usize) -> String {
    let clean = untrusted::line(text);
    if width(&clean) <= max_width {
        return clean.into_owned();
    }
    if max_width == 0 {
        return String::new();
    }
    let budget = max_width - 1; // room for the ellipsis
    let mut out = String::new();
    let mut used = 0;
    for c in clean.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Makes untrusted text safe to draw ([`crate::untrusted::line_with`]): unsafe characters
/// become `'\u{fffd}'` (or `'?'`), line breaks a space, and with `ascii` every non-ASCII
/// character becomes `'?'`.
pub fn clean(text: &str, ascii: bool) -> String {
    if ascii {
        untrusted::line_with(text, '?')
            .chars()
            .map(|c| if c.is_ascii() { c } else { '?' })
            .collect()
    } else {
        untrusted::line(text).into_owned()
    }
}

/// [`fit`] for the symbol set in use: cleans `text` (see [`clean`]) and cuts it to
/// `max_width` cells with `ellipsis`.
pub fn fit_with(text: &str, max_width: usize, ascii: bool, ellipsis: char) -> String {
    let clean = clean(text, ascii);
    if width(&clean) <= max_width {
        return clean;
    }
    if max_width == 0 {
        return String::new();
    }
    let budget = max_width - 1;
    let mut out = String::new();
    let mut used = 0;
    for c in clean.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    // a wide character that did not fit leaves a gap: fill it so columns stay aligned
    while used < budget {
        out.push(' ');
        used += 1;
    }
    out.push(ellipsis);
    out
}

/// `text` cleaned (see [`clean`]) and wrapped at spaces into at most `max_lines` lines of
/// at most `max_width` cells each; a word wider than a line (a long path) is broken across
/// lines, filling the line it starts on. What does not fit in the last line ends with
/// `ellipsis`. For messages that must be read whole (a dialog's error, an error at 80
/// columns).
pub fn wrap_with(
    text: &str,
    max_width: usize,
    max_lines: usize,
    ascii: bool,
    ellipsis: char,
) -> Vec<String> {
    let max_width = max_width.max(1);
    let max_lines = max_lines.max(1);
    let clean = clean(text, ascii);
    let words: Vec<&str> = clean.split(' ').filter(|w| !w.is_empty()).collect();
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, word) in words.iter().enumerate() {
        let sep = usize::from(!cur.is_empty());
        if width(&cur) + sep + width(word) <= max_width {
            if sep == 1 {
                cur.push(' ');
            }
            cur.push_str(word);
            continue;
        }
        // a word that fits on a line of its own starts one; a wider one fills this line
        let mut rest: &str = word;
        if width(word) <= max_width {
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
        } else if !cur.is_empty() {
            if max_width.saturating_sub(width(&cur) + 1) >= 4 {
                cur.push(' ');
            } else {
                lines.push(std::mem::take(&mut cur));
            }
        }
        loop {
            if lines.len() + 1 >= max_lines {
                // the last line: whatever is left, cut with the ellipsis
                let mut last = std::mem::take(&mut cur);
                last.push_str(rest);
                for w in &words[i + 1..] {
                    last.push(' ');
                    last.push_str(w);
                }
                lines.push(fit_with(&last, max_width, ascii, ellipsis));
                return lines;
            }
            let room = max_width - width(&cur);
            let (head, tail) = split_at_width(rest, room);
            cur.push_str(head);
            if tail.is_empty() {
                break;
            }
            lines.push(std::mem::take(&mut cur));
            rest = tail;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `text` split after at most `cells` terminal cells (at least one character when `cells`
/// is 0 and text is not empty, so a loop over it ends).
fn split_at_width(text: &str, cells: usize) -> (&str, &str) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > cells {
            let i = if i == 0 { c.len_utf8() } else { i };
            return text.split_at(i);
        }
        used += w;
    }
    (text, "")
}

/// `text` padded with spaces on the right to `cells` terminal cells (never cut).
pub fn pad(text: &str, cells: usize) -> String {
    let w = width(text);
    let mut out = text.to_owned();
    out.extend(std::iter::repeat_n(' ', cells.saturating_sub(w)));
    out
}

/// A share ratio: `"-"` when unknown, `"0.52"`, `"12.3"`, `"123"`, `"9999+"`.
pub fn ratio(ratio: Option<f64>) -> String {
    match ratio {
        None => "-".to_owned(),
        Some(r) if !r.is_finite() || r >= 9999.5 => "9999+".to_owned(),
        Some(r) if r < 9.995 => format!("{r:.2}"),
        Some(r) if r < 99.95 => format!("{r:.1}"),
        Some(r) => format!("{r:.0}"),
    }
}

/// Broken-down local time (year, month, day, hour, minute, second) of Unix second `secs`,
/// from the C library (`localtime_r`, so `TZ` applies); UTC when that fails.
fn local_time(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    #[cfg(unix)]
    {
        #[allow(irrefutable_let_patterns, clippy::useless_conversion)]
        if let Ok(t) = libc::time_t::try_from(secs) {
            // SAFETY: localtime_r only writes into the `tm` we own and reads `t`.
            let mut tm: libc::tm = unsafe { std::mem::zeroed() };
            let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
            if ok {
                return (
                    i64::from(tm.tm_year) + 1900,
                    (tm.tm_mon + 1).clamp(1, 12) as u32,
                    tm.tm_mday.clamp(1, 31) as u32,
                    tm.tm_hour.clamp(0, 23) as u32,
                    tm.tm_min.clamp(0, 59) as u32,
                    tm.tm_sec.clamp(0, 60) as u32,
                );
            }
        }
    }
    utc(secs)
}

/// Civil UTC date and time of Unix second `secs` (proleptic Gregorian calendar).
fn utc(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// A Unix time as a local date, `"2026-12-01"`; `"-"` for 0 (unknown).
pub fn date(unix_secs: i64) -> String {
    if unix_secs == 0 {
        return "-".to_owned();
    }
    let (y, m, d, ..) = local_time(unix_secs);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A Unix time as local date and time, `"2026-12-01 14:03"`; `"-"` for 0 (unknown).
pub fn date_time(unix_secs: i64) -> String {
    if unix_secs == 0 {
        return "-".to_owned();
    }
    let (y, mo, d, h, mi, _) = local_time(unix_secs);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// A point in time as local `"HH:MM:SS"` (log lines).
pub fn clock(at: std::time::SystemTime) -> String {
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let (_, _, _, h, m, s) = local_time(secs);
    format!("{h:02}:{m:02}:{s:02}")
}

/// How far `at` is from `now`: `"in 5m 02s"`, `"3m 10s ago"`, `"now"`; `"-"` for `None`.
pub fn relative(at: Option<std::time::SystemTime>, now: std::time::SystemTime) -> String {
    let Some(at) = at else {
        return "-".to_owned();
    };
    match at.duration_since(now) {
        Ok(d) if d.as_secs() > 0 => format!("in {}", units::duration(d.as_secs())),
        Ok(_) => "now".to_owned(),
        Err(e) => match e.duration().as_secs() {
            0 => "now".to_owned(),
            s => format!("{} ago", units::duration(s)),
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrap_keeps_every_word_until_the_last_line() {
        use super::{width, wrap_with};
        let msg = "rate limit \"12 parsecs\" is not understood: use a number of bytes/s or 500K, 1M, 2.5 MiB/s";
        let lines = wrap_with(msg, 30, 4, false, '…');
        assert!(lines.iter().all(|l| width(l) <= 30), "{lines:?}");
        assert_eq!(lines.join(" "), msg, "nothing lost when it fits in 4 lines");
        let cut = wrap_with(msg, 30, 2, false, '…');
        assert_eq!(cut.len(), 2);
        assert!(cut[1].ends_with('…') && width(&cut[1]) <= 30, "{cut:?}");
        assert_eq!(wrap_with("", 10, 3, false, '…'), vec![String::new()]);
        let long = wrap_with("aaaaaaaaaaaaaaaaaaaa b", 8, 3, false, '…');
        assert!(long.iter().all(|l| width(l) <= 8), "{long:?}");
        // a word wider than a line is broken across lines, nothing lost
        assert_eq!(long, ["aaaaaaaa", "aaaaaaaa", "aaaa b"]);
        let path = wrap_with("writing /srv/a/very/long/path.mkv now", 12, 5, false, '…');
        assert_eq!(path, ["writing /srv", "/a/very/long", "/path.mkv", "now"]);
        assert!(path.iter().all(|l| width(l) <= 12), "{path:?}");
        // wide characters never split a cell budget
        let wide = wrap_with("日本語のファイル名", 5, 6, false, '…');
        assert!(wide.iter().all(|l| width(l) <= 5), "{wide:?}");
        assert_eq!(wide.concat(), "日本語のファイル名");
    }

    use super::*;

    #[test]
    fn percent_rounds_down_and_is_exact_at_completion() {
        assert_eq!(percent(0, 100), "0.0%");
        assert_eq!(percent(42, 100), "42.0%");
        assert_eq!(percent(999, 1000), "99.9%");
        assert_eq!(percent(u64::MAX - 1, u64::MAX), "99.9%");
        assert_eq!(percent(100, 100), "100%");
        assert_eq!(percent(0, 0), "100%");
        assert_eq!(percent(200, 100), "100%");
    }

    #[test]
    fn fit_truncates_with_ellipsis_by_display_width() {
        assert_eq!(fit("debian.iso", 20), "debian.iso");
        assert_eq!(fit("debian-12.5.0-amd64-netinst.iso", 10), "debian-12…");
        assert_eq!(width(&fit("debian-12.5.0-amd64-netinst.iso", 10)), 10);
        assert_eq!(fit("abc", 0), "");
        assert_eq!(fit("abc", 1), "…");
        // Wide characters count two cells; never exceed the budget.
        let cut = fit("日本語のファイル名", 7);
        assert_eq!(cut, "日本語…");
        assert!(width(&cut) <= 7);
    }

    #[test]
    fn fit_with_keeps_columns_aligned_for_wide_characters() {
        // A wide character that would straddle the cut leaves a space, never a short cell.
        let cut = fit_with("日本語のファイル名", 8, false, '…');
        assert_eq!(width(&cut), 8);
        assert_eq!(fit_with("a\u{1b}[31mb", 20, true, '~'), "a?[31mb");
        assert_eq!(fit_with("café 🎬 film", 20, true, '~'), "caf? ? film");
        assert_eq!(fit_with("abcdef", 4, true, '~'), "abc~");
        for w in 0..12 {
            assert!(width(&fit_with("🎬🎬🎬🎬🎬x", w, false, '…')) <= w);
        }
    }

    #[test]
    fn ratios_dates_and_relative_times() {
        assert_eq!(ratio(None), "-");
        assert_eq!(ratio(Some(0.5)), "0.50");
        assert_eq!(ratio(Some(12.34)), "12.3");
        assert_eq!(ratio(Some(1234.0)), "1234");
        assert_eq!(ratio(Some(f64::INFINITY)), "9999+");
        assert_eq!(utc(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc(1_764_547_200), (2025, 12, 1, 0, 0, 0));
        assert_eq!(utc(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(date(0), "-");
        assert!(date(i64::MAX).len() >= 10);
        let now = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        let later = now + std::time::Duration::from_secs(65);
        assert_eq!(relative(Some(later), now), "in 1m 05s");
        assert_eq!(relative(Some(now), later), "1m 05s ago");
        assert_eq!(relative(None, now), "-");
    }

    #[test]
    fn fit_neutralises_control_characters() {
        assert_eq!(fit("evil\x1b[2Jname\n", 40), "evil\u{fffd}[2Jname ");
        assert_eq!(fit("txt\u{202e}exe.", 40), "txt\u{fffd}exe.");
        assert!(!fit("a\rb\tc", 2).chars().any(char::is_control));
    }
}
