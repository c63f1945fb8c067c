//! Sizes, rates and durations for people: the one place that formats them (the TUI, the
//! headless lines, `info` and the event log all print the same strings) and parses them back
//! (rate limits in the config file and the TUI's limits dialog).
//!
//! Sizes are in binary units (1 KiB = 1024 bytes) with three significant digits; a rate
//! is a size per second (`/s`); a duration shows its two most significant units. Every
//! formatter is pure and total: any input gives a short string, never a panic. Every parser
//! reads back what its formatter writes (to the precision shown), plus the short forms
//! people type (`500K`, `2.5M`, `1h30m`).

/// Binary unit names, each 1024 times the previous one.
const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Longest duration shown as a number, in seconds (100 days); anything longer is `"∞"`.
pub const DURATION_MAX_SECS: u64 = 100 * 86_400;

/// A byte count in binary units with three significant digits, at most 8 characters.
///
/// `0` → `"0 B"`, `512` → `"512 B"`, `1536` → `"1.50 KiB"`, `12_900_000` → `"12.3 MiB"`,
/// `1_610_612_736` → `"1.50 GiB"`, `u64::MAX` → `"16.0 EiB"`. A value that would round to
/// `"1024 KiB"` moves up a unit (`"1.00 MiB"`).
pub fn size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    // Three significant digits; rounding 1023.5.. up would print "1024", so move up a unit.
    if value >= 1023.5 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let decimals = if value < 9.995 {
        2
    } else if value < 99.95 {
        1
    } else {
        0
    };
    let name = UNITS.get(unit).copied().unwrap_or("EiB");
    format!("{value:.decimals$} {name}")
}

/// [`size`] with the exact count beside it, for listings where both matter (`info`):
/// `"500 bytes"` below 1 KiB, else `"1.50 KiB (1536 bytes)"`.
pub fn size_and_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{} ({bytes} bytes)", size(bytes))
    }
}

/// A rate in bytes/s like [`size`] with a `/s` suffix: `"12.3 MiB/s"`, `"0 B/s"`.
pub fn rate(bytes_per_sec: u64) -> String {
    format!("{}/s", size(bytes_per_sec))
}

/// Like [`rate`], but `"-"` for zero, so idle rows in a table stay quiet.
pub fn rate_or_dash(bytes_per_sec: u64) -> String {
    if bytes_per_sec == 0 {
        "-".to_owned()
    } else {
        rate(bytes_per_sec)
    }
}

/// A duration in seconds as its two most significant units, at most 7 characters:
/// `"45s"`, `"12m 05s"`, `"1h 02m"`, `"3d 4h"`; [`DURATION_MAX_SECS`] or more is `"∞"`.
pub fn duration(secs: u64) -> String {
    if secs >= DURATION_MAX_SECS {
        "∞".to_owned()
    } else if secs < 60 {
        format!("{secs}s")
    } else if secs < 3_600 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else if secs < 86_400 {
        format!("{}h {:02}m", secs / 3_600, (secs % 3_600) / 60)
    } else {
        format!("{}d {}h", secs / 86_400, (secs % 86_400) / 3_600)
    }
}

/// Reads a size in bytes: a number with an optional binary unit `K`, `M`, `G`, `T`, `P` or
/// `E` (`KiB`, `kb`, `k` all mean 1024; case and spaces do not matter), or a bare number of
/// bytes. Fractions are rounded to the nearest byte: `"1.5K"` → 1536, `"2.5 MiB"` →
/// 2,621,440, `"4096"` → 4096, `"12.3 MiB"` (what [`size`] writes) → 12,897,484.
///
/// # Errors
/// A sentence naming `text` when it is not such a number, is negative, or is 2^64 bytes or
/// more.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase().replace(' ', "");
    parse_scaled(&t)
        .ok_or_else(|| {
            format!(
                "cannot read {text:?} as a size: use a number of bytes with K, M, G or T \
             (e.g. 500K, 2.5M, 1 GiB)"
            )
        })?
        .ok_or_else(|| format!("{text:?} is too large for a size"))
}

