//! Logins and sessions, as qBittorrent's `AuthController` and `WebApplication` have them:
//! `auth/login` with the right user name and password starts a session (a random `SID`
//! cookie, `HttpOnly`, `SameSite=Strict`) and answers `Ok.`; a wrong one answers `Fails.`
//! without a cookie and counts against the client's address; after [`MAX_FAILS`] failures
//! the address is banned for [`BAN_TIME`] (`403`, as qBittorrent). Every other endpoint
//! wants a live session (`403` without one). Optionally, clients on a loopback address
//! need no login (off by default).
//!
//! Bounded for hostile clients: at most [`MAX_SESSIONS`] sessions (the least recently used
//! goes) and [`MAX_TRACKED`] addresses with failures (expired ones first, then the oldest);
//! one password check at a time, off the async workers (a PBKDF2 hash costs its
//! iterations). Neither the password nor the cookie is ever logged.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::WebUiError;
use super::password::{Password, same_text};
use crate::config::webui::WebUiConfig;
use crate::lock::MutexExt;

/// Failed logins from one address before it is banned (qBittorrent's default).
pub const MAX_FAILS: u32 = 5;
/// How long a ban lasts (qBittorrent's default: an hour).
pub const BAN_TIME: Duration = Duration::from_secs(3600);
/// A session unused for this long ends (qBittorrent's default: an hour).
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(3600);
/// Most live sessions; a new one past it ends the least recently used.
pub const MAX_SESSIONS: usize = 1024;
/// Most addresses whose failures are remembered.
pub const MAX_TRACKED: usize = 4096;

/// The cookie's name (qBittorrent's).
pub const COOKIE: &str = "SID";

/// Who may log in: the user name and password of `[webui]`, and the localhost bypass.
#[derive(Debug, Clone)]
pub struct Credentials {
    username: String,
    password: Password,
    bypass_localhost: bool,
}

impl Credentials {
    /// The credentials of `cfg`.
    ///
    /// # Errors
    /// [`WebUiError::Password`]: no password (what to do), or a `ratorrent passwd` hash
    /// copied in part.
    pub fn of(cfg: &WebUiConfig) -> Result<Credentials, WebUiError> {
        let Some(text) = cfg.password.as_deref() else {
            return Err(WebUiError::Password(
                "the Web API needs a password ([webui] enabled = true without one): run \
                 `ratorrent passwd` and put the line it prints into the [webui] table of the \
                 config file, or set enabled = false"
                    .into(),
            ));
        };
        let password = Password::from_config(text);
        if text.starts_with(super::password::PREFIX) && !password.is_hashed() {
            return Err(WebUiError::Password(
                "[webui] password starts like a `ratorrent passwd` hash but does not read as \
                 one (copied in part?): run `ratorrent passwd` again"
                    .into(),
            ));
        }
        Ok(Credentials {
            username: cfg.username.clone(),
            password,
            bypass_localhost: cfg.bypass_localhost,
        })
    }

    /// Whether the password is a hash (else plain text in the config: warned about).
    pub fn password_hashed(&self) -> bool {
        self.password.is_hashed()
    }
}

/// How a login went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// Right: a new session with this id (the cookie's value).
    Ok(String),
    /// Already logged in (a live session cookie came with it).
    Already,
    /// Wrong user name or password.
    Fails,
    /// The address is banned after too many failures.
    Banned,
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    banned_until: Option<Instant>,
}

/// Sessions and failed logins.
#[derive(Debug)]
pub struct Auth {
    credentials: Credentials,
    /// Session id → when last used.
    sessions: Mutex<HashMap<String, Instant>>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
    /// One password check at a time.
    checking: Arc<tokio::sync::Semaphore>,
}

