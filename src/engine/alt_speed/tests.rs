//! The switch and the schedule's timer, with a clock the test sets.

use super::*;
use crate::config::schedule::{Days, parse_clock_time};
use std::sync::Mutex;

/// A clock that says what the test last told it.
#[derive(Debug)]
struct SetClock(Mutex<NaiveDateTime>);

impl LocalClock for SetClock {
    fn now_local(&self) -> NaiveDateTime {
        *self.0.lock().unwrap()
    }
}

fn at(day: u32, hh: u32, mm: u32) -> NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(2026, 12, day)
        .unwrap()
        .and_hms_opt(hh, mm, 0)
        .unwrap()
}

#[test]
fn pairs_switch_and_live_limits_go_to_the_pair_in_effect() {
    let mut a = AltSpeeds::new(
        (1000, 2000),
        (10, 20),
        AltSpeedSchedule::default(),
        Arc::new(WallClock),
    );
    assert_eq!(a.in_effect(), (1000, 2000));
    assert!(a.set_on(true));
    assert!(!a.set_on(true));
    assert_eq!(a.in_effect(), (10, 20));
    a.set_in_effect((30, 40));
    assert_eq!(
        a.normal(),
        (1000, 2000),
        "the normal pair is not overwritten"
    );
    assert!(a.set_on(false));
    assert_eq!(a.in_effect(), (1000, 2000));
    // no schedule: no timer
    assert_eq!(a.next_wake(), None);
    assert!(!a.on_timer());
}

#[test]
fn the_schedule_switches_at_each_boundary_and_overrides_a_manual_switch() {
    let clock = Arc::new(SetClock(Mutex::new(at(7, 17, 0))));
    let schedule = AltSpeedSchedule {
        enabled: true,
        from: parse_clock_time("18:00").unwrap(),
        to: parse_clock_time("01:00").unwrap(),
        days: Days::EVERY_DAY,
    };
    let mut a = AltSpeeds::new((0, 0), (5, 5), schedule, clock.clone());
    assert!(!a.follow_schedule_now());
    assert_eq!(a.next_wake(), Some(Duration::from_secs(3600)));
    // woken early (capped sleep, clock moved back): nothing changes
    *clock.0.lock().unwrap() = at(7, 17, 59);
    assert!(!a.on_timer());
    assert_eq!(a.next_wake(), Some(Duration::from_secs(60)));
    *clock.0.lock().unwrap() = at(7, 18, 0);
    assert!(a.on_timer() && a.is_on());
    // switched off by hand, it holds until the next boundary: 01:00 the next day
    a.set_on(false);
    assert_eq!(a.next_wake(), Some(Duration::from_secs(3600)));
    *clock.0.lock().unwrap() = at(8, 0, 30);
    assert!(!a.on_timer() && !a.is_on(), "not yet at 01:00");
    assert_eq!(a.next_wake(), Some(Duration::from_secs(30 * 60)));
    *clock.0.lock().unwrap() = at(8, 1, 0);
    assert!(!a.on_timer() && !a.is_on(), "01:00 says off, it was off");
    a.next_wake();
    // switched on by hand in the afternoon; the schedule turns it... on at 18:00 (no
    // change), and off at 01:00
    a.set_on(true);
    *clock.0.lock().unwrap() = at(8, 18, 0);
    assert!(!a.on_timer() && a.is_on());
    a.next_wake();
    *clock.0.lock().unwrap() = at(9, 1, 0);
    assert!(a.on_timer() && !a.is_on());
    // a suspended machine wakes past several boundaries: the schedule says for now
    a.next_wake();
    *clock.0.lock().unwrap() = at(11, 20, 0);
    assert!(a.on_timer() && a.is_on());
}
