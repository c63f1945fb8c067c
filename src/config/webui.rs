//! The `[webui]` table: the qBittorrent-compatible Web API (see [`crate::webui`]), off by
//! default. Exactly four keys: `enabled`, `listen`, `username`, `password`.
//!
//! The password is either a salted PBKDF2 hash written by `ratorrent passwd` or, with a
//! warning in the log at start, the plain password. There is no default password: the Web
//! API refuses to start without one and says what to do (`webui::Credentials`). This
//! module only reads the table.

use std::net::SocketAddr;

use serde::Deserialize;

use super::engine::BadValue;

/// Default of `listen`: loopback only, qBittorrent's port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Default of `username` (qBittorrent's).
pub const DEFAULT_USERNAME: &str = "admin";

/// The `[webui]` table as written (every key optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct WebUiFile {
    enabled: Option<bool>,
    listen: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// Settings of the Web API: the `[webui]` keys, and what the program embedding it sets
/// (not config keys: the qBittorrent identity it claims and the localhost bypass).
#[derive(Clone, PartialEq, Eq)]
pub struct WebUiConfig {
    /// Serve the API. Default: false.
    pub enabled: bool,
    /// Address and port to listen on. Default: [`DEFAULT_LISTEN`] (loopback only); any
    /// other address is allowed (it must be written here) and logs a warning at start.
    pub listen: SocketAddr,
    /// The user name `auth/login` wants. Default: [`DEFAULT_USERNAME`].
    pub username: String,
    /// The password: a `pbkdf2-sha256$…` hash from `ratorrent passwd`, or the plain
    /// password (a warning in the log). `None` or empty: not set (enabling is refused).
    pub password: Option<String>,
    /// The qBittorrent version `app/version` answers (tools check it, e.g. cross-seed wants
    /// 4.3.1 or later). Not a config key. Default: `v4.6.7`.
    pub identity: String,
    /// Clients on a loopback address need no login (qBittorrent's "bypass authentication
    /// for clients on localhost"). Not a config key; default: false.
    pub bypass_localhost: bool,
}

impl Default for WebUiConfig {
    fn default() -> Self {
        WebUiConfig {
            enabled: false,
            listen: DEFAULT_LISTEN.parse().expect("valid default"),
            username: DEFAULT_USERNAME.to_owned(),
            password: None,
            identity: "v4.6.7".to_owned(),
            bypass_localhost: false,
        }
    }
}

/// Never prints the password (a hash or the plain text).
impl std::fmt::Debug for WebUiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebUiConfig")
            .field("enabled", &self.enabled)
            .field("listen", &self.listen)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "(set)"))
            .field("identity", &self.identity)
            .field("bypass_localhost", &self.bypass_localhost)
            .finish()
    }
}

impl WebUiFile {
    /// The settings, defaults for what the table leaves out.
    ///
    /// # Errors
    /// `webui.listen` that is not `ADDRESS:PORT`, an empty `webui.username`.
    pub(super) fn into_config(self) -> Result<WebUiConfig, BadValue> {
        let mut c = WebUiConfig::default();
        if let Some(e) = self.enabled {
            c.enabled = e;
        }
        if let Some(l) = self.listen {
            c.listen = parse_listen(&l).map_err(|problem| BadValue {
                key: "webui.listen",
                problem,
            })?;
        }
        if let Some(u) = self.username {
            if u.trim().is_empty() || u.chars().any(char::is_control) {
                return Err(BadValue {
                    key: "webui.username",
                    problem: "must be a name (not empty, no control characters)".into(),
                });
            }
            c.username = u;
        }
        c.password = self.password.filter(|p| !p.is_empty());
        Ok(c)
    }
}

/// `ADDRESS:PORT` (`127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080`).
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse::<SocketAddr>().map_err(|_| {
        format!(
            "must be ADDRESS:PORT, e.g. \"{DEFAULT_LISTEN}\" or \"[::1]:8080\" (got {text:?}); \
             a host name is not allowed"
        )
    })
}

impl WebUiConfig {
    /// Whether `listen` is a loopback address (else the API is reachable from the network:
    /// a warning at start).
    pub fn is_loopback(&self) -> bool {
        self.listen.ip().is_loopback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<WebUiConfig, BadValue> {
        let f: WebUiFile = toml::from_str(text).map_err(|e| BadValue {
            key: "toml",
            problem: e.to_string(),
        })?;
        f.into_config()
    }

    #[test]
    fn defaults_are_off_on_loopback_without_a_password() {
        let c = read("").unwrap();
        assert!(!c.enabled);
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.username, "admin");
        assert_eq!(c.password, None);
        assert!(c.is_loopback());
    }

    #[test]
    fn keys_are_read_and_checked() {
        let c =
            read("enabled = true\nlisten = \"[::1]:9090\"\nusername = \"me\"\npassword = \"pw\"")
                .unwrap();
        assert!(c.enabled && c.is_loopback());
        assert_eq!(c.listen.port(), 9090);
        assert_eq!(c.password.as_deref(), Some("pw"));
        let e = read("listen = \"localhost:8080\"").unwrap_err();
        assert_eq!(e.key, "webui.listen");
        assert!(read("username = \" \"").is_err());
        assert!(read("extra = 1").is_err(), "unknown keys are refused");
        // an empty password is no password
        assert_eq!(read("password = \"\"").unwrap().password, None);
        assert!(!read("listen = \"0.0.0.0:8080\"").unwrap().is_loopback());
    }

    #[test]
    fn debug_hides_the_password() {
        let c = WebUiConfig {
            password: Some("hunter2".into()),
            ..WebUiConfig::default()
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
