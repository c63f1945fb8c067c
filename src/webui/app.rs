//! `app/*` and `transfer/*` (qBittorrent's `AppController`, `TransferController`): the
//! version and identity, the preferences the tools read and set (real values from the
//! session: default save path, seeding goals, queueing, DHT), the session's transfer
//! figures and speed limits.
//!
//! Preferences map as follows: `max_ratio_enabled`/`max_ratio` ↔ `[seeding] ratio_limit`
//! (-1 when off), `max_seeding_time(_enabled)` and `max_inactive_seeding_time(_enabled)`
//! ↔ the time goals in minutes, `max_ratio_act` ↔ `[seeding] action` (0 stop, 1 remove,
//! 3 remove with the files; 2, qBittorrent's "super seeding", is `alt_upload`: it keeps
//! seeding), `queueing_enabled` and `max_active_*` ↔ `[queue]`, `dht` ↔ the DHT node,
//! `save_path` ↔ the default folder. A change holds for this run. Unknown keys are
//! ignored, as qBittorrent does.

use serde_json::{Map, Value, json};

use super::dispatch::{Api, ApiError, Reply};
use super::params::Params;
use crate::api::{GoalAction, SessionSettings, SettingsChange};

/// `max_ratio_act` of `a`.
fn ratio_act(a: GoalAction) -> i64 {
    match a {
        GoalAction::Stop => 0,
        GoalAction::Remove => 1,
        GoalAction::AltUpload => 2,
        GoalAction::RemoveWithData => 3,
    }
}

/// The `app/preferences` object of `s` (and the listen port).
pub fn preferences(s: &SessionSettings, listen_port: u16) -> Value {
    let limit = |v: i64| if v < 0 { -1 } else { v };
    json!({
        "save_path": s.download_dir.to_string_lossy(),
        "max_ratio_enabled": s.ratio_limit >= 0.0,
        "max_ratio": if s.ratio_limit >= 0.0 { s.ratio_limit } else { -1.0 },
        "max_seeding_time_enabled": s.seeding_time_limit >= 0,
        "max_seeding_time": limit(s.seeding_time_limit),
        "max_inactive_seeding_time_enabled": s.inactive_seeding_time_limit >= 0,
        "max_inactive_seeding_time": limit(s.inactive_seeding_time_limit),
        "max_ratio_act": ratio_act(s.goal_action),
        "queueing_enabled": s.queueing,
        "max_active_downloads": s.max_active_downloads,
        "max_active_uploads": s.max_active_uploads,
        "max_active_torrents": s.max_active_torrents,
        "dht": s.dht,
        "pex": s.pex,
        "lsd": s.lsd,
        "listen_port": listen_port,
        "auto_tmm_enabled": false,
    })
}

