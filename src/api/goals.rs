//! Seeding goals (share limits, as qBittorrent has them): per torrent, a ratio, a seeding
//! time and an inactive seeding time after which the torrent stops seeding (or is removed,
//! per the `[seeding]` config table's `action`).

use serde::{Deserialize, Serialize};

/// What a torrent's row message ends with while a seeding goal holds its upload at the
/// alternative rate (`[seeding] action = "alt_upload"`), e.g. `ratio 2.00 reached: seeding
/// at the alternative rate`.
pub const GOAL_ALT_RATE: &str = "seeding at the alternative rate";

/// A per-torrent limit's value "use the session's (`[seeding]`) value" (qBittorrent's -2).
pub const USE_GLOBAL: i64 = -2;
/// A limit's value "no limit" (qBittorrent's -1).
pub const NO_LIMIT: i64 = -1;

/// One torrent's share limits, with qBittorrent's meanings for each field: -2 use the
/// session's value (the default), -1 no limit, 0 or more the limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShareLimits {
    /// Share ratio (uploaded over downloaded, see [`super::share_ratio`]) at which seeding
    /// stops: -2.0 use the session's, -1.0 none, >= 0.0 the ratio. Never NaN (the
    /// command and the record reader replace NaN by -2.0).
    pub ratio: f64,
    /// Minutes of seeding (time spent in the Seeding state, across restarts): -2, -1, or
    /// the limit in minutes.
    pub seeding_minutes: i64,
    /// Minutes of seeding with no payload byte uploaded: -2, -1, or the limit in minutes.
    pub inactive_minutes: i64,
}

impl Default for ShareLimits {
    /// Every limit "use the session's value".
    fn default() -> Self {
        ShareLimits {
            ratio: USE_GLOBAL as f64,
            seeding_minutes: USE_GLOBAL,
            inactive_minutes: USE_GLOBAL,
        }
    }
}

impl ShareLimits {
    /// The same limits with anything out of range mapped to a meaning: NaN or a ratio
    /// below -1.5 is "use the session's" (-2), between -1.5 and 0 "none" (-1); minutes
    /// below -2 are "use the session's".
    pub fn sanitized(self) -> ShareLimits {
        let ratio = if self.ratio.is_nan() || self.ratio < -1.5 {
            USE_GLOBAL as f64
        } else if self.ratio < 0.0 {
            NO_LIMIT as f64
        } else {
            self.ratio
        };
        let minutes = |m: i64| if m < USE_GLOBAL { USE_GLOBAL } else { m };
        ShareLimits {
            ratio,
            seeding_minutes: minutes(self.seeding_minutes),
            inactive_minutes: minutes(self.inactive_minutes),
        }
    }
}

/// What the detail view shows of a torrent's goals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalView {
    /// The torrent's own limits (-2: the session's).
    pub limits: ShareLimits,
    /// The ratio limit in effect (the torrent's, or the session's for -2); `None`: none.
    pub ratio: Option<f64>,
    /// The seeding time limit in effect, minutes; `None`: none.
    pub seeding_minutes: Option<u64>,
    /// The inactive seeding time limit in effect, minutes; `None`: none.
    pub inactive_minutes: Option<u64>,
    /// Seconds spent seeding so far (across restarts).
    pub seeding_secs: u64,
}
