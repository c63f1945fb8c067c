//! Which endpoints exist and how a request reaches one, as qBittorrent's
//! `WebApplication::doProcessRequest`: a request without a session answers `403` (every
//! endpoint but `auth/login`, whether it exists or not: never `401`); then an endpoint we
//! do not have answers `404`; reads take GET or POST, actions POST only (`405`
//! otherwise). A request whose `Origin` or `Referer` names another host than its `Host`
//! (a web page in a browser posting here) answers `403`. Errors map to qBittorrent's
//! codes: bad parameters `400`, no such torrent `404`, a conflict `409`, an unusable
//! upload `415`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, Response, StatusCode, header};

use super::auth::{Auth, Credentials, Login};
use super::params::{self, Params};
use crate::api::{Client, ClientError};

/// Whether an endpoint reads (GET or POST) or acts (POST only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Answers GET and POST.
    Read,
    /// Answers POST only.
    Action,
}

/// Every endpoint served, `scope/action` under `/api/v2/`; any other answers `404` (the
/// README lists what is not implemented).
pub const ENDPOINTS: &[(&str, Kind)] = &[
    ("auth/login", Kind::Action),
    ("auth/logout", Kind::Action),
    ("app/version", Kind::Read),
    ("app/webapiVersion", Kind::Read),
    ("app/defaultSavePath", Kind::Read),
    ("app/preferences", Kind::Read),
    ("app/setPreferences", Kind::Action),
    ("transfer/info", Kind::Read),
    ("transfer/speedLimitsMode", Kind::Read),
    ("transfer/toggleSpeedLimitsMode", Kind::Action),
    ("transfer/setSpeedLimitsMode", Kind::Action),
    ("transfer/downloadLimit", Kind::Read),
    ("transfer/uploadLimit", Kind::Read),
    ("transfer/setDownloadLimit", Kind::Action),
    ("transfer/setUploadLimit", Kind::Action),
    ("torrents/count", Kind::Read),
    ("torrents/info", Kind::Read),
    ("torrents/properties", Kind::Read),
    ("torrents/files", Kind::Read),
    ("torrents/trackers", Kind::Read),
    ("torrents/webseeds", Kind::Read),
    ("torrents/pieceStates", Kind::Read),
    ("torrents/addPeers", Kind::Action),
    ("torrents/setSavePath", Kind::Action),
    ("torrents/add", Kind::Action),
    ("torrents/delete", Kind::Action),
    ("torrents/pause", Kind::Action),
    ("torrents/resume", Kind::Action),
    ("torrents/stop", Kind::Action),
    ("torrents/start", Kind::Action),
    ("torrents/recheck", Kind::Action),
    ("torrents/reannounce", Kind::Action),
    ("torrents/setForceStart", Kind::Action),
    ("torrents/topPrio", Kind::Action),
    ("torrents/bottomPrio", Kind::Action),
    ("torrents/increasePrio", Kind::Action),
    ("torrents/decreasePrio", Kind::Action),
    ("torrents/setShareLimits", Kind::Action),
    ("torrents/uploadLimit", Kind::Read),
    ("torrents/downloadLimit", Kind::Read),
    ("torrents/setUploadLimit", Kind::Action),
    ("torrents/setDownloadLimit", Kind::Action),
    ("torrents/setLocation", Kind::Action),
    ("torrents/rename", Kind::Action),
    ("torrents/setAutoManagement", Kind::Action),
    ("torrents/toggleSequentialDownload", Kind::Action),
    ("torrents/toggleFirstLastPiecePrio", Kind::Action),
    ("torrents/filePrio", Kind::Action),
    ("torrents/editTracker", Kind::Action),
    ("torrents/addTrackers", Kind::Action),
    ("torrents/removeTrackers", Kind::Action),
    ("torrents/setCategory", Kind::Action),
    ("torrents/categories", Kind::Read),
    ("torrents/createCategory", Kind::Action),
    ("torrents/editCategory", Kind::Action),
    ("torrents/removeCategories", Kind::Action),
    ("torrents/tags", Kind::Read),
    ("torrents/addTags", Kind::Action),
    ("torrents/removeTags", Kind::Action),
    ("torrents/createTags", Kind::Action),
    ("torrents/deleteTags", Kind::Action),
];

/// What an endpoint answers.
#[derive(Debug)]
pub enum Reply {
    /// `200` with a text body (`text/plain`).
    Text(String),
    /// `200` with a JSON body.
    Json(serde_json::Value),
    /// `200` with an empty body (most actions).
    Empty,
}

