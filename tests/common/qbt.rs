//! The qBittorrent Web API v2 from the client's side: [`Web`], a small HTTP client that
//! sends requests byte for byte as a tool would (the cookie handled by hand, forms and
//! multipart bodies built here), and two servers to point it at: [`RatWeb`], the ratorrent
//! binary's TUI under tmux with `[webui]` on, and [`QbtNox`], a real `qbittorrent-nox`
//! with a profile of its own (legal notice accepted, password set in its config, DHT, LSD
//! and UPnP off, loopback only).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tmux::TmuxPane;

/// One answer.
#[derive(Debug, Clone)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Every `Set-Cookie` header, in order.
    pub set_cookies: Vec<String>,
    /// `Content-Type`.
    pub content_type: String,
    /// The body as text.
    pub body: String,
}

impl Resp {
    /// The body as JSON.
    ///
    /// # Panics
    /// When it is not JSON (the body is in the message).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {:?}", self.status, self.body))
    }

    /// `SID=...` of the first `Set-Cookie`, as a `Cookie` header value.
    pub fn sid(&self) -> Option<String> {
        let first = self.set_cookies.first()?;
        let pair = first.split(';').next()?.trim();
        pair.starts_with("SID=").then(|| pair.to_owned())
    }
}

/// A client of one server: a base URL, the `Cookie` header to send, extra headers.
#[derive(Debug, Clone)]
pub struct Web {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    http: reqwest::Client,
    /// The `Cookie` header sent with each request (`None`: none).
    pub cookie: Option<String>,
    /// Headers sent with each request (e.g. Sonarr's `Authorization: Basic`).
    pub headers: Vec<(String, String)>,
}

impl Web {
    /// A client of `base` without a cookie.
    pub fn new(base: &str) -> Web {
        Web {
            base: base.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("http client"),
            cookie: None,
            headers: Vec::new(),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, format!("{}/api/v2/{}", self.base, path));
        if let Some(c) = &self.cookie {
            r = r.header("Cookie", c);
        }
        for (k, v) in &self.headers {
            r = r.header(k, v);
        }
        r
    }

    async fn send(r: reqwest::RequestBuilder) -> Resp {
        let res = r.send().await.expect("request sent");
        let status = res.status().as_u16();
        let set_cookies = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        let content_type = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = res.text().await.unwrap_or_default();
        Resp {
            status,
            set_cookies,
            content_type,
            body,
        }
    }

    /// `GET /api/v2/PATH?QUERY`.
    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> Resp {
        let q: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        let path = if q.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{q}")
        };
        Self::send(self.request(reqwest::Method::GET, &path)).await
    }

    /// `POST /api/v2/PATH` with an `application/x-www-form-urlencoded` body.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Resp {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        self.post_raw(path, "application/x-www-form-urlencoded", body.into_bytes())
            .await
    }

    /// `POST /api/v2/PATH` with `body` of `content_type` (as given, e.g. cross-seed's
    /// hand-written `tags=cross-seed`).
    pub async fn post_raw(&self, path: &str, content_type: &str, body: Vec<u8>) -> Resp {
        let r = self
            .request(reqwest::Method::POST, path)
            .header("Content-Type", content_type)
            .body(body);
        Self::send(r).await
    }

    /// `POST /api/v2/PATH` with a `multipart/form-data` body: `files` as (field, file name,
    /// bytes) first, then `fields` in order.
    pub async fn post_multipart(
        &self,
        path: &str,
        files: &[(&str, &str, &[u8])],
        fields: &[(&str, &str)],
    ) -> Resp {
        let (content_type, body) = multipart(files, fields);
        self.post_raw(path, &content_type, body).await
    }
}