impl Auth {
    /// No session yet.
    pub fn new(credentials: Credentials) -> Auth {
        Auth {
            credentials,
            sessions: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            checking: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }

    /// Whether a request from `ip` carrying `cookie` (the `Cookie` header) may use the
    /// API: a live session (its clock is reset), or a loopback client with the bypass on.
    pub fn allowed(&self, ip: IpAddr, cookie: Option<&str>) -> bool {
        self.session_of(cookie).is_some() || self.bypassed(ip)
    }

    /// The live session named by `cookie`, if any (its clock is reset).
    pub fn session_of(&self, cookie: Option<&str>) -> Option<String> {
        let sid = cookie.and_then(sid_in)?;
        let now = Instant::now();
        let mut sessions = self.sessions.locked();
        match sessions.get_mut(sid) {
            Some(last) if now.duration_since(*last) < SESSION_TIMEOUT => {
                *last = now;
                Some(sid.to_owned())
            }
            Some(_) => {
                sessions.remove(sid);
                None
            }
            None => None,
        }
    }

    fn bypassed(&self, ip: IpAddr) -> bool {
        self.credentials.bypass_localhost && ip.to_canonical().is_loopback()
    }

    /// `auth/login` from `ip` with `username` and `password` (`cookie`: the request's
    /// `Cookie` header). A live session answers [`Login::Already`] at once (qBittorrent's
    /// rule); a banned address [`Login::Banned`] without a check; a bypassed loopback
    /// client gets a session without one.
    pub async fn login(
        &self,
        ip: IpAddr,
        cookie: Option<&str>,
        username: &str,
        password: &str,
    ) -> Login {
        if self.session_of(cookie).is_some() {
            return Login::Already;
        }
        if self.banned(ip) {
            tracing::warn!("Web API login refused: {ip} is banned after repeated failures");
            return Login::Banned;
        }
        if self.bypassed(ip) {
            return Login::Ok(self.start_session());
        }
        let right = self.check(username, password).await;
        if right {
            self.failures.locked().remove(&ip);
            tracing::info!("Web API login from {ip}");
            Login::Ok(self.start_session())
        } else {
            let count = self.failed(ip);
            // neither the user name nor the password: a password typed in the name field
            // must not end up in the log
            tracing::warn!("Web API login failed from {ip} (failure {count} of {MAX_FAILS})");
            Login::Fails
        }
    }

    /// End the session named by `cookie` (`auth/logout`).
    pub fn logout(&self, cookie: Option<&str>) {
        if let Some(sid) = cookie.and_then(sid_in) {
            self.sessions.locked().remove(sid);
        }
    }

    /// Live sessions now.
    #[cfg(test)]
    pub fn session_count(&self) -> usize {
        self.sessions.locked().len()
    }

    async fn check(&self, username: &str, password: &str) -> bool {
        let Ok(_permit) = self.checking.clone().acquire_owned().await else {
            return false;
        };
        let name_ok = same_text(username, &self.credentials.username);
        let secret = self.credentials.password.clone();
        let given = password.to_owned();
        let pass_ok = tokio::task::spawn_blocking(move || secret.verify(&given))
            .await
            .unwrap_or(false);
        name_ok && pass_ok
    }

    fn start_session(&self) -> String {
        let sid = data_encoding::BASE64URL_NOPAD.encode(&rand::random::<[u8; 24]>());
        let now = Instant::now();
        let mut sessions = self.sessions.locked();
        sessions.retain(|_, last| now.duration_since(*last) < SESSION_TIMEOUT);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, last)| **last)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(sid.clone(), now);
        sid
    }

    fn banned(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let mut failures = self.failures.locked();
        match failures.get(&ip).and_then(|f| f.banned_until) {
            Some(until) if now < until => true,
            Some(_) => {
                failures.remove(&ip);
                false
            }
            None => false,
        }
    }

    /// Count a failure of `ip`; returns its count (a ban starts at [`MAX_FAILS`]).
    fn failed(&self, ip: IpAddr) -> u32 {
        let now = Instant::now();
        let mut failures = self.failures.locked();
        if failures.len() >= MAX_TRACKED && !failures.contains_key(&ip) {
            failures.retain(|_, f| {
                f.banned_until.is_some_and(|u| now < u) || now.duration_since(f.last) < BAN_TIME
            });
            if failures.len() >= MAX_TRACKED
                && let Some(oldest) = failures.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| *k)
            {
                failures.remove(&oldest);
            }
        }
        let f = failures.entry(ip).or_insert(Failures {
            count: 0,
            last: now,
            banned_until: None,
        });
        f.count += 1;
        f.last = now;
        if f.count >= MAX_FAILS {
            f.banned_until = Some(now + BAN_TIME);
            tracing::warn!(
                "Web API: {ip} banned for {} min after {MAX_FAILS} failed logins",
                BAN_TIME.as_secs() / 60
            );
        }
        f.count
    }
}