/// Why a request failed, with qBittorrent's status code for it.
#[derive(Debug)]
pub enum ApiError {
    /// `400`: a parameter is missing or wrong.
    BadParams(String),
    /// `403`: not allowed (no session, banned, cross-site).
    Forbidden(String),
    /// `404`: no such endpoint or torrent.
    NotFound(String),
    /// `405`: the endpoint does not take this method.
    MethodNotAllowed,
    /// `409`: the request conflicts with the state (queueing off, a name taken).
    Conflict(String),
    /// `413`: the body is too large.
    TooLarge,
    /// `415`: an upload is not a torrent (qBittorrent's `BadData`).
    BadData(String),
    /// Another status, with a message.
    Status(StatusCode, String),
}

impl ApiError {
    /// The status and text of the answer.
    fn parts(self) -> (StatusCode, String) {
        let or = |code: StatusCode, m: String| {
            let m = if m.is_empty() {
                code.canonical_reason().unwrap_or_default().to_owned()
            } else {
                m
            };
            (code, m)
        };
        match self {
            ApiError::BadParams(m) => or(StatusCode::BAD_REQUEST, m),
            ApiError::Forbidden(m) => or(StatusCode::FORBIDDEN, m),
            ApiError::NotFound(m) => or(StatusCode::NOT_FOUND, m),
            ApiError::MethodNotAllowed => or(StatusCode::METHOD_NOT_ALLOWED, String::new()),
            ApiError::Conflict(m) => or(StatusCode::CONFLICT, m),
            ApiError::TooLarge => or(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is too large (at most {} MiB)",
                    params::MAX_BODY >> 20
                ),
            ),
            ApiError::BadData(m) => or(StatusCode::UNSUPPORTED_MEDIA_TYPE, m),
            ApiError::Status(code, m) => or(code, m),
        }
    }
}

