//! `torrents/add` (qBittorrent's `TorrentsController::addAction`): `urls` (one per line:
//! magnet links, http(s) links to .torrent files, bare info hashes) and `torrents` (uploaded
//! .torrent files), with `savepath`, `category`, `tags`, `paused`/`stopped`, `autoTMM`,
//! `ratioLimit`, `seedingTimeLimit`, `inactiveSeedingTimeLimit`, `upLimit`, `dlLimit`,
//! `rename`, `contentLayout`, `skip_checking`, `sequentialDownload` and
//! `firstLastPiecePrio` (see [`apply_piece_options`]).
//!
//! The answer is `Ok.` when at least one torrent was added and `Fails.` otherwise (a
//! torrent already in the session is not added again: qBittorrent's answer), and it comes
//! once the new torrents are listed by `torrents/info` and `torrents/properties` (their
//! row is in the snapshot, limits applied): a tool may ask for them at once. An uploaded
//! file that is not a torrent answers `415`, as qBittorrent.

use std::path::{Path, PathBuf};

use super::dispatch::{Api, ApiError, Reply, settle};
use super::params::Params;
use crate::api::{
    AddError, AddRequest, AddSource, ClientError, ShareLimits, TorrentBytes, TorrentId,
};

/// The piece options of an add (`skip_checking`, `sequentialDownload`,
/// `firstLastPiecePrio`), as given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PieceOptions {
    /// Take the data on disk as complete without a hash check (cross-seeding).
    pub skip_checking: bool,
    /// Download pieces in order.
    pub sequential: bool,
    /// First and last piece of each file first.
    pub first_last: bool,
}

/// The piece options onto the add: `skip_checking` is [`AddRequest::skip_check`] (no
/// check; each piece hashed before it is first sent), `sequentialDownload`
/// [`AddRequest::sequential`], `firstLastPiecePrio` [`AddRequest::first_last`].
pub fn apply_piece_options(req: AddRequest, o: PieceOptions) -> AddRequest {
    req.skip_check(o.skip_checking)
        .sequential(o.sequential)
        .first_last(o.first_last)
}

/// What one line of `urls` names.
fn source_of(line: &str) -> Option<AddSource> {
    let line = line.trim();
    if crate::metainfo::magnet::is_magnet(line) {
        return Some(AddSource::Magnet(line.to_owned()));
    }
    if crate::net::is_url(line) {
        return Some(AddSource::Url(line.to_owned()));
    }
    // a bare info hash (40 hex digits or 32 base32 characters), as qBittorrent takes it
    let bare = (line.len() == 40 && line.bytes().all(|b| b.is_ascii_hexdigit()))
        || (line.len() == 32
            && data_encoding::BASE32_NOPAD
                .decode(line.to_ascii_uppercase().as_bytes())
                .is_ok());
    bare.then(|| AddSource::Magnet(format!("magnet:?xt=urn:btih:{line}")))
}

/// A save path as given, relative ones under the session's default folder.
fn save_dir(given: &str, default: &Path) -> Option<PathBuf> {
    let given = given.trim();
    if given.is_empty() {
        return None;
    }
    let p = PathBuf::from(given);
    Some(if p.is_absolute() { p } else { default.join(p) })
}

