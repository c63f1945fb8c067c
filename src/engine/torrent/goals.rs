//! Seeding goals (qBittorrent's share limits): a seeding torrent that reaches its ratio,
//! seeding time or inactive seeding time limit gets the `[seeding]` action (stop, remove,
//! remove with data, or seeding on at the alternative upload rate).
//!
//! Cheap for many torrents: nothing scans them all. The ratio is looked at where the
//! torrent already accounts uploaded bytes (its choke round every 10 s while it has peers,
//! a peer leaving or losing interest); the two time limits have one timer per seeding
//! torrent ([`TorrentTimer::Goal`]) set for the earliest moment one of them can be
//! reached. The rule itself ([`effective`], [`reached`], [`next_due`]) is plain and takes
//! the time as an argument.

use std::time::{Duration, Instant};

use super::state::Input;
use super::{Env, TimerKey, Torrent, TorrentTimer};
use crate::api::{EventKind, EventLevel, GoalView, ShareLimits, TorrentState, USE_GLOBAL};
use crate::config::engine::{GoalAction, SeedingConfig};

/// The limits in effect for one torrent (its own, or the session's where it says -2).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Effective {
    /// Share ratio limit; `None`: none.
    pub ratio: Option<f64>,
    /// Seeding time limit; `None`: none.
    pub seeding: Option<Duration>,
    /// Inactive seeding time limit (no payload byte uploaded); `None`: none.
    pub inactive: Option<Duration>,
}

/// The limits in effect for a torrent with limits `own` in a session with `global`:
/// -2 takes the session's, -1 is none, 0 or more is the limit (minutes for the times).
pub fn effective(own: ShareLimits, global: &SeedingConfig) -> Effective {
    let own = own.sanitized();
    let ratio = if own.ratio == USE_GLOBAL as f64 {
        global.ratio()
    } else {
        (own.ratio >= 0.0).then_some(own.ratio)
    };
    let minutes = |m: i64, g: Option<u64>| {
        let m = if m == USE_GLOBAL {
            g
        } else {
            u64::try_from(m).ok()
        };
        m.map(|m| Duration::from_secs(m.saturating_mul(60)))
    };
    Effective {
        ratio,
        seeding: minutes(own.seeding_minutes, global.seeding_minutes()),
        inactive: minutes(own.inactive_minutes, global.inactive_minutes()),
    }
}

/// Where a seeding torrent stands.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Standing {
    /// Its share ratio ([`crate::api::share_ratio`]); `None` while unknown.
    pub ratio: Option<f64>,
    /// Time spent seeding, all runs together.
    pub seeded: Duration,
    /// Time since it last uploaded a payload byte (or since it started seeding).
    pub inactive: Duration,
}

/// A goal that was reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reached {
    /// The ratio limit (the limit).
    Ratio(f64),
    /// The seeding time limit.
    Seeded(Duration),
    /// The inactive seeding time limit.
    Inactive(Duration),
}

impl Reached {
    /// For people: `ratio 2.00 reached`, `seeded 7d 0h reached`, `inactive 30m 00s
    /// reached`.
    pub fn describe(&self) -> String {
        match self {
            Reached::Ratio(r) => format!("ratio {r:.2} reached"),
            Reached::Seeded(d) => format!("seeded {} reached", crate::units::duration(d.as_secs())),
            Reached::Inactive(d) => {
                format!("inactive {} reached", crate::units::duration(d.as_secs()))
            }
        }
    }

    /// What resuming it by hand is told while the goal still holds.
    pub fn raise_hint(&self) -> String {
        let what = match self {
            Reached::Ratio(_) => "ratio",
            Reached::Seeded(_) => "seeding time",
            Reached::Inactive(_) => "inactive time",
        };
        format!("{what} goal reached: raise the goal to seed on")
    }
}