/// Reads a rate limit in bytes/s: a size as [`parse_size`] reads it, with an optional
/// `/s` or `ps` suffix (`"500K"`, `"2.5 MiB/s"`, `"1mbps"` is 1 MiB/s, not megabits), or
/// `0`, `unlimited`, `none`, `off`, `-` or nothing for no limit (0).
///
/// # Errors
/// A sentence naming `text` and the accepted forms when it is neither.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase().replace(' ', "");
    if ["0", "unlimited", "none", "off", "-", ""].contains(&t.as_str()) {
        return Ok(0);
    }
    let t = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .unwrap_or(&t);
    parse_scaled(t)
        .ok_or_else(|| {
            format!(
                "cannot read {text:?} as a rate: use a number of bytes/s with K, M or G \
                 (e.g. 500K, 2.5M, 1 MiB/s), or 0 for unlimited"
            )
        })?
        .ok_or_else(|| format!("{text:?} is too large for a rate"))
}

/// `number unit` (lowercase, no spaces) in bytes: `None` when unreadable, `Some(None)` when
/// 2^64 or more.
fn parse_scaled(t: &str) -> Option<Option<u64>> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok()?;
    let unit = unit.strip_suffix('b').unwrap_or(unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let scale: f64 = match unit {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024f64.powi(2),
        "g" => 1024f64.powi(3),
        "t" => 1024f64.powi(4),
        "p" => 1024f64.powi(5),
        "e" => 1024f64.powi(6),
        _ => return None,
    };
    let bytes = (value * scale).round();
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Some(None);
    }
    Some(Some(bytes as u64))
}

