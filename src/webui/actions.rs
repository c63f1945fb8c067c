//! The torrent commands of `torrents/*` (qBittorrent's `TorrentsController`), each on the
//! torrents `hashes` names (`|`-separated info hashes, or `all`; unknown ones are skipped,
//! as qBittorrent does): pause/resume (and 5.x's stop/start), delete, recheck, reannounce,
//! force start, queue moves (`409` while queueing is off), share limits, rate limits,
//! location, automatic management, file priorities, and the tracker edits of one torrent
//! (`hash`).

use serde_json::{Map, Value};

use super::dispatch::{Api, ApiError, Reply, settle};
use super::info::{find, select};
use super::params::Params;
use crate::api::{
    Command, FilePriority, QueueMove, ShareLimits, TorrentId, TorrentRow, TrackerEdit,
    TrackerEditError, USE_GLOBAL,
};

/// The torrents of `hashes` (required).
fn targets(api: &Api, p: &Params) -> Result<Vec<TorrentRow>, ApiError> {
    p.require("hashes")?;
    let snap = api.client.snapshot();
    Ok(select(&snap, &p.list("hashes", '|'))
        .into_iter()
        .cloned()
        .collect())
}

fn ids(rows: &[TorrentRow]) -> Vec<TorrentId> {
    rows.iter().map(|r| r.id).collect()
}

/// The torrent of `hash` (required), `404` when unknown.
fn one(api: &Api, p: &Params) -> Result<TorrentRow, ApiError> {
    let hash = p.require("hash")?;
    find(&api.client.snapshot(), hash)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(String::new()))
}