/// The first goal of `e` that `s` reached (ratio, then seeding time, then inactivity).
/// A ratio within 1e-9 of its limit counts as reached (uploaded bytes equal to the size
/// make exactly 1.0, but 2.0 may come out a hair below).
pub fn reached(e: &Effective, s: &Standing) -> Option<Reached> {
    if let (Some(limit), Some(r)) = (e.ratio, s.ratio)
        && r + 1e-9 >= limit
    {
        return Some(Reached::Ratio(limit));
    }
    if let Some(limit) = e.seeding
        && s.seeded >= limit
    {
        return Some(Reached::Seeded(limit));
    }
    if let Some(limit) = e.inactive
        && s.inactive >= limit
    {
        return Some(Reached::Inactive(limit));
    }
    None
}

/// How long until a time limit of `e` can be reached from `s` (the earlier of the two);
/// `None` when neither is set. The ratio has no timer: it moves only with uploads.
pub fn next_due(e: &Effective, s: &Standing) -> Option<Duration> {
    let seeding = e.seeding.map(|l| l.saturating_sub(s.seeded));
    let inactive = e.inactive.map(|l| l.saturating_sub(s.inactive));
    match (seeding, inactive) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A torrent's goal bookkeeping.
#[derive(Debug, Clone)]
pub struct GoalState {
    /// Its own limits (-2: the session's).
    pub limits: ShareLimits,
    /// Seconds seeded in earlier spells (and runs).
    pub seeded_before: u64,
    /// When the current spell of seeding began.
    pub seeding_since: Option<Instant>,
    /// The same moment in Unix seconds (the row shows it; a front end adds the time since).
    pub seeding_since_unix: Option<u64>,
    /// Uploaded bytes at the last look, and when they last grew (or the current spell of
    /// seeding began, whichever is later).
    pub last_upload: (u64, Instant),
    /// Seconds seeded without an upload in earlier spells (and runs), since the last
    /// upload: a pause or a restart does not reset the inactive seeding time.
    pub inactive_before: u64,
    /// Stopped by a goal: what was reached (shown, kept across restarts).
    pub stopped: Option<String>,
    /// A goal asked for its torrent's removal (with its data: `true`); the session does it.
    pub remove: Option<bool>,
    /// Its category's goals (-2: the session's), used where its own say -2.
    pub category: ShareLimits,
    /// A goal holds its upload at the alternative rate (`alt_upload`); not stored: a
    /// restored torrent that seeds finds its goal reached again at once.
    pub throttled: Option<Throttle>,
}

/// A torrent seeding on at the alternative upload rate because a goal was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// What was reached (`ratio 2.00 reached`).
    pub reached: String,
    /// Its own upload limit, bytes/s (0 = none): given back when the goal is raised, and
    /// what its record keeps.
    pub own_upload: u64,
    /// The alternative upload limit, bytes/s (0 = none).
    pub alt_upload: u64,
}

impl Throttle {
    /// The upload limit in force: the lower of the two (0 = none).
    pub fn rate(&self) -> u64 {
        match (self.own_upload, self.alt_upload) {
            (0, a) => a,
            (o, 0) => o,
            (o, a) => o.min(a),
        }
    }
}

impl Default for GoalState {
    fn default() -> Self {
        GoalState {
            limits: ShareLimits::default(),
            seeded_before: 0,
            seeding_since: None,
            seeding_since_unix: None,
            last_upload: (0, Instant::now()),
            inactive_before: 0,
            stopped: None,
            remove: None,
            category: ShareLimits::default(),
            throttled: None,
        }
    }
}

impl GoalState {
    /// Its limits with the -2 fields taken from its category (still -2: the session's).
    pub fn in_effect(&self) -> ShareLimits {
        crate::engine::categories::inherit(self.limits, self.category)
    }

    /// Time seeded, all spells together, at `now`.
    pub fn seeded(&self, now: Instant) -> Duration {
        Duration::from_secs(self.seeded_before)
            + self
                .seeding_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }

    /// Inactive seeding time at `now`: seeded without an upload since the last one, all
    /// spells together.
    pub fn inactive(&self, now: Instant) -> Duration {
        let spell = if self.seeding_since.is_some() {
            now.saturating_duration_since(self.last_upload.1)
        } else {
            Duration::ZERO
        };
        Duration::from_secs(self.inactive_before) + spell
    }
}

