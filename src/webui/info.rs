//! `torrents/info`: the list of torrents as qBittorrent 4.6's `serialize_torrent.cpp`
//! gives it (the fields the tools read, with qBittorrent's names and units: bytes, bytes/s,
//! Unix seconds, minutes for the limits), its filters (`filter`, `category`, `tag`,
//! `hashes`), `sort`/`reverse` and `limit`/`offset`; and the qBittorrent 4.x state
//! strings.

use std::cmp::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::dispatch::{Api, ApiError, Reply};
use super::params::Params;
use crate::api::{Snapshot, TorrentErrorKind, TorrentRow, TorrentState, in_category};

/// qBittorrent's "no ETA" (100 days in seconds).
pub const MAX_ETA: u64 = 8_640_000;

/// qBittorrent's largest ratio shown; above it the ratio reads -1.
const MAX_RATIO: f64 = 9999.0;

/// Now, Unix seconds.
pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether every wanted byte is verified (qBittorrent's "finished").
pub fn finished(r: &TorrentRow) -> bool {
    r.size_known() && r.done >= r.size
}

/// The qBittorrent 4.x state string of `r` (`TorrentImpl::updateState`): `moving`,
/// `missingFiles`, `error`, `pausedDL`/`pausedUP`, `queuedDL`/`queuedUP`,
/// `checkingDL`/`checkingUP`, `metaDL`/`forcedMetaDL`, `forcedDL`/`forcedUP`,
/// `downloading`/`stalledDL` (by the download rate), `uploading`/`stalledUP`.
pub fn state(r: &TorrentRow) -> &'static str {
    let done = finished(r);
    match r.state {
        TorrentState::Moving => "moving",
        TorrentState::Error => match &r.error {
            Some(e) if e.kind == TorrentErrorKind::FilesMissing => "missingFiles",
            _ => "error",
        },
        TorrentState::Paused | TorrentState::Completed => {
            if done {
                "pausedUP"
            } else {
                "pausedDL"
            }
        }
        TorrentState::QueuedDownload => "queuedDL",
        TorrentState::QueuedSeed => "queuedUP",
        TorrentState::Checking | TorrentState::Queued => {
            if r.completed_at.is_some() || done {
                "checkingUP"
            } else {
                "checkingDL"
            }
        }
        TorrentState::FetchingMetadata => {
            if r.forced {
                "forcedMetaDL"
            } else {
                "metaDL"
            }
        }
        TorrentState::Downloading => {
            if r.forced {
                "forcedDL"
            } else if r.down_rate > 0 {
                "downloading"
            } else {
                "stalledDL"
            }
        }
        TorrentState::Seeding => {
            if r.forced {
                "forcedUP"
            } else if r.up_rate > 0 {
                "uploading"
            } else {
                "stalledUP"
            }
        }
    }
}

/// The torrent whose info hash is `hash` (40 hex digits, either case), in `snap`.
pub fn find<'a>(snap: &'a Snapshot, hash: &str) -> Option<&'a TorrentRow> {
    let hash = hash.trim();
    snap.rows
        .iter()
        .map(|r| &**r)
        .find(|r| r.info_hash.eq_ignore_ascii_case(hash))
}

/// The torrents `hashes` names (`all`: every one), in list order.
pub fn select<'a>(snap: &'a Snapshot, hashes: &[String]) -> Vec<&'a TorrentRow> {
    if hashes.len() == 1 && hashes[0] == "all" {
        return snap.rows.iter().map(|r| &**r).collect();
    }
    snap.rows
        .iter()
        .map(|r| &**r)
        .filter(|r| hashes.iter().any(|h| r.info_hash.eq_ignore_ascii_case(h)))
        .collect()
}