/// The value of the `SID` cookie in a `Cookie` header (`a=1; SID=xyz`); also in a
/// `Set-Cookie` line sent back as it came (`SID=xyz; HttpOnly; path=/`), as cross-seed
/// does.
pub fn sid_in(header: &str) -> Option<&str> {
    header.split(';').find_map(|part| {
        let (name, value) = part.trim().split_once('=')?;
        (name.trim() == COOKIE && !value.is_empty()).then_some(value.trim())
    })
}

/// The `Set-Cookie` value of a new session (qBittorrent's form).
pub fn set_cookie(sid: &str) -> String {
    format!("{COOKIE}={sid}; HttpOnly; SameSite=Strict; path=/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(bypass: bool) -> Auth {
        let cfg = WebUiConfig {
            enabled: true,
            password: Some(super::super::password::hash_with("pw", b"salt", 10)),
            bypass_localhost: bypass,
            ..WebUiConfig::default()
        };
        Auth::new(Credentials::of(&cfg).unwrap())
    }

    const REMOTE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn no_password_is_an_error_that_says_what_to_do() {
        let e = Credentials::of(&WebUiConfig::default()).unwrap_err();
        assert!(e.to_string().contains("ratorrent passwd"), "{e}");
        let half = WebUiConfig {
            password: Some("pbkdf2-sha256$1000$c2FsdA==".into()),
            ..WebUiConfig::default()
        };
        assert!(Credentials::of(&half).is_err());
    }

    #[tokio::test]
    async fn a_right_login_starts_a_session_and_a_wrong_one_does_not() {
        let a = auth(false);
        assert_eq!(a.login(REMOTE, None, "admin", "nope").await, Login::Fails);
        assert_eq!(a.login(REMOTE, None, "root", "pw").await, Login::Fails);
        let Login::Ok(sid) = a.login(REMOTE, None, "admin", "pw").await else {
            panic!("login refused")
        };
        let cookie = format!("other=1; SID={sid}");
        assert!(a.allowed(REMOTE, Some(&cookie)));
        assert!(!a.allowed(REMOTE, Some("SID=forged")));
        assert!(!a.allowed(REMOTE, None));
        assert_eq!(
            a.login(REMOTE, Some(&cookie), "x", "y").await,
            Login::Already
        );
        a.logout(Some(&cookie));
        assert!(!a.allowed(REMOTE, Some(&cookie)));
    }

    #[tokio::test]
    async fn repeated_failures_ban_the_address_only() {
        let a = auth(false);
        for _ in 0..MAX_FAILS {
            assert_eq!(a.login(REMOTE, None, "admin", "bad").await, Login::Fails);
        }
        assert_eq!(a.login(REMOTE, None, "admin", "pw").await, Login::Banned);
        assert!(matches!(
            a.login(LOCAL, None, "admin", "pw").await,
            Login::Ok(_)
        ));
    }

    #[tokio::test]
    async fn the_bypass_lets_loopback_clients_in_only() {
        let a = auth(true);
        assert!(a.allowed(LOCAL, None));
        assert!(a.allowed("::ffff:127.0.0.1".parse().unwrap(), None));
        assert!(!a.allowed(REMOTE, None));
        assert!(matches!(a.login(LOCAL, None, "", "").await, Login::Ok(_)));
        assert!(!auth(false).allowed(LOCAL, None));
    }

    #[test]
    fn sessions_and_failures_stay_bounded() {
        let a = auth(false);
        for _ in 0..MAX_SESSIONS + 10 {
            a.start_session();
        }
        assert_eq!(a.session_count(), MAX_SESSIONS);
        for i in 0..MAX_TRACKED as u32 + 10 {
            a.failed(IpAddr::V4(std::net::Ipv4Addr::from(i)));
        }
        assert!(a.failures.locked().len() <= MAX_TRACKED);
    }

    #[test]
    fn the_cookie_is_found_in_either_header_form() {
        assert_eq!(sid_in("SID=abc"), Some("abc"));
        assert_eq!(sid_in("x=1; SID=abc"), Some("abc"));
        assert_eq!(
            sid_in("SID=abc; HttpOnly; path=/; SameSite=Strict"),
            Some("abc")
        );
        assert_eq!(sid_in("SIDX=abc"), None);
        assert_eq!(sid_in("SID="), None);
        assert_eq!(sid_in(""), None);
        assert_eq!(
            set_cookie("abc"),
            "SID=abc; HttpOnly; SameSite=Strict; path=/"
        );
    }
}