impl Torrent {
    /// The bytes a share ratio is measured against: the wanted files' (all of them when
    /// none is skipped).
    fn share_size(&self) -> u64 {
        if self.wanted.skips_any() {
            self.wanted.wanted_files(&self.sum).map(|f| f.length).sum()
        } else {
            self.sum.payload_size
        }
    }

    /// Where it stands at `now` (inactive time counts only while seeding).
    fn standing(&self, now: Instant) -> Standing {
        let (downloaded, uploaded, _) = self.totals();
        Standing {
            ratio: crate::api::share_ratio(uploaded, downloaded, self.share_size()),
            seeded: self.goals.seeded(now),
            inactive: self.goals.inactive(now),
        }
    }

    /// The state shown changed from `before` to `after`: start or stop the seeding clock;
    /// a torrent that runs again is no longer stopped by a goal.
    pub(super) fn goal_state_changed(
        &mut self,
        before: TorrentState,
        after: TorrentState,
        env: &mut Env<'_>,
    ) {
        let now = env.now;
        if after == TorrentState::Seeding && before != TorrentState::Seeding {
            self.goals.seeding_since = Some(now);
            self.goals.seeding_since_unix = Some(super::now_unix());
            self.goals.last_upload = (self.totals().1, now);
            self.goals.stopped = None;
            // looked at from the deadline queue, not inside the input that started it
            // seeding (a goal's stop would feed the state machine from within its step)
            env.timers
                .schedule(TimerKey::Torrent(self.id, TorrentTimer::Goal), now);
        } else if before == TorrentState::Seeding && after != TorrentState::Seeding {
            self.goals.inactive_before = self.goals.inactive(now).as_secs();
            if let Some(since) = self.goals.seeding_since.take() {
                self.goals.seeded_before += now.saturating_duration_since(since).as_secs();
            }
            self.goals.seeding_since_unix = None;
            env.timers
                .cancel(TimerKey::Torrent(self.id, TorrentTimer::Goal));
        }
        if after.is_active() {
            self.goals.stopped = None;
        }
    }

    /// Look at the goals of a seeding torrent: note an upload, act on a goal reached, or
    /// set the timer for the earliest time limit.
    pub(super) fn check_goals(&mut self, env: &mut Env<'_>) {
        if self.life.ui_state() != TorrentState::Seeding || self.goals.seeding_since.is_none() {
            return;
        }
        let uploaded = self.totals().1;
        if uploaded != self.goals.last_upload.0 {
            self.goals.last_upload = (uploaded, env.now);
            self.goals.inactive_before = 0;
        }
        let e = effective(self.goals.in_effect(), env.seeding);
        let s = self.standing(env.now);
        let key = TimerKey::Torrent(self.id, TorrentTimer::Goal);
        match reached(&e, &s) {
            Some(r) => {
                env.timers.cancel(key);
                self.goal_reached(r, env);
            }
            None => match next_due(&e, &s) {
                // at least a second ahead: a limit exactly now was reached above
                Some(d) => env
                    .timers
                    .schedule(key, env.now + d.max(Duration::from_secs(1))),
                None => env.timers.cancel(key),
            },
        }
    }

