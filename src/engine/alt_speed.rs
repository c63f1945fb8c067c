//! Alternative speed limits ("turtle mode"): a session-wide switch between two pairs of
//! session limits, the normal pair (`download_rate_limit` / `upload_rate_limit`, or as set
//! live) and the alternative pair (`alt_download_rate_limit` / `alt_upload_rate_limit`),
//! flipped by hand ([`crate::api::Command::SetAltSpeed`]) or by the
//! `[alt_speed_schedule]` at each of its boundaries. A manual switch holds until the next
//! boundary. The schedule is one timer of the session's deadline queue, set for the next
//! boundary ([`crate::config::schedule::next_boundary`]), never a poll.

use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;

use crate::config::schedule::{AltSpeedSchedule, is_active, next_boundary};

/// Longest sleep before the schedule looks at the clock again, even when the next boundary
/// is further off: a clock set by hand, a DST change or a suspended machine is noticed
/// within this time.
pub const MAX_SCHEDULE_SLEEP: Duration = Duration::from_secs(3600);

/// Where the session reads local time (wall clock time, no zone): [`WallClock`] in a real
/// session; tests hand [`crate::engine::session::start_with_clock`] one that starts where
/// they want.
pub trait LocalClock: Send + Sync + std::fmt::Debug {
    /// Local time now.
    fn now_local(&self) -> NaiveDateTime;
}

/// The system's local time (`chrono::Local`).
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl LocalClock for WallClock {
    fn now_local(&self) -> NaiveDateTime {
        chrono::Local::now().naive_local()
    }
}

/// A clock that reads `start` at the moment it is made and runs at the pace of the
/// monotonic clock from there (tests: a session whose local time is one second before a
/// boundary).
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock {
    start: NaiveDateTime,
    made: std::time::Instant,
}

impl OffsetClock {
    /// A clock that says `start` now.
    pub fn starting_at(start: NaiveDateTime) -> OffsetClock {
        OffsetClock {
            start,
            made: std::time::Instant::now(),
        }
    }
}

impl LocalClock for OffsetClock {
    fn now_local(&self) -> NaiveDateTime {
        let ran = chrono::Duration::from_std(self.made.elapsed()).unwrap_or_default();
        self.start + ran
    }
}

/// The switch, the two pairs of session limits (bytes/s, 0 = unlimited) and the schedule.
#[derive(Debug)]
pub struct AltSpeeds {
    on: bool,
    /// (download, upload) while off.
    normal: (u64, u64),
    /// (download, upload) while on.
    alt: (u64, u64),
    /// The config's normal pair (at start, or as a reload read it): kept beside the live
    /// pair in the state store (see [`crate::state::SessionLimits`]).
    config_normal: (u64, u64),
    /// The schedule when enabled.
    schedule: Option<AltSpeedSchedule>,
    clock: Arc<dyn LocalClock>,
    /// The boundary the timer is set for (local time).
    next: Option<NaiveDateTime>,
}

impl AltSpeeds {
    /// Off, with the `normal` and `alt` pairs (download, upload, bytes/s); `schedule` is
    /// followed when enabled.
    pub fn new(
        normal: (u64, u64),
        alt: (u64, u64),
        schedule: AltSpeedSchedule,
        clock: Arc<dyn LocalClock>,
    ) -> AltSpeeds {
        AltSpeeds {
            on: false,
            normal,
            alt,
            config_normal: normal,
            schedule: (schedule.enabled && !schedule.days.is_empty()).then_some(schedule),
            clock,
            next: None,
        }
    }

    /// Whether alternative speeds are on.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Switch by hand (or restore the saved switch). Returns whether it changed.
    pub fn set_on(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.on, on) != on
    }

    /// The limits in effect now (download, upload, bytes/s).
    pub fn in_effect(&self) -> (u64, u64) {
        if self.on { self.alt } else { self.normal }
    }

    /// The normal pair (kept in the state store as the live-set session limits).
    pub fn normal(&self) -> (u64, u64) {
        self.normal
    }

    /// Limits set live ([`crate::api::Command::SetLimits`]): they replace the pair in
    /// effect, the alternative one while alternative speeds are on (for this run; the
    /// config's pair comes back at the next start).
    pub fn set_in_effect(&mut self, pair: (u64, u64)) {
        if self.on {
            self.alt = pair;
        } else {
            self.normal = pair;
        }
    }

    /// The config file's pairs read again (a reload): both replace those in force, the
    /// normal one also one set live.
    pub fn reconfigure(&mut self, normal: (u64, u64), alt: (u64, u64)) {
        self.normal = normal;
        self.alt = alt;
        self.config_normal = normal;
    }

    /// The config's normal pair (see [`AltSpeeds::reconfigure`]).
    pub fn config_normal(&self) -> (u64, u64) {
        self.config_normal
    }

    /// The normal pair (restored from the state store at start).
    pub fn set_normal(&mut self, pair: (u64, u64)) {
        self.normal = pair;
    }

    /// At start, with a schedule: the switch as the schedule says for now. Returns whether
    /// it changed.
    pub fn follow_schedule_now(&mut self) -> bool {
        match self.schedule {
            Some(s) => {
                let active = is_active(self.clock.now_local(), &s);
                self.set_on(active)
            }
            None => false,
        }
    }

    /// The schedule's timer fired: at or past the boundary it was set for, the switch
    /// becomes what the schedule says for now (a manual switch ends here); before it (the
    /// clock moved, or the sleep was capped) nothing changes. Returns whether the switch
    /// changed; call [`AltSpeeds::next_wake`] next.
    pub fn on_timer(&mut self) -> bool {
        let (Some(s), Some(due)) = (self.schedule, self.next) else {
            return false;
        };
        let now = self.clock.now_local();
        if now < due {
            return false;
        }
        self.set_on(is_active(now, &s))
    }

    /// How long until the schedule's timer should fire (the next boundary, at most
    /// [`MAX_SCHEDULE_SLEEP`] away); `None` without a schedule.
    pub fn next_wake(&mut self) -> Option<Duration> {
        let s = self.schedule?;
        let now = self.clock.now_local();
        let (at, _) = next_boundary(now, &s)?;
        self.next = Some(at);
        let wait = (at - now).to_std().unwrap_or_default();
        Some(wait.min(MAX_SCHEDULE_SLEEP))
    }
}

#[cfg(test)]
mod tests;