/// The change `app/setPreferences` asks for with `prefs` (a JSON object), given the
/// settings `now` (a limit switched on without its value keeps the old one, or none).
///
/// # Errors
/// `400` for a value of the wrong type or range.
pub fn change_of(
    prefs: &Map<String, Value>,
    now: &SessionSettings,
) -> Result<SettingsChange, ApiError> {
    let bad = |k: &str| ApiError::BadParams(format!("preference {k} has a wrong value"));
    let boolean = |k: &str| -> Result<Option<bool>, ApiError> {
        prefs
            .get(k)
            .map(|v| v.as_bool().ok_or_else(|| bad(k)))
            .transpose()
    };
    let int = |k: &str| -> Result<Option<i64>, ApiError> {
        prefs
            .get(k)
            .map(|v| v.as_i64().ok_or_else(|| bad(k)))
            .transpose()
    };
    let float = |k: &str| -> Result<Option<f64>, ApiError> {
        prefs
            .get(k)
            .map(|v| v.as_f64().ok_or_else(|| bad(k)))
            .transpose()
    };
    let mut c = SettingsChange::default();
    if let Some(v) = prefs.get("save_path") {
        let p = v.as_str().ok_or_else(|| bad("save_path"))?;
        if !p.trim().is_empty() {
            c.download_dir = Some(p.trim().into());
        }
    }
    // a limit and its switch: off is -1; on takes the value given (or keeps the one in
    // force); a value given while the switch stays off waits for nothing (no stored value)
    let ratio_on = boolean("max_ratio_enabled")?.unwrap_or(now.ratio_limit >= 0.0);
    c.ratio_limit = match (ratio_on, float("max_ratio")?) {
        (false, _) if prefs.contains_key("max_ratio_enabled") => Some(-1.0),
        (true, Some(r)) if r >= 0.0 => Some(r),
        (true, Some(_)) => Some(-1.0),
        _ => None,
    };
    let minutes = |on_key: &str, key: &str, cur: i64| -> Result<Option<i64>, ApiError> {
        let on = boolean(on_key)?.unwrap_or(cur >= 0);
        Ok(match (on, int(key)?) {
            (false, _) if prefs.contains_key(on_key) => Some(-1),
            (true, Some(m)) if m >= 0 => Some(m),
            (true, Some(_)) => Some(-1),
            _ => None,
        })
    };
    c.seeding_time_limit = minutes(
        "max_seeding_time_enabled",
        "max_seeding_time",
        now.seeding_time_limit,
    )?;
    c.inactive_seeding_time_limit = minutes(
        "max_inactive_seeding_time_enabled",
        "max_inactive_seeding_time",
        now.inactive_seeding_time_limit,
    )?;
    if let Some(a) = int("max_ratio_act")? {
        c.goal_action = Some(match a {
            0 => GoalAction::Stop,
            1 => GoalAction::Remove,
            2 => GoalAction::AltUpload,
            3 => GoalAction::RemoveWithData,
            _ => return Err(bad("max_ratio_act")),
        });
    }
    c.queueing = boolean("queueing_enabled")?;
    let count = |k: &str| -> Result<Option<i64>, ApiError> {
        Ok(int(k)?.map(|n| if n < 0 { -1 } else { n }))
    };
    c.max_active_downloads = count("max_active_downloads")?;
    c.max_active_uploads = count("max_active_uploads")?;
    c.max_active_torrents = count("max_active_torrents")?;
    c.dht = boolean("dht")?;
    Ok(c)
}

