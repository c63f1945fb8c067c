//! The `[alt_speed_schedule]` table: when the alternative speed limits switch on and off
//! by themselves (qBittorrent's scheduler, Transmission's "turtle" schedule), and the pure
//! time arithmetic over it: [`is_active`] and [`next_boundary`], both in local time
//! without time zone (`chrono::NaiveDateTime`), so a test gives them any instant.

use chrono::{Datelike, Duration, NaiveDateTime, NaiveTime};
use serde::Deserialize;

/// The `[alt_speed_schedule]` table: alternative speeds on from `from` to `to` (local time)
/// on the days of `days`; `from` later than `to` wraps past midnight (the window then
/// belongs to the day it starts on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AltSpeedSchedule {
    /// Follow the schedule. Default: false (alternative speeds only by hand).
    pub enabled: bool,
    /// Start of the window, `"HH:MM"` local time. Default: 18:00.
    #[serde(deserialize_with = "clock_time")]
    pub from: NaiveTime,
    /// End of the window, `"HH:MM"` local time, not equal to `from`. Default: 23:30.
    #[serde(deserialize_with = "clock_time")]
    pub to: NaiveTime,
    /// The days a window may start on. Default: every day.
    pub days: Days,
}

impl Default for AltSpeedSchedule {
    fn default() -> Self {
        AltSpeedSchedule {
            enabled: false,
            from: NaiveTime::from_hms_opt(18, 0, 0).expect("18:00 is a time"),
            to: NaiveTime::from_hms_opt(23, 30, 0).expect("23:30 is a time"),
            days: Days::EVERY_DAY,
        }
    }
}

/// A set of week days, Monday first (bit 0 = Monday ... bit 6 = Sunday). In the file:
/// `"every day"`, `"weekdays"` (Monday to Friday), `"weekends"` (Saturday and Sunday), or a
/// list of day names (`["mon", "wed"]`; three letters or in full, any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Days(u8);

/// Day names as written in a `days` list, Monday first.
const DAY_NAMES: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

impl Days {
    /// Monday to Sunday.
    pub const EVERY_DAY: Days = Days(0b111_1111);
    /// Monday to Friday.
    pub const WEEKDAYS: Days = Days(0b001_1111);
    /// Saturday and Sunday.
    pub const WEEKENDS: Days = Days(0b110_0000);

    /// Whether `day` is in the set.
    pub fn contains(self, day: chrono::Weekday) -> bool {
        self.0 & (1 << day.num_days_from_monday()) != 0
    }

    /// No day at all.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Parse `"every day"`, `"weekdays"`, `"weekends"`.
    ///
    /// # Errors
    /// A description naming what was given and what is allowed.
    pub fn parse_word(s: &str) -> Result<Days, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "every day" | "everyday" | "daily" => Ok(Days::EVERY_DAY),
            "weekdays" => Ok(Days::WEEKDAYS),
            "weekends" => Ok(Days::WEEKENDS),
            _ => Err(format!(
                "{s:?} is not \"every day\", \"weekdays\", \"weekends\" or a list of days like [\"mon\", \"fri\"]"
            )),
        }
    }

    /// A set from day names (`"mon"` or `"monday"`, any case), at least one.
    ///
    /// # Errors
    /// A description naming the first name that is not a day, or an empty list.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Days, String> {
        if names.is_empty() {
            return Err("must name at least one day (or say \"every day\")".into());
        }
        let mut bits = 0u8;
        for n in names {
            let n = n.as_ref();
            let low = n.trim().to_ascii_lowercase();
            let i = DAY_NAMES
                .iter()
                .position(|d| {
                    low.len() >= 3 && d.starts_with(low.as_str()) && (low.len() == 3 || low == **d)
                })
                .ok_or_else(|| format!("{n:?} is not a day (mon, tue, wed, thu, fri, sat, sun)"))?;
            bits |= 1 << i;
        }
        Ok(Days(bits))
    }
}

impl<'de> Deserialize<'de> for Days {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Days, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<String>),
            Other(toml::Value),
        }
        match Raw::deserialize(d)? {
            Raw::Word(w) => Days::parse_word(&w),
            Raw::List(l) => Days::from_names(&l),
            Raw::Other(v) => Err(format!(
                "{v} is not \"every day\", \"weekdays\", \"weekends\" or a list of day names"
            )),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// Parse `"HH:MM"` (24-hour clock, `00:00` to `23:59`).
///
/// # Errors
/// A description naming the text and the expected form.
pub fn parse_clock_time(s: &str) -> Result<NaiveTime, String> {
    let bad = || format!("{s:?} is not a time of day HH:MM (00:00 to 23:59)");
    let (h, m) = s.trim().split_once(':').ok_or_else(bad)?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return Err(bad());
    }
    let h: u32 = h.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad)
}

/// serde: [`parse_clock_time`].
fn clock_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<NaiveTime, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Other(toml::Value),
    }
    match Raw::deserialize(d)? {
        Raw::Text(t) => parse_clock_time(&t),
        Raw::Other(v) => Err(format!(
            "{v} is not a time of day \"HH:MM\" (write it between quotes)"
        )),
    }
    .map_err(serde::de::Error::custom)
}

impl AltSpeedSchedule {
    /// Check what the types cannot: `from` and `to` differ, at least one day.
    ///
    /// # Errors
    /// The key inside the table (`"from"`, `"days"`) and the problem.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.from == self.to {
            return Err((
                "to",
                format!(
                    "must differ from `from` (both {}): the window would be empty",
                    self.from.format("%H:%M")
                ),
            ));
        }
        if self.days.is_empty() {
            return Err(("days", "must name at least one day".into()));
        }
        Ok(())
    }

    /// Length of a window (`to - from`, plus a day when it wraps past midnight).
    fn window(&self) -> Duration {
        let d = self.to.signed_duration_since(self.from);
        if d > Duration::zero() {
            d
        } else {
            d + Duration::days(1)
        }
    }
}

/// Whether alternative speeds are on at local time `now` under `schedule` (its `enabled`
/// is not looked at): `now` lies in a window `[from, to)` that starts on a day of `days`
/// (today's, or yesterday's when it wraps past midnight).
pub fn is_active(now: NaiveDateTime, schedule: &AltSpeedSchedule) -> bool {
    let window = schedule.window();
    [0, 1].into_iter().any(|back| {
        let start = (now.date() - Duration::days(back)).and_time(schedule.from);
        schedule.days.contains(start.weekday()) && start <= now && now < start + window
    })
}

/// The first boundary strictly after local time `now`: when it is and whether alternative
/// speeds go on (`true`, a `from`) or off (`false`, a `to`) there. `None` when `days` is
/// empty. Local times as on the wall clock (no DST: the caller checks the clock again when
/// the timer fires).
pub fn next_boundary(
    now: NaiveDateTime,
    schedule: &AltSpeedSchedule,
) -> Option<(NaiveDateTime, bool)> {
    let window = schedule.window();
    // a window that began yesterday may end today; within 8 days every day comes round
    (-1..=8)
        .filter_map(|k| {
            let start = (now.date() + Duration::days(k)).and_time(schedule.from);
            schedule.days.contains(start.weekday()).then_some(start)
        })
        .flat_map(|start| [(start, true), (start + window, false)])
        .filter(|(at, _)| *at > now)
        .min_by_key(|(at, _)| *at)
}

#[cfg(test)]
mod tests;
