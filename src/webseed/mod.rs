//! Web seeds (BEP 19, "GetRight style"): a torrent's `url-list` names HTTP(S) servers that
//! hold its files as plain files, fetched with Range requests.
//!
//! This module is the service below the engine: where each file of a torrent is on a
//! server ([`FileUrls`]: BEP 19's URL rule, percent-encoded), and one checked Range GET of
//! one file ([`fetch::get_range`]: status, `Content-Range`, `Content-Length`, a body that is
//! exactly the range asked for, a minimum rate). What to fetch and where the bytes go (the
//! picker, the disk threads, back-off) is the engine's (`engine/webseed/`).
//!
//! URL rule (BEP 19, as libtorrent applies it): for a single-file torrent the URL is the
//! file's, unless it ends in `/`, then the torrent's name is appended; for a multi-file
//! torrent it is a folder: `url/` + name + `/` + the file's path, each component
//! percent-encoded (everything but the unreserved characters of RFC 3986). The names are
//! the torrent's own (`name.utf-8` / `path.utf-8` when given), not the sanitised names used
//! on disk: the server holds the files as the torrent names them.

pub mod fetch;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::metainfo::Metainfo;

pub use fetch::{Body, WebSeedError};

/// Characters escaped in a path component: everything but RFC 3986's unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One path component, percent-encoded.
fn escape(component: &str) -> String {
    utf8_percent_encode(component, COMPONENT).to_string()
}

/// The URL of one file on the web seed `base` (BEP 19): `base` itself for a single-file
/// torrent (with `name` appended when it ends in `/`); for a multi-file torrent
/// `base/name/path...` (a `/` added after `base` when it has none). `name` and `path` are
/// the torrent's own names; each component is percent-encoded. A query or fragment of
/// `base` stays at the end of the URL.
pub fn file_url(base: &str, name: &str, path: &[String], multi_file: bool) -> String {
    let cut = base.find(['?', '#']).unwrap_or(base.len());
    let (head, tail) = base.split_at(cut);
    let mut url = head.to_owned();
    if multi_file {
        if !url.ends_with('/') {
            url.push('/');
        }
        url.push_str(&escape(name));
        for c in path {
            url.push('/');
            url.push_str(&escape(c));
        }
    } else if url.ends_with('/') {
        url.push_str(&escape(name));
    }
    url.push_str(tail);
    url
}

/// Where each file of a torrent is on one web seed: a URL per file with bytes on the
/// server (`None` for padding files, which the server does not hold, and empty files,
/// which need no request).
#[derive(Debug, Clone)]
pub struct FileUrls {
    /// The web seed as the torrent gives it.
    pub base: String,
    /// Per file of the torrent, in torrent order (padding files included).
    urls: Vec<Option<reqwest::Url>>,
}

impl FileUrls {
    /// The file URLs of `meta` on web seed `base`.
    ///
    /// # Errors
    /// `base` (or a URL made of it) is not an absolute `http://` or `https://` URL with a
    /// host: the text says why.
    pub fn new(base: &str, meta: &Metainfo) -> Result<FileUrls, String> {
        use crate::net::url::{HttpUrlError, check_http_url};
        check_http_url(base).map_err(|e| match e {
            HttpUrlError::Invalid(why) => why,
            HttpUrlError::Scheme(s) => crate::net::url::unfetchable_scheme(&s),
        })?;
        let mut urls = Vec::with_capacity(meta.files.len());
        for f in &meta.files {
            if f.pad || f.length == 0 {
                urls.push(None);
                continue;
            }
            let text = file_url(base, &meta.name, &f.display_path, meta.multi_file);
            let url = reqwest::Url::parse(&text).map_err(|e| format!("{e}: {text}"))?;
            urls.push(Some(url));
        }
        Ok(FileUrls {
            base: base.to_owned(),
            urls,
        })
    }

    /// The URL of file `index` (`None` for a padding or empty file, or past the end).
    pub fn url(&self, index: usize) -> Option<&reqwest::Url> {
        self.urls.get(index).and_then(Option::as_ref)
    }
}

