//! The schedule's arithmetic: windows, wrap past midnight, day sets; its parsing.

use super::*;
use chrono::NaiveDate;

/// 2026-12-07 is a Monday.
fn at(day: u32, hh: u32, mm: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 12, day)
        .unwrap()
        .and_hms_opt(hh, mm, 0)
        .unwrap()
}

fn sched(from: &str, to: &str, days: Days) -> AltSpeedSchedule {
    AltSpeedSchedule {
        enabled: true,
        from: parse_clock_time(from).unwrap(),
        to: parse_clock_time(to).unwrap(),
        days,
    }
}

#[test]
fn a_window_within_one_day() {
    let s = sched("18:00", "23:30", Days::EVERY_DAY);
    assert!(!is_active(at(7, 17, 59), &s));
    assert!(is_active(at(7, 18, 0), &s));
    assert!(is_active(at(7, 23, 29), &s));
    assert!(!is_active(at(7, 23, 30), &s));
    assert_eq!(next_boundary(at(7, 12, 0), &s), Some((at(7, 18, 0), true)));
    assert_eq!(
        next_boundary(at(7, 18, 0), &s),
        Some((at(7, 23, 30), false))
    );
    assert_eq!(next_boundary(at(7, 23, 30), &s), Some((at(8, 18, 0), true)));
}

#[test]
fn a_window_wrapping_past_midnight() {
    let s = sched("22:00", "06:30", Days::EVERY_DAY);
    assert!(is_active(at(7, 23, 0), &s));
    assert!(is_active(at(8, 0, 0), &s));
    assert!(is_active(at(8, 6, 29), &s));
    assert!(!is_active(at(8, 6, 30), &s));
    assert!(!is_active(at(8, 21, 59), &s));
    assert_eq!(next_boundary(at(7, 23, 0), &s), Some((at(8, 6, 30), false)));
    assert_eq!(next_boundary(at(8, 2, 0), &s), Some((at(8, 6, 30), false)));
    assert_eq!(next_boundary(at(8, 7, 0), &s), Some((at(8, 22, 0), true)));
}

#[test]
fn weekdays_windows_end_on_saturday_and_start_again_on_monday() {
    // Friday 22:00 to Saturday 06:30 belongs to Friday; none starts on Saturday or Sunday
    let s = sched("22:00", "06:30", Days::WEEKDAYS);
    assert!(
        is_active(at(12, 3, 0), &s),
        "Saturday morning, Friday's window"
    );
    assert!(!is_active(at(12, 23, 0), &s), "Saturday night");
    assert!(
        !is_active(at(14, 3, 0), &s),
        "Sunday's window would start Saturday"
    );
    assert_eq!(
        next_boundary(at(12, 3, 0), &s),
        Some((at(12, 6, 30), false))
    );
    assert_eq!(next_boundary(at(12, 7, 0), &s), Some((at(14, 22, 0), true)));
    assert!(
        is_active(at(15, 1, 0), &s),
        "Tuesday 01:00, Monday's window"
    );
}

#[test]
fn weekends_and_listed_days() {
    let s = sched("09:00", "17:00", Days::WEEKENDS);
    assert!(!is_active(at(11, 10, 0), &s), "Friday");
    assert!(is_active(at(12, 10, 0), &s), "Saturday");
    assert!(is_active(at(13, 10, 0), &s), "Sunday");
    // Monday noon: the next start is Saturday
    assert_eq!(next_boundary(at(7, 12, 0), &s), Some((at(12, 9, 0), true)));

    let s = sched(
        "09:00",
        "17:00",
        Days::from_names(&["wed", "Sunday"]).unwrap(),
    );
    assert!(!is_active(at(8, 10, 0), &s), "Tuesday");
    assert!(is_active(at(9, 10, 0), &s), "Wednesday");
    assert_eq!(next_boundary(at(9, 17, 0), &s), Some((at(13, 9, 0), true)));
}

#[test]
fn parsing_times_and_days() {
    assert_eq!(
        parse_clock_time("7:05").unwrap(),
        NaiveTime::from_hms_opt(7, 5, 0).unwrap()
    );
    for bad in ["24:00", "12:60", "1230", "12:5", "ab:cd", "", "-1:00"] {
        let e = parse_clock_time(bad).unwrap_err();
        assert!(e.contains("HH:MM"), "{bad}: {e}");
    }
    assert_eq!(Days::parse_word("Every day").unwrap(), Days::EVERY_DAY);
    assert_eq!(Days::parse_word("weekdays").unwrap(), Days::WEEKDAYS);
    assert!(
        Days::parse_word("sometimes")
            .unwrap_err()
            .contains("sometimes")
    );
    assert!(
        Days::from_names(&["mon", "fun"])
            .unwrap_err()
            .contains("\"fun\"")
    );
    assert!(Days::from_names::<&str>(&[]).is_err());
    let d = Days::from_names(&["Mon", "friday"]).unwrap();
    assert!(d.contains(chrono::Weekday::Mon) && d.contains(chrono::Weekday::Fri));
    assert!(!d.contains(chrono::Weekday::Tue));
}

#[test]
fn equal_from_and_to_is_refused() {
    let s = sched("18:00", "18:00", Days::EVERY_DAY);
    let (key, problem) = s.check().unwrap_err();
    assert_eq!(key, "to");
    assert!(problem.contains("18:00"), "{problem}");
    assert!(sched("18:00", "18:01", Days::EVERY_DAY).check().is_ok());
}