impl From<ClientError> for ApiError {
    fn from(e: ClientError) -> ApiError {
        match e {
            ClientError::Busy => ApiError::Status(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            ClientError::EngineGone => {
                ApiError::Status(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            ClientError::Refused(e) => ApiError::Conflict(e.to_string()),
        }
    }
}

/// What every request handler shares: the engine's client, the logins, the identity.
#[derive(Debug)]
pub struct Api {
    /// The engine.
    pub client: Client,
    /// Sessions and bans.
    pub auth: Auth,
    /// The qBittorrent version `app/version` answers (`v4.6.7`).
    pub identity: String,
}

impl Api {
    /// The shared state of a server.
    pub fn new(client: Client, credentials: Credentials, identity: String) -> Arc<Api> {
        Arc::new(Api {
            client,
            auth: Auth::new(credentials),
            identity,
        })
    }
}

/// Wait until the snapshot shows every command sent so far (at most 5 s): an action
/// answers once its effect can be read back, as qBittorrent's do.
pub async fn settle(api: &Api) {
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), api.client.flush()).await;
}

/// The kind of endpoint `path` (`scope/action`), if it is served.
pub fn endpoint(path: &str) -> Option<Kind> {
    ENDPOINTS.iter().find(|(p, _)| *p == path).map(|(_, k)| *k)
}

/// Answer one request from `peer`.
pub async fn handle(api: Arc<Api>, peer: SocketAddr, req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let cookie = req
        .headers()
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let result = route(&api, peer.ip(), &path, cookie.as_deref(), req).await;
    let mut res = match result {
        Ok((reply, set_cookie)) => {
            let mut r = match reply {
                Reply::Text(t) => text(StatusCode::OK, t),
                Reply::Json(v) => json(&v),
                Reply::Empty => text(StatusCode::OK, String::new()),
            };
            if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            r
        }
        Err(e) => {
            let (code, message) = e.parts();
            text(code, message)
        }
    };
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn text(code: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    r
}

fn json(v: &serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Body::from(v.to_string()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The reply, and a `Set-Cookie` value for a login.
type Routed = Result<(Reply, Option<String>), ApiError>;

async fn route(
    api: &Api,
    ip: IpAddr,
    path: &str,
    cookie: Option<&str>,
    req: Request<Body>,
) -> Routed {
    if cross_site(&req) {
        tracing::warn!(
            "Web API: cross-site request from {ip} refused (Origin/Referer not this host)"
        );
        return Err(ApiError::Forbidden("cross-site request refused".into()));
    }
    let Some(name) = path.strip_prefix("/api/v2/") else {
        return Err(ApiError::NotFound(String::new()));
    };
    let is_login = name == "auth/login";
    if !is_login && !api.auth.allowed(ip, cookie) {
        return Err(ApiError::Forbidden(String::new()));
    }
    let Some(kind) = endpoint(name) else {
        return Err(ApiError::NotFound(String::new()));
    };
    let method = req.method().clone();
    let allowed = match kind {
        Kind::Read => method == Method::GET || method == Method::POST,
        Kind::Action => method == Method::POST,
    };
    if !allowed {
        return Err(ApiError::MethodNotAllowed);
    }
    let p = params::read(req).await?;
    match name {
        "auth/login" => {
            let login = api
                .auth
                .login(ip, cookie, p.text("username"), p.text("password"))
                .await;
            match login {
                Login::Ok(sid) => Ok((
                    Reply::Text("Ok.".into()),
                    Some(super::auth::set_cookie(&sid)),
                )),
                Login::Already => Ok((Reply::Text("Ok.".into()), None)),
                Login::Fails => Ok((Reply::Text("Fails.".into()), None)),
                Login::Banned => Err(ApiError::Forbidden(
                    "Your IP address has been banned after too many failed authentication \
                     attempts."
                        .into(),
                )),
            }
        }
        "auth/logout" => {
            api.auth.logout(cookie);
            Ok((
                Reply::Empty,
                Some(format!(
                    "{}=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT",
                    super::auth::COOKIE
                )),
            ))
        }
        _ => run(api, name, &p).await.map(|r| (r, None)),
    }
}

/// Run endpoint `name` (served, allowed) with `p`.
async fn run(api: &Api, name: &str, p: &Params) -> Result<Reply, ApiError> {
    use super::{actions, add, app, details, info, labels};
    let (scope, action) = name.split_once('/').unwrap_or((name, ""));
    match scope {
        "app" | "transfer" => app::run(api, name, p).await,
        "torrents" => match action {
            "info" => info::info(api, p),
            "count" => Ok(Reply::Text(api.client.snapshot().rows.len().to_string())),
            "properties" => details::properties(api, p).await,
            "files" => details::files(api, p).await,
            "trackers" => details::trackers(api, p).await,
            "webseeds" => details::webseeds(api, p).await,
            "pieceStates" => details::piece_states(api, p).await,
            "add" => add::add(api, p).await,
            "categories" | "createCategory" | "editCategory" | "removeCategories"
            | "setCategory" | "tags" | "addTags" | "removeTags" | "createTags" | "deleteTags" => {
                labels::run(api, action, p).await
            }
            _ => actions::run(api, action, p).await,
        },
        _ => Err(ApiError::NotFound(String::new())),
    }
}

/// Whether `req` comes from a web page of another site: an `Origin` (else `Referer`)
/// whose host and port differ from the `Host` header's (OWASP's "verifying origin with
/// standard headers", as qBittorrent's CSRF protection). Tools send neither: allowed.
fn cross_site(req: &Request<Body>) -> bool {
    let h = |name| {
        req.headers()
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .filter(|v| !v.is_empty())
    };
    let Some(source) = h(header::ORIGIN).or_else(|| h(header::REFERER)) else {
        return false;
    };
    let target = h(header::HOST).unwrap_or_default();
    let authority = |url: &str| -> Option<String> {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let auth = rest.split(['/', '?', '#']).next()?;
        Some(auth.rsplit('@').next()?.to_ascii_lowercase())
    };
    let with_port = |a: &str, default: &str| {
        let has_port = a
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            && !a.ends_with(']');
        if has_port {
            a.to_owned()
        } else {
            format!("{a}:{default}")
        }
    };
    let Some(src) = authority(source) else {
        return true;
    };
    let default = if source.starts_with("https://") {
        "443"
    } else {
        "80"
    };
    with_port(&src, default) != with_port(&target.to_ascii_lowercase(), "80")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request<Body> {
        let mut r = Request::post("/api/v2/torrents/info");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.body(Body::empty()).unwrap()
    }

    #[test]
    fn cross_site_requests_are_told_apart() {
        assert!(!cross_site(&req(&[("host", "127.0.0.1:8080")])));
        assert!(!cross_site(&req(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080")
        ])));
        assert!(!cross_site(&req(&[
            ("host", "seedbox.lan"),
            ("referer", "http://seedbox.lan/index.html")
        ])));
        assert!(cross_site(&req(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example")
        ])));
        assert!(cross_site(&req(&[
            ("host", "127.0.0.1:8080"),
            ("referer", "http://127.0.0.1:9999/x")
        ])));
        assert!(cross_site(&req(&[("origin", "null"), ("host", "a:1")])));
    }

    #[test]
    fn the_table_has_each_endpoint_once() {
        let mut names: Vec<&str> = ENDPOINTS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(endpoint("torrents/info"), Some(Kind::Read));
        assert_eq!(endpoint("torrents/add"), Some(Kind::Action));
        assert_eq!(endpoint("torrents/renameFile"), None);
    }
}