/// A rate limit as given: bytes/s; 0 or less is none.
fn rate(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Run action `action` (`torrents/ACTION`).
pub async fn run(api: &Api, action: &str, p: &Params) -> Result<Reply, ApiError> {
    let c = &api.client;
    match action {
        "pause" | "stop" => {
            for r in targets(api, p)? {
                c.pause(r.id).await?;
            }
        }
        "resume" | "start" => {
            for r in targets(api, p)? {
                c.resume(r.id).await?;
            }
        }
        "delete" => {
            let rows = targets(api, p)?;
            let data = p.bool("deleteFiles").unwrap_or(false);
            for r in &rows {
                c.remove(r.id, data).await?;
            }
        }
        "recheck" => {
            for r in targets(api, p)? {
                c.recheck(r.id).await?;
            }
        }
        "reannounce" => {
            for r in targets(api, p)? {
                c.send(Command::Reannounce(r.id)).await?;
            }
        }
        "setForceStart" => {
            p.require("value")?;
            let forced = p.bool("value").unwrap_or(false);
            let ids = ids(&targets(api, p)?);
            c.send(Command::SetForceStart { ids, forced }).await?;
        }
        "topPrio" | "bottomPrio" | "increasePrio" | "decreasePrio" => {
            p.require("hashes")?;
            if !c.snapshot().global.queueing {
                return Err(ApiError::Conflict(
                    "Torrent queueing must be enabled".into(),
                ));
            }
            let to = match action {
                "topPrio" => QueueMove::Top,
                "bottomPrio" => QueueMove::Bottom,
                "increasePrio" => QueueMove::Up,
                _ => QueueMove::Down,
            };
            let ids = ids(&targets(api, p)?);
            c.send(Command::QueueMove { ids, to }).await?;
        }
        "setShareLimits" => {
            let rows = targets(api, p)?;
            // qBittorrent 4.6 wants all three; tools send two of them (Sonarr: the ratio
            // and one time): a missing one is "use the default" (-2), as qBittorrent 5
            let limits = ShareLimits {
                ratio: p.float("ratioLimit").unwrap_or(USE_GLOBAL as f64),
                seeding_minutes: p.int("seedingTimeLimit").unwrap_or(USE_GLOBAL),
                inactive_minutes: p.int("inactiveSeedingTimeLimit").unwrap_or(USE_GLOBAL),
            };
            c.set_share_limits(ids(&rows), limits).await?;
        }
        "uploadLimit" | "downloadLimit" => {
            p.require("hashes")?;
            let snap = c.snapshot();
            let mut map = Map::new();
            for h in p.list("hashes", '|') {
                let limit = find(&snap, &h).map_or(-1, |r| {
                    let v = if action == "uploadLimit" {
                        r.up_limit
                    } else {
                        r.down_limit
                    };
                    if v == 0 { -1 } else { v as i64 }
                });
                map.insert(h, Value::from(limit));
            }
            return Ok(Reply::Json(Value::Object(map)));
        }
        "setUploadLimit" | "setDownloadLimit" => {
            let limit = p
                .require("limit")?
                .trim()
                .parse::<i64>()
                .map_err(|_| ApiError::BadParams("limit must be a number".into()))?;
            for r in targets(api, p)? {
                let (down, up) = if action == "setUploadLimit" {
                    (r.down_limit, rate(limit))
                } else {
                    (rate(limit), r.up_limit)
                };
                c.set_torrent_limits(r.id, down, up).await?;
            }
        }
        "setLocation" => {
            let location = p.require("location")?.trim().to_owned();
            if location.is_empty() {
                return Err(ApiError::BadParams("Save path cannot be empty".into()));
            }
            let rows = targets(api, p)?;
            let to = std::path::PathBuf::from(&location);
            if !to.is_absolute() {
                return Err(ApiError::BadParams(
                    "the location must be an absolute folder".into(),
                ));
            }
            if tokio::fs::create_dir_all(&to).await.is_err() {
                return Err(ApiError::Conflict("Cannot make save path".into()));
            }
            let ids = ids(&rows);
            // qBittorrent's setLocation turns automatic management off and moves the data
            c.send(Command::SetAutoManaged {
                ids: ids.clone(),
                on: false,
            })
            .await?;
            for id in ids {
                c.move_storage(id, to.clone(), true).await?;
            }
        }
        "setSavePath" => {
            // qBittorrent's setSavePath: `id` (hashes) and `path`; torrents with automatic
            // management keep theirs; the data moves
            let path = p.require("path")?.trim().to_owned();
            p.require("id")?;
            let to = std::path::PathBuf::from(&path);
            if path.is_empty() || !to.is_absolute() {
                return Err(ApiError::BadParams(
                    "Save path must be an absolute folder".into(),
                ));
            }
            if tokio::fs::create_dir_all(&to).await.is_err() {
                return Err(ApiError::Conflict("Cannot create target directory".into()));
            }
            let snap = c.snapshot();
            for r in select(&snap, &p.list("id", '|')) {
                if !r.auto_managed {
                    c.move_storage(r.id, to.clone(), true).await?;
                }
            }
        }
        "addPeers" => {
            // `hashes`, `peers` (`|`-separated `IP:PORT`, IPv6 as `[::1]:6881`)
            p.require("peers")?;
            let peers: Vec<std::net::SocketAddr> = p
                .list("peers", '|')
                .iter()
                .filter_map(|a| a.parse().ok())
                .collect();
            if peers.is_empty() {
                return Err(ApiError::BadParams("No valid peers were specified".into()));
            }
            let mut results = Map::new();
            for r in targets(api, p)? {
                for addr in &peers {
                    c.add_peer(r.id, *addr).await?;
                }
                results.insert(
                    r.info_hash.clone(),
                    serde_json::json!({"added": peers.len(), "failed": 0}),
                );
            }
            settle(api).await;
            return Ok(Reply::Json(Value::Object(results)));
        }
        "rename" => {
            // `hash`, `name`: one line (breaks become spaces), not blank, at most 1024 bytes
            let r = one(api, p)?;
            let name = p.require("name")?.trim().replace(['\r', '\n'], " ");
            if name.is_empty() || name.len() > 1024 {
                return Err(ApiError::Conflict("Incorrect torrent name".into()));
            }
            let name = crate::untrusted::line(&name).into_owned();
            c.send(Command::Rename {
                id: r.id,
                name: Some(name),
            })
            .await?;
        }
        "toggleSequentialDownload" | "toggleFirstLastPiecePrio" => {
            // each torrent flips its own (qBittorrent toggles per torrent)
            let seq = action == "toggleSequentialDownload";
            for r in targets(api, p)? {
                let on = !if seq { r.sequential } else { r.first_last };
                if seq {
                    c.set_sequential(vec![r.id], on).await?;
                } else {
                    c.set_first_last_piece_prio(vec![r.id], on).await?;
                }
            }
        }
        "setAutoManagement" => {
            p.require("enable")?;
            let on = p.bool("enable").unwrap_or(false);
            let ids = ids(&targets(api, p)?);
            c.send(Command::SetAutoManaged { ids, on }).await?;
        }
        "filePrio" => file_priority(api, p).await?,
        "editTracker" | "addTrackers" | "removeTrackers" => trackers(api, action, p).await?,
        _ => return Err(ApiError::NotFound(String::new())),
    }
    settle(api).await;
    Ok(Reply::Empty)
}

/// `torrents/filePrio`: `hash`, `id` (`|`-separated file indices), `priority` (0 skip,
/// 1 normal, 6 high, 7 maximal: high).
async fn file_priority(api: &Api, p: &Params) -> Result<(), ApiError> {
    let r = one(api, p)?;
    let priority = match p.require("priority")?.trim().parse::<i64>() {
        Ok(0) => FilePriority::Skip,
        Ok(1) => FilePriority::Normal,
        Ok(6 | 7) => FilePriority::High,
        Ok(_) => return Err(ApiError::BadParams("Priority is not valid".into())),
        Err(_) => return Err(ApiError::BadParams("Priority must be an integer".into())),
    };
    if !r.size_known() {
        return Err(ApiError::Conflict(
            "Torrent's metadata has not yet downloaded".into(),
        ));
    }
    let detail = api
        .client
        .detail(r.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(String::new()))?;
    let mut files = Vec::new();
    for id in p.require("id")?.split('|') {
        let i: usize = id
            .trim()
            .parse()
            .map_err(|_| ApiError::BadParams("File IDs must be integers".into()))?;
        if i >= detail.files.len() {
            return Err(ApiError::Conflict("File ID is not valid".into()));
        }
        files.push(i);
    }
    api.client.set_file_priority(r.id, files, priority).await?;
    Ok(())
}

/// `torrents/editTracker` (`hash`, `origUrl`, `newUrl`), `addTrackers` (`hash`, `urls`
/// one per line), `removeTrackers` (`hash`, `urls` `|`-separated).
async fn trackers(api: &Api, action: &str, p: &Params) -> Result<(), ApiError> {
    let r = one(api, p)?;
    let edit = match action {
        "editTracker" => {
            let old = p.require("origUrl")?.trim().to_owned();
            let new = p.require("newUrl")?.trim().to_owned();
            if old == new {
                return Ok(());
            }
            TrackerEdit::Edit { old, new }
        }
        "addTrackers" => {
            p.require("urls")?;
            TrackerEdit::Add(p.list("urls", '\n'))
        }
        _ => {
            p.require("urls")?;
            TrackerEdit::Remove(p.list("urls", '|'))
        }
    };
    match api.client.edit_trackers(vec![r.id], edit, false).await? {
        Ok(_) => Ok(()),
        Err(TrackerEditError::NotFound(_)) if action == "removeTrackers" => Ok(()),
        Err(TrackerEditError::NotFound(_)) => Err(ApiError::Conflict("Tracker not found".into())),
        Err(TrackerEditError::Exists(_)) => {
            Err(ApiError::Conflict("New tracker URL already exists".into()))
        }
        Err(e @ TrackerEditError::InvalidUrl(..)) => Err(ApiError::BadParams(e.to_string())),
        Err(e) => Err(ApiError::Conflict(e.to_string())),
    }
}