/// Reads a duration in seconds: numbers each followed by `d`, `h`, `m` or `s` (spaces
/// between them optional, any order, summed), or a bare number of seconds. Reads back what
/// [`duration`] writes: `"12m 05s"` → 725, `"3d 4h"` → 273,600, `"90"` → 90, `"1h30m"` →
/// 5,400.
///
/// # Errors
/// A sentence naming `text` when it is empty, has a unit other than d/h/m/s, or overflows
/// `u64` seconds. `"∞"` is not read (it is not a duration one can set).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cannot read {text:?} as a duration: use seconds, or numbers with d, h, m and s \
             (e.g. 90, 45s, 12m 05s, 1h30m)"
        )
    };
    let t = text.trim().to_ascii_lowercase().replace(' ', "");
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    let mut total: u64 = 0;
    let mut rest = t.as_str();
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (number, tail) = rest.split_at(digits);
        let n: u64 = number.parse().map_err(|_| bad())?;
        let mut chars = tail.chars();
        let unit = match chars.next() {
            Some('d') => 86_400,
            Some('h') => 3_600,
            Some('m') => 60,
            Some('s') => 1,
            _ => return Err(bad()),
        };
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        rest = chars.as_str();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units_and_three_digits() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.00 KiB");
        assert_eq!(size(1536), "1.50 KiB");
        assert_eq!(size(10 * 1024), "10.0 KiB");
        assert_eq!(size(123 * 1024 * 1024), "123 MiB");
        assert_eq!(size(3 * 1024 * 1024 * 1024 / 2), "1.50 GiB");
        assert_eq!(size(5 * (1 << 40)), "5.00 TiB");
        assert_eq!(size(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn sizes_never_print_four_digit_binary_values() {
        // 1023.9 KiB would print "1024 KiB"; it must move up a unit instead.
        assert_eq!(size(1024 * 1024 - 100), "1.00 MiB");
        assert_eq!(size(1023 * 1024), "1023 KiB");
        // 9.999 KiB rounds to 10.0, not "10.00".
        assert_eq!(size(10 * 1024 - 1), "10.0 KiB");
        for shift in 0..64 {
            for delta in [0u64, 1, 7] {
                let s = size((1u64 << shift).saturating_sub(delta));
                assert!(s.len() <= 8, "{s:?} too long");
            }
        }
    }

    #[test]
    fn size_and_bytes_adds_the_exact_count() {
        assert_eq!(size_and_bytes(0), "0 bytes");
        assert_eq!(size_and_bytes(1023), "1023 bytes");
        assert_eq!(size_and_bytes(1024), "1.00 KiB (1024 bytes)");
        assert_eq!(size_and_bytes(270_544), "264 KiB (270544 bytes)");
        assert_eq!(size_and_bytes(1 << 30), "1.00 GiB (1073741824 bytes)");
        assert_eq!(
            size_and_bytes(u64::MAX),
            "16.0 EiB (18446744073709551615 bytes)"
        );
    }

    #[test]
    fn rates_append_per_second() {
        assert_eq!(rate(0), "0 B/s");
        assert_eq!(rate(12_900_000), "12.3 MiB/s");
        assert_eq!(rate_or_dash(0), "-");
        assert_eq!(rate_or_dash(2048), "2.00 KiB/s");
    }

    #[test]
    fn durations_show_two_units() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(60), "1m 00s");
        assert_eq!(duration(12 * 60 + 5), "12m 05s");
        assert_eq!(duration(3_600 + 2 * 60 + 59), "1h 02m");
        assert_eq!(duration(3 * 86_400 + 4 * 3_600 + 59), "3d 4h");
        assert_eq!(duration(99 * 86_400 + 23 * 3_600), "99d 23h");
        assert_eq!(duration(DURATION_MAX_SECS), "∞");
        assert_eq!(duration(u64::MAX), "∞");
    }

    #[test]
    fn parse_size_reads_units_and_bare_bytes() {
        for (text, bytes) in [
            ("0", 0),
            ("4096", 4096),
            ("1K", 1024),
            ("1.5k", 1536),
            ("1 KiB", 1024),
            ("2.5 MiB", 5 << 19),
            ("1GB", 1 << 30),
            ("2 tib", 2 << 40),
            ("1.5 PiB", 3 << 49),
            ("2E", 2 << 60),
            ("  7 b ", 7),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "abc", "-1K", "1Q", "1.2.3", "1 KiB/s", "K"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("99999999T").unwrap_err().contains("too large"));
        assert!(parse_size("16 EiB").unwrap_err().contains("too large"));
    }

    #[test]
    fn parse_rate_reads_human_units_and_unlimited() {
        for (text, bytes) in [
            ("0", 0),
            ("unlimited", 0),
            ("Off", 0),
            ("-", 0),
            ("", 0),
            ("1048576", 1 << 20),
            ("1M", 1 << 20),
            ("1m", 1 << 20),
            ("500K", 500 << 10),
            ("500 KiB/s", 500 << 10),
            ("2.5 MiB/s", 5 << 19),
            ("1mbps", 1 << 20),
            ("1 G", 1 << 30),
            ("2.5MB/s", 5 << 19),
            ("100B", 100),
            ("100 B/s", 100),
        ] {
            assert_eq!(parse_rate(text), Ok(bytes), "{text}");
        }
        for bad in [
            "fast",
            "12 parsecs",
            "-5K",
            "-5",
            "1X",
            "M",
            "1.2.3M",
            "1 GiB/h",
            "1e999",
            "1 Mx",
        ] {
            let e = parse_rate(bad).unwrap_err();
            assert!(e.contains("as a rate") && e.contains(bad), "{bad}: {e}");
        }
        assert!(parse_rate("99999999T").unwrap_err().contains("too large"));
    }

    #[test]
    fn sizes_and_rates_read_back_within_the_digits_shown() {
        let mut x: u64 = 1;
        while x < (1 << 62) {
            for v in [x, x + x / 3, x * 7 / 5] {
                let back = parse_size(&size(v)).unwrap();
                // three significant digits: within 0.5 % (plus rounding of tiny values)
                let err = back.abs_diff(v) as f64 / v as f64;
                assert!(err <= 0.005, "{v} -> {} -> {back}", size(v));
                assert_eq!(parse_rate(&rate(v)), Ok(back), "{v}");
            }
            x = x * 3 + 1;
        }
        assert_eq!(parse_rate(&rate_or_dash(0)), Ok(0));
        for exact in [0u64, 1, 1023, 1024, 1536, 1 << 20, 5 << 30] {
            assert_eq!(parse_size(&size(exact)), Ok(exact));
        }
    }

    #[test]
    fn durations_read_back_to_the_units_shown() {
        for (text, secs) in [
            ("0", 0),
            ("90", 90),
            ("45s", 45),
            ("12m 05s", 725),
            ("1h30m", 5_400),
            ("1h 02m", 3_720),
            ("3d 4h", 273_600),
            ("2m1d", 86_520),
        ] {
            assert_eq!(parse_duration(text), Ok(secs), "{text}");
        }
        for bad in [
            "",
            "∞",
            "1x",
            "h",
            "1h 2",
            "-5s",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        // what `duration` shows, truncated to its two units, reads back exactly
        for secs in [0u64, 59, 60, 725, 3_599, 3_600, 86_399, 86_400, 8_639_999] {
            let shown = duration(secs);
            let back = parse_duration(&shown).unwrap();
            let unit = match secs {
                0..3_600 => 1,
                3_600..86_400 => 60,
                _ => 3_600,
            };
            assert_eq!(back, secs / unit * unit, "{secs} -> {shown}");
        }
    }
}