/// `torrents/add`.
pub async fn add(api: &Api, p: &Params) -> Result<Reply, ApiError> {
    let layout = p.text("contentLayout").trim();
    if !layout.is_empty() && !layout.eq_ignore_ascii_case("Original") {
        return Err(ApiError::Conflict(format!(
            "contentLayout {layout} is not supported: ratorrent keeps each torrent's own \
             layout (use Original)"
        )));
    }
    let snap = api.client.snapshot();
    let default_dir = snap.global.settings.download_dir.clone();
    let paused = p.bool("stopped").or(p.bool("paused")).unwrap_or(false);
    let category = p.text("category").to_owned();
    let tags = p.list("tags", ',');
    let download_dir = save_dir(p.text("savepath"), &default_dir);
    let auto_managed = p.bool("autoTMM");
    let options = PieceOptions {
        skip_checking: p.bool("skip_checking").unwrap_or(false),
        sequential: p.bool("sequentialDownload").unwrap_or(false),
        first_last: p.bool("firstLastPiecePrio").unwrap_or(false),
    };
    let given = |k: &str| p.get(k).is_some_and(|v| !v.trim().is_empty());
    let limits =
        (given("ratioLimit") || given("seedingTimeLimit") || given("inactiveSeedingTimeLimit"))
            .then(|| {
                ShareLimits {
                    ratio: p
                        .float("ratioLimit")
                        .unwrap_or(crate::api::USE_GLOBAL as f64),
                    seeding_minutes: p.int("seedingTimeLimit").unwrap_or(crate::api::USE_GLOBAL),
                    inactive_minutes: p
                        .int("inactiveSeedingTimeLimit")
                        .unwrap_or(crate::api::USE_GLOBAL),
                }
                .sanitized()
            });
    let rename = Some(p.text("rename").trim().replace(['\r', '\n'], " "))
        .filter(|n| !n.is_empty() && n.len() <= 1024)
        .map(|n| crate::untrusted::line(&n).into_owned());
    let rate = |k: &str| p.int(k).map_or(0, |v| u64::try_from(v).unwrap_or(0));
    let (up, down) = (rate("upLimit"), rate("dlLimit"));

    let mut sources: Vec<(AddSource, bool)> = Vec::new();
    for line in p.text("urls").split('\n') {
        if line.trim().is_empty() {
            continue;
        }
        match source_of(line) {
            Some(s) => sources.push((s, false)),
            None => tracing::info!(
                "add: not a magnet link, URL or info hash: {}",
                crate::net::mask_passkey(line.trim())
            ),
        }
    }
    for f in &p.files {
        let source = AddSource::Data {
            name: crate::untrusted::line(&f.name).into_owned(),
            bytes: TorrentBytes(f.bytes.to_vec().into()),
        };
        sources.push((source, true));
    }

    let mut added: Vec<TorrentId> = Vec::new();
    for (source, uploaded) in sources {
        let req = AddRequest::new(source)
            .download_dir(download_dir.clone())
            .paused(paused)
            .category(category.clone())
            .tags(tags.clone())
            .auto_managed(auto_managed);
        let req = apply_piece_options(req, options);
        match api.client.add(req).await {
            Ok(id) => added.push(id),
            Err(ClientError::Refused(AddError::Invalid(why))) if uploaded => {
                return Err(ApiError::BadData(format!("Error: {why}")));
            }
            Err(ClientError::Refused(e)) => {
                tracing::info!("add refused: {e}");
            }
            Err(e) => return Err(e.into()),
        }
    }
    if added.is_empty() {
        return Ok(Reply::Text("Fails.".into()));
    }
    if let Some(limits) = limits {
        api.client.set_share_limits(added.clone(), limits).await?;
    }
    if up > 0 || down > 0 {
        for id in &added {
            api.client.set_torrent_limits(*id, down, up).await?;
        }
    }
    if let Some(name) = rename {
        for id in &added {
            api.client
                .send(crate::api::Command::Rename {
                    id: *id,
                    name: Some(name.clone()),
                })
                .await?;
        }
    }
    // answered once torrents/info lists them, limits applied
    settle(api).await;
    Ok(Reply::Text("Ok.".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_urls() {
        let h = "0123456789abcdef0123456789abcdef01234567";
        assert!(matches!(
            source_of(&format!("magnet:?xt=urn:btih:{h}")),
            Some(AddSource::Magnet(_))
        ));
        assert!(matches!(
            source_of("https://t.example/dl/1.torrent?passkey=x"),
            Some(AddSource::Url(_))
        ));
        assert_eq!(
            source_of(h),
            Some(AddSource::Magnet(format!("magnet:?xt=urn:btih:{h}")))
        );
        assert_eq!(source_of("not a link"), None);
        assert_eq!(source_of(""), None);
    }

    #[test]
    fn save_paths() {
        let d = Path::new("/dl");
        assert_eq!(save_dir("  ", d), None);
        assert_eq!(save_dir("/data/tv", d), Some(PathBuf::from("/data/tv")));
        assert_eq!(save_dir("tv", d), Some(PathBuf::from("/dl/tv")));
    }
}