/// A `multipart/form-data` body and its content type.
pub fn multipart(files: &[(&str, &str, &[u8])], fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "----ratorrentTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (field, name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: application/x-bittorrent\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Wait until `addr` accepts TCP connections.
fn wait_listening(addr: &str, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if std::net::TcpStream::connect(addr).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The ratorrent TUI under tmux with the Web API on `127.0.0.1:PORT`.
pub struct RatWeb {
    /// The pane (the TUI's screen; attached to the daemon when there is one).
    pub pane: TmuxPane,
    /// The `ratorrent daemon` serving the Web API ([`RatWeb::start_daemon`]), in its pane.
    pub daemon: Option<TmuxPane>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The download folder.
    pub dl: PathBuf,
    /// The config, data and state folders.
    pub dir: tempfile::TempDir,
}

impl RatWeb {
    /// Start it: `[webui]` enabled on a free port with `username` and `password` (a hash
    /// or a plain one), `extra` appended to the config (top-level keys before tables);
    /// waits until the port answers.
    ///
    /// # Panics
    /// When the API does not come up within 20 s (the screen is in the message).
    pub fn start(tag: &str, username: &str, password: &str, extra: &str) -> RatWeb {
        RatWeb::launch(tag, username, password, extra, false)
    }

    /// [`RatWeb::start`] as a seedbox runs it: `ratorrent daemon` serves the Web API (in a
    /// pane of its own, [`RatWeb::daemon`]), and [`RatWeb::pane`] is a TUI attached to it.
    ///
    /// # Panics
    /// As [`RatWeb::start`]; also when the TUI does not attach within 20 s.
    pub fn start_daemon(tag: &str, username: &str, password: &str, extra: &str) -> RatWeb {
        RatWeb::launch(tag, username, password, extra, true)
    }

    fn launch(tag: &str, username: &str, password: &str, extra: &str, daemon: bool) -> RatWeb {
        let dir = tempfile::Builder::new()
            .prefix("ratorrent-web-")
            .tempdir()
            .expect("tempdir");
        let dl = dir.path().join("dl");
        std::fs::create_dir_all(&dl).unwrap();
        let port = super::free_port();
        let config = dir.path().join("config.toml");
        let text = format!(
            "download_dir = \"{}\"\nlisten_port = 0\nconfirm_quit = false\nmin_free_space = 0\n{extra}\n[dht]\nenabled = false\nbootstrap = []\n\n[webui]\nenabled = true\nlisten = \"127.0.0.1:{port}\"\nusername = \"{username}\"\npassword = \"{password}\"\n",
            dl.display()
        );
        std::fs::write(&config, text).unwrap();
        let vars: Vec<(String, PathBuf)> = super::tmux::PRIVATE_DIRS
            .iter()
            .map(|k| (k.to_string(), dir.path().join(k.to_ascii_lowercase())))
            .collect();
        let env: Vec<(&str, &Path)> = vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_path()))
            .collect();
        let cmd = format!(
            "RUST_LOG=info exec {} --config {}",
            super::rat::bin(),
            config.display()
        );
        let addr = format!("127.0.0.1:{port}");
        let (pane, daemon) = if daemon {
            let d = TmuxPane::start(
                &format!("{tag}-daemon"),
                &format!("{cmd} daemon"),
                &env,
                120,
                20,
            );
            if !wait_listening(&addr, Duration::from_secs(20)) {
                panic!(
                    "the daemon's Web API never listened on {addr}; its pane:\n{}",
                    d.capture()
                );
            }
            let tui = TmuxPane::start(tag, &cmd, &env, 120, 40);
            tui.wait_until("the TUI attached", Duration::from_secs(20), |screen| {
                screen.contains("torrents ")
            });
            (tui, Some(d))
        } else {
            let pane = TmuxPane::start(tag, &cmd, &env, 120, 40);
            if !wait_listening(&addr, Duration::from_secs(20)) {
                panic!(
                    "the Web API never listened on {addr}; screen:\n{}",
                    pane.capture()
                );
            }
            (pane, None)
        };
        RatWeb {
            pane,
            daemon,
            base: format!("http://{addr}"),
            dl,
            dir,
        }
    }

    /// The ratorrent process id.
    pub fn pid(&self) -> u32 {
        self.pane.pid().expect("ratorrent runs")
    }

    /// The session log file (`XDG_STATE_HOME/ratorrent/ratorrent.log`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(
            self.dir
                .path()
                .join("xdg_state_home")
                .join("ratorrent")
                .join("ratorrent.log"),
        )
        .unwrap_or_default()
    }
}