/// Exponential back-off of a failing server: 5 s after the first failure, doubled for each
/// one that follows, at most [`BACKOFF_MAX`]. `failures` counts the failures in a row
/// (from 1).
pub fn backoff(failures: u32) -> std::time::Duration {
    let secs = BACKOFF_FIRST
        .as_secs()
        .saturating_mul(1u64 << failures.saturating_sub(1).min(16));
    std::time::Duration::from_secs(secs.min(BACKOFF_MAX.as_secs()))
}

/// The first back-off of a failing web seed.
pub const BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_secs(5);
/// The longest back-off of a failing web seed (5 min).
pub const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_single_file_url_is_used_as_is_unless_it_names_a_folder() {
        assert_eq!(
            file_url("http://h/f.iso", "x.iso", &s(&["x.iso"]), false),
            "http://h/f.iso"
        );
        assert_eq!(
            file_url("http://h/pub/", "a b.iso", &s(&["a b.iso"]), false),
            "http://h/pub/a%20b.iso"
        );
    }

    #[test]
    fn a_multi_file_url_is_base_name_and_path_percent_encoded() {
        assert_eq!(
            file_url(
                "http://h/pub",
                "My Set",
                &s(&["sub dir", "é&?#%.bin"]),
                true
            ),
            "http://h/pub/My%20Set/sub%20dir/%C3%A9%26%3F%23%25.bin"
        );
        assert_eq!(
            file_url("http://h/pub/", "n", &s(&["a", "b-c_d~e.f"]), true),
            "http://h/pub/n/a/b-c_d~e.f"
        );
        // a query stays at the end
        assert_eq!(
            file_url("http://h/pub/?k=1", "n", &s(&["a"]), true),
            "http://h/pub/n/a?k=1"
        );
    }

    fn meta(info: &str) -> Metainfo {
        let bytes = format!("d4:info{info}e");
        Metainfo::from_bytes(bytes.as_bytes()).unwrap()
    }

    #[test]
    fn file_urls_use_the_torrents_own_names_and_skip_pads_and_empty_files() {
        let pieces = "x".repeat(20);
        let m = meta(&format!(
            "d5:filesld6:lengthi3e4:pathl3:sub5:a b.ceed6:lengthi0e4:pathl5:emptyeed4:attr1:p6:lengthi2e4:pathl4:.pad1:2eed6:lengthi4e4:pathl2:..1:zeee4:name4:top/12:piece lengthi16384e6:pieces20:{pieces}e"
        ));
        let u = FileUrls::new("https://m.example/d", &m).unwrap();
        assert_eq!(
            u.url(0).unwrap().as_str(),
            "https://m.example/d/top%2F/sub/a%20b.c"
        );
        assert!(u.url(1).is_none(), "an empty file needs no request");
        assert!(u.url(2).is_none(), "a padding file is made locally");
        // `..` stays a name on the server (the files on disk are sanitised apart)
        assert!(u.url(3).is_some());
        assert!(u.url(9).is_none());
    }

    #[test]
    fn only_http_and_https_web_seeds_are_used() {
        let pieces = "x".repeat(20);
        let m = meta(&format!(
            "d6:lengthi5e4:name1:a12:piece lengthi16384e6:pieces20:{pieces}e"
        ));
        for bad in [
            "file:///etc/passwd",
            "ftp://h/a",
            "javascript:alert(1)",
            "",
            "http://",
        ] {
            assert!(FileUrls::new(bad, &m).is_err(), "{bad}");
        }
        assert_eq!(
            FileUrls::new("file:///etc/passwd", &m).unwrap_err(),
            "only http:// and https:// URLs can be fetched, not file://"
        );
        let u = FileUrls::new("http://127.0.0.1:8/a.iso", &m).unwrap();
        assert_eq!(u.url(0).unwrap().as_str(), "http://127.0.0.1:8/a.iso");
    }

    #[test]
    fn back_off_doubles_from_5_s_to_5_min() {
        let secs: Vec<u64> = (1..=9).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(backoff(0).as_secs(), 5);
        assert_eq!(backoff(u32::MAX).as_secs(), 300);
    }
}