    fn goal_reached(&mut self, r: Reached, env: &mut Env<'_>) {
        let what = r.describe();
        match env.seeding.action {
            GoalAction::Stop => {
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("{what}: stopped seeding"),
                );
                self.input(Input::Pause, env);
                self.goals.stopped = Some(what);
                self.persist_dirty = true;
            }
            GoalAction::Remove | GoalAction::RemoveWithData => {
                let data = env.seeding.action == GoalAction::RemoveWithData;
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!(
                        "{what}: removing it{}",
                        if data { " and its files" } else { "" }
                    ),
                );
                self.goals.remove = Some(data);
            }
            GoalAction::AltUpload => {
                if self.goals.throttled.is_some() {
                    // looked at again while it holds: nothing new
                    return;
                }
                let t = Throttle {
                    reached: what.clone(),
                    own_upload: self.limits.upload.rate(),
                    alt_upload: env.ctx.config.alt_upload_rate_limit,
                };
                let rate = t.rate();
                self.limits.upload.set_rate(rate);
                self.goals.throttled = Some(t);
                self.persist_dirty = true;
                let rate = if rate == 0 {
                    "no limit".to_owned()
                } else {
                    crate::units::rate(rate)
                };
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("{what}: {} ({rate})", crate::api::GOAL_ALT_RATE),
                );
            }
        }
        *env.publish_now = true;
    }

    /// Its own upload limit, bytes/s (0 = none): what it is set to, whatever a goal's
    /// alternative rate holds it at now.
    pub(super) fn own_upload_limit(&self) -> u64 {
        self.goals
            .throttled
            .as_ref()
            .map_or_else(|| self.limits.upload.rate(), |t| t.own_upload)
    }

    /// The user set its upload limit to `upload` (bytes/s, 0 = none): while a goal holds
    /// it at the alternative rate, the lower of the two applies.
    pub(super) fn set_own_upload_limit(&mut self, upload: u64) {
        match &mut self.goals.throttled {
            Some(t) => {
                t.own_upload = upload;
                let rate = t.rate();
                self.limits.upload.set_rate(rate);
            }
            None => self.limits.upload.set_rate(upload),
        }
    }

    /// What the row says while a goal holds it at the alternative upload rate.
    pub(super) fn goal_throttle_message(&self) -> Option<String> {
        self.goals
            .throttled
            .as_ref()
            .map(|t| format!("{}: {}", t.reached, crate::api::GOAL_ALT_RATE))
    }

    /// What stopped it, while a goal holds it stopped (`ratio 2.00 reached`).
    pub fn goal_stopped(&self) -> Option<&str> {
        self.goals.stopped.as_deref()
    }

    /// A goal asked for its removal: `Some(with_data)`, once.
    pub fn take_goal_removal(&mut self) -> Option<bool> {
        self.goals.remove.take()
    }

    /// Its own share limits.
    pub fn share_limits(&self) -> ShareLimits {
        self.goals.limits
    }

    /// Set its own share limits (-2 the session's, -1 none); a seeding torrent is looked
    /// at again at once; one stopped by a goal that no longer holds may be resumed.
    pub fn set_share_limits(&mut self, limits: ShareLimits, env: &mut Env<'_>) {
        self.goals.limits = limits.sanitized();
        self.persist_dirty = true;
        self.goals_changed(env);
    }

    /// Its goals in effect may have changed (its own, or the session's `[seeding]` while
    /// the session runs): a goal that no longer holds gives back its own upload rate or
    /// lets it be resumed; a seeding torrent is looked at again at once.
    pub fn goals_changed(&mut self, env: &mut Env<'_>) {
        *env.publish_now = true;
        if self.goals.throttled.is_some() {
            let e = effective(self.goals.limits, env.seeding);
            let s = Standing {
                inactive: Duration::ZERO,
                ..self.standing(env.now)
            };
            if reached(&e, &s).is_none()
                && let Some(t) = self.goals.throttled.take()
            {
                self.limits.upload.set_rate(t.own_upload);
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    "goal raised: seeding at its own upload rate again".into(),
                );
            }
        }
        if self.goals.stopped.is_some() && self.goal_blocking(env).is_none() {
            self.goals.stopped = None;
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                "goal raised: it may seed again (resume it)".into(),
            );
        }
        self.check_goals(env);
    }

    /// Its category's goals changed (it moved to another category, or the category was
    /// edited): look at its goals again.
    pub fn set_category_goals(&mut self, limits: ShareLimits, env: &mut Env<'_>) {
        let limits = limits.sanitized();
        if limits == self.goals.category {
            return;
        }
        self.goals.category = limits;
        *env.publish_now = true;
        self.check_goals(env);
    }

    /// The goal that still holds a goal-stopped torrent (ratio or seeding time; inactivity
    /// starts over when it resumes); `None` when it may seed.
    fn goal_blocking(&self, env: &Env<'_>) -> Option<Reached> {
        self.goals.stopped.as_ref()?;
        let e = effective(self.goals.in_effect(), env.seeding);
        let s = Standing {
            inactive: Duration::ZERO,
            ..self.standing(env.now)
        };
        reached(&e, &s)
    }

    /// The user resumes it (resume, toggle): refused with the reason in the event log while
    /// a goal that stopped it still holds; returns whether it was resumed.
    pub fn resume_by_hand(&mut self, env: &mut Env<'_>) -> bool {
        if let Some(r) = self.goal_blocking(env) {
            self.log(
                env,
                EventLevel::Warn,
                EventKind::StateChanged,
                r.raise_hint(),
            );
            *env.publish_now = true;
            return false;
        }
        self.goals.stopped = None;
        self.input(Input::Resume, env);
        true
    }

    /// The goals for the detail view.
    pub fn goal_view(&self, global: &SeedingConfig, now: Instant) -> GoalView {
        let e = effective(self.goals.in_effect(), global);
        GoalView {
            limits: self.goals.limits,
            ratio: e.ratio,
            seeding_minutes: e.seeding.map(|d| d.as_secs() / 60),
            inactive_minutes: e.inactive.map(|d| d.as_secs() / 60),
            seeding_secs: self.goals.seeded(now).as_secs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn limits(ratio: f64, seeding: i64, inactive: i64) -> ShareLimits {
        ShareLimits {
            ratio,
            seeding_minutes: seeding,
            inactive_minutes: inactive,
        }
    }

    fn global(ratio: f64, seeding: i64, inactive: i64) -> SeedingConfig {
        SeedingConfig {
            ratio_limit: ratio,
            seeding_time_limit: seeding,
            inactive_seeding_time_limit: inactive,
            action: GoalAction::Stop,
        }
    }

    #[test]
    fn minus_two_takes_the_session_value_minus_one_is_none_and_the_rest_is_the_limit() {
        let g = global(2.0, 60, 30);
        let e = effective(ShareLimits::default(), &g);
        assert_eq!(e.ratio, Some(2.0));
        assert_eq!(e.seeding, Some(60 * MIN));
        assert_eq!(e.inactive, Some(30 * MIN));
        let e = effective(limits(-1.0, -1, -1), &g);
        assert_eq!(
            e,
            Effective::default(),
            "-1: no limit although the session has one"
        );
        let e = effective(limits(0.5, 0, 7), &global(-1.0, -1, -1));
        assert_eq!(e.ratio, Some(0.5));
        assert_eq!(e.seeding, Some(Duration::ZERO));
        assert_eq!(e.inactive, Some(7 * MIN));
        // the session's "none" is none for a torrent that defers to it
        assert_eq!(
            effective(ShareLimits::default(), &SeedingConfig::default()),
            Effective::default()
        );
        // nonsense stored values mean something
        let e = effective(limits(f64::NAN, -9, -2), &g);
        assert_eq!(e.ratio, Some(2.0));
        assert_eq!(e.seeding, Some(60 * MIN));
    }

    #[test]
    fn the_ratio_is_reached_at_its_limit_and_not_a_byte_before() {
        let e = effective(limits(1.0, -1, -1), &SeedingConfig::default());
        let size: u64 = 20 << 20;
        let at = |up: u64| Standing {
            ratio: crate::api::share_ratio(up, 0, size),
            ..Standing::default()
        };
        assert_eq!(reached(&e, &at(size - 1)), None);
        assert_eq!(reached(&e, &at(size)), Some(Reached::Ratio(1.0)));
        assert_eq!(Reached::Ratio(2.0).describe(), "ratio 2.00 reached");
        // 3 × 0.1 GiB over 0.15 GiB is 2.0 give or take a rounding
        let two = Standing {
            ratio: Some(0.1 * 3.0 / 0.15),
            ..Standing::default()
        };
        let e2 = effective(limits(2.0, -1, -1), &SeedingConfig::default());
        assert_eq!(reached(&e2, &two), Some(Reached::Ratio(2.0)));
        // unknown ratio (magnet without metadata): never reached
        assert_eq!(reached(&e, &Standing::default()), None);
    }

    /// The inactive seeding time goes on across a pause (and a restart, which keeps
    /// `inactive_before`): only an upload resets it.
    #[test]
    fn inactive_time_counts_across_spells_of_seeding_until_an_upload() {
        let t0 = Instant::now();
        let mut st = GoalState {
            seeding_since: Some(t0),
            last_upload: (5, t0),
            inactive_before: 0,
            ..GoalState::default()
        };
        assert_eq!(st.inactive(t0 + 10 * MIN), 10 * MIN);
        // paused after 10 minutes: what it had is kept, nothing counts while paused
        st.inactive_before = st.inactive(t0 + 10 * MIN).as_secs();
        st.seeding_since = None;
        assert_eq!(st.inactive(t0 + 60 * MIN), 10 * MIN);
        // seeding again (or restored from its record) 50 minutes later: it goes on from 10
        let t1 = t0 + 60 * MIN;
        st.seeding_since = Some(t1);
        st.last_upload = (5, t1);
        assert_eq!(st.inactive(t1 + 5 * MIN), 15 * MIN);
        // an upload: from 0 again
        st.last_upload = (6, t1 + 5 * MIN);
        st.inactive_before = 0;
        assert_eq!(st.inactive(t1 + 7 * MIN), 2 * MIN);
    }

    #[test]
    fn time_limits_are_reached_by_driving_the_clock_and_the_timer_aims_at_the_first() {
        let g = global(-1.0, 7 * 24 * 60, 30);
        let e = effective(ShareLimits::default(), &g);
        let t0 = Instant::now();
        let mut st = GoalState {
            seeded_before: 6 * 24 * 3600, // six days in earlier runs
            seeding_since: Some(t0),
            ..GoalState::default()
        };
        st.last_upload = (100, t0);
        let standing = |now: Instant, st: &GoalState| Standing {
            ratio: Some(0.1),
            seeded: st.seeded(now),
            inactive: now.saturating_duration_since(st.last_upload.1),
        };
        // uploads keep it active: only the seeding time can end it, a day from t0
        let mut now = t0;
        for _ in 0..(24 * 60 / 20) {
            now += 20 * MIN;
            st.last_upload = (st.last_upload.0 + 1, now);
            let s = standing(now, &st);
            if s.seeded >= 7 * 24 * 60 * MIN {
                assert_eq!(reached(&e, &s), Some(Reached::Seeded(7 * 24 * 60 * MIN)));
                assert_eq!(
                    Reached::Seeded(7 * 24 * 60 * MIN).describe(),
                    "seeded 7d 0h reached"
                );
                break;
            }
            assert_eq!(reached(&e, &s), None, "at {:?}", now - t0);
            let due = next_due(&e, &s).unwrap();
            let seeding_left = 7 * 24 * 60 * MIN - s.seeded;
            assert_eq!(due, seeding_left.min(30 * MIN), "the first limit to come");
        }
        assert_eq!(st.seeded(now), 7 * 24 * 60 * MIN);
        // no more uploads: 30 minutes later the inactivity limit is reached
        let mut st = GoalState {
            seeding_since: Some(t0),
            ..GoalState::default()
        };
        st.last_upload = (5, t0);
        let e = effective(limits(-1.0, -1, 30), &g);
        assert_eq!(next_due(&e, &standing(t0, &st)), Some(30 * MIN));
        assert_eq!(reached(&e, &standing(t0 + 29 * MIN, &st)), None);
        assert_eq!(
            reached(&e, &standing(t0 + 30 * MIN, &st)),
            Some(Reached::Inactive(30 * MIN))
        );
        // no time limit: no timer
        let e = effective(limits(3.0, -1, -1), &g);
        assert_eq!(next_due(&e, &standing(t0, &st)), None);
    }

    #[test]
    fn the_seeding_clock_adds_earlier_spells_to_the_current_one() {
        let t0 = Instant::now();
        let st = GoalState {
            seeded_before: 90,
            seeding_since: Some(t0),
            ..GoalState::default()
        };
        assert_eq!(
            st.seeded(t0 + Duration::from_secs(30)),
            Duration::from_secs(120)
        );
        let paused = GoalState {
            seeded_before: 90,
            ..GoalState::default()
        };
        assert_eq!(paused.seeded(t0 + MIN), Duration::from_secs(90));
        assert_eq!(
            Reached::Ratio(1.0).raise_hint(),
            "ratio goal reached: raise the goal to seed on"
        );
    }
}