/// A rate limit as the API gives it: bytes/s, 0 for none.
fn limit(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Run `app/*` or `transfer/*` endpoint `name`.
pub async fn run(api: &Api, name: &str, p: &Params) -> Result<Reply, ApiError> {
    let snap = api.client.snapshot();
    let g = &snap.global;
    match name {
        "app/version" => Ok(Reply::Text(api.identity.clone())),
        "app/webapiVersion" => Ok(Reply::Text(super::WEBAPI_VERSION.into())),
        "app/defaultSavePath" => Ok(Reply::Text(
            g.settings.download_dir.to_string_lossy().into_owned(),
        )),
        "app/preferences" => Ok(Reply::Json(preferences(&g.settings, g.listen_port))),
        "app/setPreferences" => {
            let text = p.require("json")?;
            let value: Value = serde_json::from_str(text)
                .map_err(|e| ApiError::BadParams(format!("json is not JSON: {e}")))?;
            let Value::Object(prefs) = value else {
                return Err(ApiError::BadParams("json must be an object".into()));
            };
            let change = change_of(&prefs, &g.settings)?;
            if change.is_empty() {
                return Ok(Reply::Empty);
            }
            api.client
                .change_settings(change)
                .await?
                .map_err(ApiError::BadParams)?;
            // the answer comes after the snapshot shows it
            super::dispatch::settle(api).await;
            Ok(Reply::Empty)
        }
        "transfer/info" => Ok(Reply::Json(json!({
            "dl_info_speed": g.down_rate,
            "dl_info_data": g.downloaded,
            "up_info_speed": g.up_rate,
            "up_info_data": g.uploaded,
            "dl_rate_limit": g.down_limit,
            "up_rate_limit": g.up_limit,
            "dht_nodes": g.dht_nodes.unwrap_or(0),
            "connection_status": if g.listen_port > 0 { "connected" } else { "disconnected" },
        }))),
        "transfer/speedLimitsMode" => Ok(Reply::Text(u8::from(g.alt_speed).to_string())),
        "transfer/toggleSpeedLimitsMode" => {
            api.client.toggle_alt_speed().await?;
            super::dispatch::settle(api).await;
            Ok(Reply::Empty)
        }
        "transfer/setSpeedLimitsMode" => {
            let mode = p.require("mode")?;
            let on = match mode.trim() {
                "0" => false,
                "1" => true,
                _ => return Err(ApiError::BadParams("mode must be 0 or 1".into())),
            };
            api.client.set_alt_speed(on).await?;
            super::dispatch::settle(api).await;
            Ok(Reply::Empty)
        }
        "transfer/downloadLimit" => Ok(Reply::Text(g.down_limit.to_string())),
        "transfer/uploadLimit" => Ok(Reply::Text(g.up_limit.to_string())),
        "transfer/setDownloadLimit" | "transfer/setUploadLimit" => {
            let l = p
                .int("limit")
                .ok_or_else(|| ApiError::BadParams("limit must be a number".into()))?;
            let (down, up) = if name.ends_with("setDownloadLimit") {
                (limit(l), g.up_limit)
            } else {
                (g.down_limit, limit(l))
            };
            api.client.set_limits(down, up).await?;
            super::dispatch::settle(api).await;
            Ok(Reply::Empty)
        }
        _ => Err(ApiError::NotFound(String::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefs(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn preferences_show_the_settings() {
        let s = SessionSettings {
            download_dir: "/data".into(),
            ratio_limit: 2.0,
            seeding_time_limit: -1,
            queueing: true,
            dht: true,
            ..SessionSettings::default()
        };
        let p = preferences(&s, 6881);
        assert_eq!(p["save_path"], "/data");
        assert_eq!(p["max_ratio_enabled"], true);
        assert_eq!(p["max_ratio"], 2.0);
        assert_eq!(p["max_seeding_time_enabled"], false);
        assert_eq!(p["max_seeding_time"], -1);
        assert_eq!(p["max_ratio_act"], 0);
        assert_eq!(p["queueing_enabled"], true);
        assert_eq!(p["max_active_downloads"], 3);
        assert_eq!(p["dht"], true);
    }

    #[test]
    fn set_preferences_maps_switches_and_values() {
        let now = SessionSettings::default();
        let c = change_of(
            &prefs(
                json!({"max_ratio_enabled": true, "max_ratio": 1.5, "max_ratio_act": 3,
                "queueing_enabled": true, "max_active_downloads": 2, "dht": false,
                "save_path": "/srv/dl", "unknown_key": [1]}),
            ),
            &now,
        )
        .unwrap();
        assert_eq!(c.ratio_limit, Some(1.5));
        assert_eq!(c.goal_action, Some(GoalAction::RemoveWithData));
        assert_eq!(c.queueing, Some(true));
        assert_eq!(c.max_active_downloads, Some(2));
        assert_eq!(c.dht, Some(false));
        assert_eq!(
            c.download_dir.as_deref(),
            Some(std::path::Path::new("/srv/dl"))
        );
        assert_eq!(c.seeding_time_limit, None);
        // switched off: none
        let c = change_of(
            &prefs(json!({"max_seeding_time_enabled": false, "max_seeding_time": 60})),
            &now,
        )
        .unwrap();
        assert_eq!(c.seeding_time_limit, Some(-1));
        // a value while the switch is on (in force)
        let on = SessionSettings {
            seeding_time_limit: 30,
            ..SessionSettings::default()
        };
        let c = change_of(&prefs(json!({"max_seeding_time": 60})), &on).unwrap();
        assert_eq!(c.seeding_time_limit, Some(60));
        assert!(change_of(&prefs(json!({"dht": "yes"})), &now).is_err());
        assert!(change_of(&prefs(json!({"max_ratio_act": 9})), &now).is_err());
        assert!(change_of(&prefs(json!({})), &now).unwrap().is_empty());
    }
}