impl Drop for RatWeb {
    /// A daemon is stopped with SIGTERM before its pane goes (closing the pane sends it
    /// SIGHUP, which a daemon takes as "read the config again", not "stop").
    fn drop(&mut self) {
        if let Some(pid) = self.daemon.as_ref().and_then(TmuxPane::pid) {
            // SAFETY: kill(2) on the daemon this test started
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
            let start = Instant::now();
            while self.daemon.as_ref().is_some_and(TmuxPane::alive)
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// A real `qbittorrent-nox` with a profile of its own, Web UI on `127.0.0.1:PORT`; killed
/// on drop.
pub struct QbtNox {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its default save path.
    pub dl: PathBuf,
    /// `qbittorrent-nox --version`.
    pub version: String,
    _dir: tempfile::TempDir,
}

/// `qbittorrent-nox --version`, or `None` when it is not installed.
pub fn qbittorrent_nox_version() -> Option<String> {
    let out = Command::new("qbittorrent-nox")
        .arg("--version")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// qBittorrent's password hash (`Password_PBKDF2`): PBKDF2-HMAC-SHA512, 100,000
/// iterations, a 16-byte salt, 64 bytes, `salt:key` in base64, computed by Python's
/// hashlib (no Rust crate for SHA-512 PBKDF2 is a dependency).
fn qbt_password_hash(password: &str) -> String {
    let script = "import hashlib,base64,os,sys\ns=os.urandom(16)\nk=hashlib.pbkdf2_hmac('sha512',sys.argv[1].encode(),s,100000,64)\nprint(base64.b64encode(s).decode()+':'+base64.b64encode(k).decode())";
    let out = Command::new("python3")
        .args(["-c", script, password])
        .output()
        .expect("python3");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl QbtNox {
    /// Start it with `username` / `password`, or `None` (with a message on stderr) when
    /// qbittorrent-nox is not installed.
    ///
    /// # Panics
    /// When it is installed but its Web UI does not come up within 30 s.
    pub fn start(username: &str, password: &str) -> Option<QbtNox> {
        let Some(version) = qbittorrent_nox_version() else {
            eprintln!(
                "SKIPPED: qbittorrent-nox is not installed (apt-get install qbittorrent-nox)"
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("ratorrent-qbt-")
            .tempdir()
            .expect("tempdir");
        let conf_dir = dir.path().join("profile/qBittorrent/config");
        std::fs::create_dir_all(&conf_dir).unwrap();
        let dl = dir.path().join("dl");
        std::fs::create_dir_all(&dl).unwrap();
        let web_port = super::free_port();
        let bt_port = super::free_port();
        let conf = format!(
            "[LegalNotice]\nAccepted=true\n\n[BitTorrent]\nSession\\DHTEnabled=false\nSession\\LSDEnabled=false\nSession\\PeXEnabled=false\nSession\\Port={bt_port}\nSession\\InterfaceAddress=127.0.0.1\nSession\\DefaultSavePath={}\nSession\\AnonymousModeEnabled=false\n\n[Preferences]\nWebUI\\Address=127.0.0.1\nWebUI\\Port={web_port}\nWebUI\\Username={username}\nWebUI\\Password_PBKDF2=\"@ByteArray({})\"\nWebUI\\UseUPnP=false\nConnection\\UPnP=false\nGeneral\\Locale=en\n",
            dl.display(),
            qbt_password_hash(password)
        );
        std::fs::write(conf_dir.join("qBittorrent.conf"), conf).unwrap();
        let child = Command::new("qbittorrent-nox")
            .arg(format!(
                "--profile={}",
                dir.path().join("profile").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start qbittorrent-nox");
        let addr = format!("127.0.0.1:{web_port}");
        let mut q = QbtNox {
            child,
            base: format!("http://{addr}"),
            dl,
            version,
            _dir: dir,
        };
        if !wait_listening(&addr, Duration::from_secs(30)) {
            let _ = q.child.kill();
            panic!("qbittorrent-nox never listened on {addr}");
        }
        Some(q)
    }

    /// Its log file so far (`<profile>/qBittorrent/data/logs/qbittorrent.log`), for failure
    /// messages; empty when it wrote none.
    pub fn log(&self) -> String {
        std::fs::read_to_string(
            self._dir
                .path()
                .join("profile/qBittorrent/data/logs/qbittorrent.log"),
        )
        .unwrap_or_default()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for QbtNox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
