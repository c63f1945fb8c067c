//! `torrents/properties`, `torrents/files` and `torrents/trackers` of one torrent (`hash`):
//! its row from the snapshot and its detail built once for the request
//! ([`Client::detail`](crate::api::Client::detail), the TUI's focus untouched). The
//! trackers list starts with qBittorrent's `** [DHT] **`, `** [PeX] **` and `** [LSD] **`
//! rows (status 2 "working" while the source is on for the torrent, 0 "disabled"
//! otherwise, always 0 for a private torrent, with the seeds and leechers connected from
//! each). An unknown hash answers `404`.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::dispatch::{Api, ApiError, Reply};
use super::info::{MAX_ETA, find, finished, now_unix};
use super::params::Params;
use crate::api::{FilePriority, PeerSource, TorrentDetail, TorrentRow, TrackerStatus};

/// The row and detail of the torrent `hash` names.
async fn row_and_detail(api: &Api, p: &Params) -> Result<(TorrentRow, TorrentDetail), ApiError> {
    let hash = p.require("hash")?;
    let snap = api.client.snapshot();
    let row = find(&snap, hash)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(String::new()))?;
    let detail = api
        .client
        .detail(row.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(String::new()))?;
    Ok((row, *detail))
}

fn unix(t: Option<SystemTime>) -> Option<u64> {
    t?.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// `torrents/properties`.
pub async fn properties(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let (r, d) = row_and_detail(api, p).await?;
    let now = now_unix();
    let known = r.size_known();
    let reannounce = d
        .trackers
        .iter()
        .filter_map(|t| unix(t.next_announce))
        .min()
        .map_or(0, |at| at.saturating_sub(now));
    let limit = |v: u64| if v == 0 { -1 } else { v as i64 };
    let eta = match (r.state, r.eta_secs) {
        (crate::api::TorrentState::Downloading, Some(s)) => s.min(MAX_ETA),
        _ => MAX_ETA,
    };
    let leechers = r.peers.saturating_sub(r.seeds);
    let date = |v: Option<i64>| if known { v.unwrap_or(-1) } else { -1 };
    Ok(Reply::Json(json!({
        "hash": r.info_hash,
        "infohash_v1": r.info_hash,
        "infohash_v2": r.info_hash_v2.clone().unwrap_or_default(),
        "name": r.name,
        "save_path": r.save_path.to_string_lossy(),
        "download_path": "",
        "seeding_time": r.seeding_secs(now),
        "eta": eta,
        "nb_connections": r.peers,
        "total_downloaded": r.downloaded,
        "total_uploaded": r.uploaded,
        "dl_speed": r.down_rate,
        "up_speed": r.up_rate,
        "dl_limit": limit(r.down_limit),
        "up_limit": limit(r.up_limit),
        "total_wasted": d.wasted,
        "seeds": r.seeds,
        "seeds_total": r.swarm_seeds.unwrap_or(r.seeds),
        "peers": leechers,
        "peers_total": r.swarm_leechers.unwrap_or(leechers),
        "share_ratio": r.ratio().unwrap_or(0.0),
        "reannounce": reannounce,
        "total_size": r.total_size,
        "pieces_num": r.pieces_total,
        "piece_size": d.piece_length,
        "pieces_have": r.pieces_have,
        "created_by": d.created_by.clone().unwrap_or_default(),
        "comment": d.comment.clone().unwrap_or_default(),
        "is_private": d.private,
        "addition_date": r.added_at,
        "completion_date": date(r.completed_at.map(|t| t as i64)),
        "creation_date": date(d.creation_date),
        "last_seen": -1,
    })))
}

/// qBittorrent's file priority of `p` (0 skip, 1 normal, 6 high).
fn priority(p: FilePriority) -> u8 {
    match p {
        FilePriority::Skip => 0,
        FilePriority::Low | FilePriority::Normal => 1,
        FilePriority::High => 6,
    }
}

/// `torrents/files` (`indexes`: `|`-separated, else every file).
pub async fn files(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let (r, d) = row_and_detail(api, p).await?;
    let wanted: Vec<usize> = match p.get("indexes") {
        Some(list) => list
            .split('|')
            .map(|i| {
                let i: usize = i.trim().parse().map_err(|_| {
                    ApiError::Conflict(format!("\"{i}\" is not a valid file index."))
                })?;
                if i >= d.files.len() {
                    return Err(ApiError::Conflict(format!("Index {i} is out of bounds.")));
                }
                Ok(i)
            })
            .collect::<Result<_, _>>()?,
        None => (0..d.files.len()).collect(),
    };
    let seed = finished(&r);
    let list: Vec<Value> = wanted
        .into_iter()
        .map(|i| {
            let f = &d.files[i];
            let progress = if f.size == 0 {
                1.0
            } else {
                f.done as f64 / f.size as f64
            };
            // paths inside the torrent as qBittorrent gives them: the top folder of a
            // multi-file torrent first
            let name = if d.multi_file {
                format!("{}/{}", r.name, f.path)
            } else {
                f.path.clone()
            };
            let mut v = json!({
                "index": i,
                "name": name,
                "size": f.size,
                "progress": progress,
                "priority": priority(f.priority),
                "piece_range": [f.piece_range.0, f.piece_range.1],
                "availability": -1,
            });
            if i == 0 {
                v["is_seed"] = json!(seed);
            }
            v
        })
        .collect();
    Ok(Reply::Json(Value::Array(list)))
}

/// `torrents/webseeds`: the torrent's web seeds (BEP 19 `url-list`, a magnet's `ws`) as
/// qBittorrent lists them, `[{"url": ...}]` (passkeys masked, as everywhere ratorrent shows
/// a URL).
pub async fn webseeds(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let (_, d) = row_and_detail(api, p).await?;
    let list: Vec<Value> = d
        .web_seeds
        .iter()
        .map(|w| json!({ "url": w.url }))
        .collect();
    Ok(Reply::Json(Value::Array(list)))
}

/// `torrents/pieceStates`: one number per piece, 0 missing, 1 downloading, 2 verified.
pub async fn piece_states(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let (_, d) = row_and_detail(api, p).await?;
    let list: Vec<Value> = d
        .pieces
        .iter()
        .map(|s| {
            Value::from(match s {
                crate::api::PieceState::Missing => 0,
                crate::api::PieceState::Downloading => 1,
                crate::api::PieceState::Have => 2,
            })
        })
        .collect();
    Ok(Reply::Json(Value::Array(list)))
}

/// qBittorrent's tracker status of `s`: 0 disabled, 1 not contacted, 2 working, 3
/// updating, 4 not working.
fn tracker_status(s: TrackerStatus) -> u8 {
    match s {
        TrackerStatus::Idle => 1,
        TrackerStatus::Working => 2,
        TrackerStatus::Announcing => 3,
        TrackerStatus::Error => 4,
        TrackerStatus::Unsupported => 4,
    }
}

/// `torrents/trackers`.
pub async fn trackers(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let (_, d) = row_and_detail(api, p).await?;
    let settings = api.client.snapshot().global.settings.clone();
    let private = d.private;
    let msg = if private {
        "This torrent is private"
    } else {
        ""
    };
    let sticky = |url: &str, source: PeerSource, on: bool| {
        let (mut seeds, mut leeches) = (0, 0);
        for peer in d.peers.iter().filter(|x| x.source == source) {
            if peer.progress >= 1.0 {
                seeds += 1;
            } else {
                leeches += 1;
            }
        }
        json!({
            "url": url,
            "tier": -1,
            "msg": msg,
            "status": if on && !private { 2 } else { 0 },
            "num_peers": 0,
            "num_downloaded": 0,
            "num_seeds": seeds,
            "num_leeches": leeches,
        })
    };
    let mut list = vec![
        sticky("** [DHT] **", PeerSource::Dht, settings.dht),
        sticky("** [PeX] **", PeerSource::Pex, settings.pex),
        sticky("** [LSD] **", PeerSource::Lsd, settings.lsd),
    ];
    let count = |v: Option<u32>| v.map_or(-1, i64::from);
    for t in &d.trackers {
        list.push(json!({
            "url": t.announce_url,
            "tier": t.tier,
            "status": tracker_status(t.status),
            "msg": t.message.clone().unwrap_or_default(),
            "num_peers": t.peers,
            "num_seeds": count(t.seeds),
            "num_leeches": count(t.leechers),
            "num_downloaded": count(t.downloaded),
        }));
    }
    Ok(Reply::Json(Value::Array(list)))
}