/// A rate limit as `torrents/info` lists it: bytes/s, 0 for none (as qBittorrent's list;
/// `torrents/properties` says -1 for none).
fn rate_limit(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The magnet link of `r` (`xt` and `dn`).
fn magnet(r: &TorrentRow) -> String {
    let name: String = form_urlencoded::byte_serialize(r.name.as_bytes()).collect();
    format!("magnet:?xt=urn:btih:{}&dn={name}", r.info_hash)
}

/// One torrent as `torrents/info` lists it, at `now` (Unix seconds).
pub fn serialize(r: &TorrentRow, now: u64) -> Value {
    let left = r.size.saturating_sub(r.done);
    let ratio = match r.ratio() {
        Some(x) if x > MAX_RATIO => -1.0,
        Some(x) => x,
        None => 0.0,
    };
    let eta = match (r.state, r.eta_secs) {
        (TorrentState::Downloading, Some(s)) => s.min(MAX_ETA),
        _ => MAX_ETA,
    };
    let leechers = r.peers.saturating_sub(r.seeds);
    let limits = r.share_limits;
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let mut v = json!({
        "hash": r.info_hash,
        "infohash_v1": r.info_hash,
        "infohash_v2": r.info_hash_v2.clone().unwrap_or_default(),
        "name": r.name,
        "magnet_uri": magnet(r),
        "size": r.size,
        // -1 while the metadata is not known, as qBittorrent
        "total_size": if r.size_known() { r.total_size as i64 } else { -1 },
        "progress": r.progress(),
        "dlspeed": r.down_rate,
        "upspeed": r.up_rate,
        "priority": r.queue_pos,
        "num_seeds": r.seeds,
        "num_complete": r.swarm_seeds.unwrap_or(r.seeds),
        "num_leechs": leechers,
        "num_incomplete": r.swarm_leechers.unwrap_or(leechers),
        "ratio": ratio,
        "eta": eta,
        "state": state(r),
    });
    let more = json!({
        "seq_dl": r.sequential,
        "f_l_piece_prio": r.first_last,
        "category": r.category,
        "tags": r.tags.join(", "),
        "super_seeding": false,
        "force_start": r.forced,
        "save_path": path(&r.save_path),
        "download_path": "",
        "content_path": r.content_path.as_deref().map(path).unwrap_or_default(),
        "added_on": r.added_at,
        // qBittorrent's "never completed" in the list is 0 (seen from qbittorrent-nox)
        "completion_on": r.completed_at.unwrap_or(0),
        "tracker": r.tracker,
        "dl_limit": rate_limit(r.down_limit),
        "up_limit": rate_limit(r.up_limit),
        "downloaded": r.downloaded,
        "uploaded": r.uploaded,
        "amount_left": left,
        "completed": r.done,
        "ratio_limit": limits.ratio,
        "seeding_time_limit": limits.seeding_minutes,
        "inactive_seeding_time_limit": limits.inactive_minutes,
        "seeding_time": r.seeding_secs(now),
        "last_activity": r.last_activity,
        "auto_tmm": r.auto_managed,
    });
    if let (Value::Object(a), Value::Object(b)) = (&mut v, more) {
        a.extend(b);
    }
    v
}

/// Whether `r` passes qBittorrent's state filter `filter` (unknown names: all).
pub fn state_filter(r: &TorrentRow, filter: &str) -> bool {
    let s = state(r);
    let downloading = matches!(
        s,
        "downloading"
            | "metaDL"
            | "forcedMetaDL"
            | "stalledDL"
            | "checkingDL"
            | "pausedDL"
            | "queuedDL"
            | "forcedDL"
    );
    let uploading = matches!(
        s,
        "uploading" | "stalledUP" | "checkingUP" | "queuedUP" | "forcedUP"
    );
    let paused = matches!(s, "pausedDL" | "pausedUP");
    let active = r.down_rate > 0 || r.up_rate > 0 || matches!(s, "moving");
    match filter {
        "downloading" => downloading,
        "seeding" => uploading,
        "completed" => uploading || s == "pausedUP",
        "paused" | "stopped" => paused,
        "resumed" | "running" => !paused,
        "active" => active,
        "inactive" => !active,
        "stalled" => matches!(s, "stalledUP" | "stalledDL"),
        "stalled_uploading" => s == "stalledUP",
        "stalled_downloading" => s == "stalledDL",
        "checking" => matches!(s, "checkingUP" | "checkingDL"),
        "moving" => s == "moving",
        "errored" => matches!(s, "error" | "missingFiles"),
        _ => true,
    }
}

/// Compare two JSON values of one column (numbers as numbers, texts as texts, false
/// before true).
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .unwrap_or(0.0)
            .partial_cmp(&y.as_f64().unwrap_or(0.0))
            .unwrap_or(Ordering::Equal),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

/// `torrents/info`.
///
/// # Errors
/// `400` for a `sort` column that does not exist (qBittorrent's "'sort' parameter is
/// invalid").
pub fn info(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let snap = api.client.snapshot();
    let filter = p.text("filter");
    let category = p.get("category");
    let tag = p.get("tag");
    let hashes = p.list("hashes", '|');
    let now = now_unix();
    let mut list: Vec<Map<String, Value>> = snap
        .rows
        .iter()
        .map(|r| &**r)
        .filter(|r| state_filter(r, filter))
        .filter(|r| hashes.is_empty() || hashes.iter().any(|h| r.info_hash.eq_ignore_ascii_case(h)))
        .filter(|r| match category {
            None => true,
            Some("") => r.category.is_empty(),
            Some(c) => !r.category.is_empty() && in_category(&r.category, c),
        })
        .filter(|r| match tag {
            None => true,
            Some("") => r.tags.is_empty(),
            Some(t) => r.tags.iter().any(|x| x == t.trim()),
        })
        .map(|r| match serialize(r, now) {
            Value::Object(m) => m,
            _ => Map::new(),
        })
        .collect();
    let sort = p.text("sort");
    if !sort.is_empty() && !list.is_empty() {
        if !list[0].contains_key(sort) {
            return Err(ApiError::BadParams("'sort' parameter is invalid".into()));
        }
        let reverse = p.bool("reverse").unwrap_or(false);
        list.sort_by(|a, b| {
            let o = compare(&a[sort], &b[sort]);
            if reverse { o.reverse() } else { o }
        });
    }
    let size = list.len() as i64;
    let mut offset = p.int("offset").unwrap_or(0);
    if offset < 0 {
        offset += size;
    }
    if offset >= size || offset < 0 {
        offset = 0;
    }
    let limit = p.int("limit").filter(|l| *l > 0);
    let list: Vec<Value> = list
        .into_iter()
        .skip(offset as usize)
        .take(limit.map_or(usize::MAX, |l| l as usize))
        .map(Value::Object)
        .collect();
    Ok(Reply::Json(Value::Array(list)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{TorrentError, TorrentId};

    fn row(state: TorrentState) -> TorrentRow {
        TorrentRow {
            id: TorrentId(1),
            name: "show s01".into(),
            info_hash: "ab".repeat(20),
            size: 1000,
            total_size: 1500,
            done: 250,
            pieces_total: 4,
            pieces_have: 1,
            state,
            save_path: "/data/tv".into(),
            content_path: Some("/data/tv/show s01".into()),
            added_at: 1_700_000_000,
            last_activity: 1_700_000_100,
            ..TorrentRow::default()
        }
    }

    #[test]
    fn states_follow_qbittorrent_4() {
        let mut r = row(TorrentState::Downloading);
        assert_eq!(state(&r), "stalledDL");
        r.down_rate = 5;
        assert_eq!(state(&r), "downloading");
        r.forced = true;
        assert_eq!(state(&r), "forcedDL");
        assert_eq!(state(&row(TorrentState::Paused)), "pausedDL");
        let mut done = row(TorrentState::Paused);
        done.done = 1000;
        assert_eq!(state(&done), "pausedUP");
        done.state = TorrentState::Completed;
        assert_eq!(state(&done), "pausedUP");
        done.state = TorrentState::Seeding;
        assert_eq!(state(&done), "stalledUP");
        done.up_rate = 1;
        assert_eq!(state(&done), "uploading");
        done.state = TorrentState::Checking;
        assert_eq!(state(&done), "checkingUP");
        assert_eq!(state(&row(TorrentState::Checking)), "checkingDL");
        assert_eq!(state(&row(TorrentState::QueuedDownload)), "queuedDL");
        assert_eq!(state(&row(TorrentState::QueuedSeed)), "queuedUP");
        assert_eq!(state(&row(TorrentState::FetchingMetadata)), "metaDL");
        assert_eq!(state(&row(TorrentState::Moving)), "moving");
        let mut e = row(TorrentState::Error);
        assert_eq!(state(&e), "error");
        e.error = Some(TorrentError {
            kind: TorrentErrorKind::FilesMissing,
            message: "gone".into(),
        });
        assert_eq!(state(&e), "missingFiles");
    }

    #[test]
    fn the_fields_the_tools_read() {
        let r = row(TorrentState::Downloading);
        let v = serialize(&r, 1_700_000_200);
        assert_eq!(v["hash"], "ab".repeat(20));
        assert_eq!(v["size"], 1000);
        assert_eq!(v["total_size"], 1500);
        assert_eq!(v["progress"], 0.25);
        assert_eq!(v["amount_left"], 750);
        assert_eq!(v["eta"], MAX_ETA);
        assert_eq!(v["state"], "stalledDL");
        assert_eq!(v["save_path"], "/data/tv");
        assert_eq!(v["content_path"], "/data/tv/show s01");
        assert_eq!(v["ratio_limit"], -2.0);
        assert_eq!(v["seeding_time_limit"], -2);
        assert_eq!(v["completion_on"], 0);
        assert_eq!(v["added_on"], 1_700_000_000);
        assert_eq!(v["last_activity"], 1_700_000_100);
        assert_eq!(v["tags"], "");
        assert_eq!(v["auto_tmm"], false);
        assert!(v["magnet_uri"].as_str().unwrap().contains("dn=show+s01"));
        let mut seeding = row(TorrentState::Seeding);
        seeding.seeded_secs = 100;
        seeding.seeding_since = Some(1_700_000_150);
        assert_eq!(serialize(&seeding, 1_700_000_200)["seeding_time"], 150);
    }

    #[test]
    fn filters() {
        let dl = row(TorrentState::Downloading);
        let mut up = row(TorrentState::Seeding);
        up.done = 1000;
        assert!(state_filter(&dl, "downloading") && !state_filter(&dl, "seeding"));
        assert!(state_filter(&up, "seeding") && state_filter(&up, "completed"));
        assert!(state_filter(&dl, "stalled_downloading"));
        assert!(state_filter(&dl, "resumed") && !state_filter(&dl, "paused"));
        assert!(state_filter(&dl, "all") && state_filter(&dl, ""));
    }
}
