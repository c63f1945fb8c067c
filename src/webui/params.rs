//! A request's parameters, as qBittorrent reads them: the query string, and for a POST the
//! body as `application/x-www-form-urlencoded` or `multipart/form-data` (uploaded
//! `.torrent` files among them). A read endpoint takes its parameters from either (tools
//! POST every call, e.g. cross-seed).
//!
//! Bounded: a body larger than [`MAX_BODY`] (multipart) or [`MAX_FORM`] (a form) is
//! refused with `413`, at most [`MAX_FIELDS`] fields and [`MAX_FILES`] files; a body that
//! does not arrive within [`BODY_TIMEOUT`] is refused with `408`.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use axum::extract::FromRequest;
use axum::http::{Request, StatusCode, header};
use bytes::Bytes;

use super::dispatch::ApiError;

/// Largest multipart body: a `.torrent` file up to 32 MiB (`max_metadata_size`'s default)
/// and its form fields.
pub const MAX_BODY: usize = 33 << 20;
/// Largest url-encoded form body.
pub const MAX_FORM: usize = 4 << 20;
/// Largest text field of a multipart body.
pub const MAX_TEXT_FIELD: usize = 1 << 20;
/// Most fields of a multipart body.
pub const MAX_FIELDS: usize = 1000;
/// Most files of a multipart body.
pub const MAX_FILES: usize = 100;
/// Longest wait for a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// A file of a multipart body.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The file name the client gave (`show.torrent`), or the field's name.
    pub name: String,
    /// Its bytes.
    pub bytes: Bytes,
}

/// The parameters of one request: the last value of each name wins (body over query).
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: HashMap<String, String>,
    /// Files of a multipart body (field `torrents`, or any field with a file name).
    pub files: Vec<Upload>,
}

impl Params {
    /// Parameters from `pairs`.
    #[cfg(test)]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Params {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.values.insert(k.to_owned(), v.to_owned());
        }
        p
    }

    fn add_urlencoded(&mut self, text: &[u8]) {
        for (k, v) in form_urlencoded::parse(text) {
            self.values.insert(k.into_owned(), v.into_owned());
        }
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of `name`, `""` when not given (qBittorrent's `params()[name]`).
    pub fn text(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// The value of `name`, which must be given.
    ///
    /// # Errors
    /// `400 Bad Request` naming it (qBittorrent's `requireParams`).
    pub fn require(&self, name: &str) -> Result<&str, ApiError> {
        self.get(name)
            .ok_or_else(|| ApiError::BadParams(format!("Missing required parameter: {name}")))
    }

    /// `name` as qBittorrent's `parseBool`: `true` or `false` in any case, else `None`.
    pub fn bool(&self, name: &str) -> Option<bool> {
        let v = self.get(name)?.trim();
        if v.eq_ignore_ascii_case("true") {
            Some(true)
        } else if v.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }

    /// `name` as a whole number, `None` when not given or not a number.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.trim().parse().ok()
    }

    /// `name` as a number, `None` when not given or not a (finite) number.
    pub fn float(&self, name: &str) -> Option<f64> {
        self.get(name)?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
    }

    /// `name` split at `sep`, blanks dropped (`hashes` by `|`, `tags` by `,`, `urls` by new
    /// lines).
    pub fn list(&self, name: &str, sep: char) -> Vec<String> {
        self.text(name)
            .split(sep)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Read the parameters of `req`: its query, then its body for a POST (bounded in size,
/// fields and time).
///
/// # Errors
/// `413` for a body too large, `408` for one too slow, `400` for a multipart body that
/// does not parse.
pub async fn read(req: Request<Body>) -> Result<Params, ApiError> {
    let mut params = Params::default();
    if let Some(q) = req.uri().query() {
        params.add_urlencoded(q.as_bytes());
    }
    if req.method() != axum::http::Method::POST {
        return Ok(params);
    }
    let multipart = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        });
    let limit = if multipart { MAX_BODY } else { MAX_FORM };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        // refused before reading; the body is read and dropped (up to DRAIN_MAX) so that
        // the client, still sending, gets the 413 rather than a reset connection
        let _ = tokio::time::timeout(BODY_TIMEOUT, drain(req.into_body())).await;
        return Err(ApiError::TooLarge);
    }
    let body = async {
        if multipart {
            read_multipart(req, &mut params).await
        } else {
            let bytes = axum::body::to_bytes(req.into_body(), MAX_FORM)
                .await
                .map_err(|_| ApiError::TooLarge)?;
            params.add_urlencoded(&bytes);
            Ok(())
        }
    };
    match tokio::time::timeout(BODY_TIMEOUT, body).await {
        Ok(r) => r.map(|()| params),
        Err(_) => Err(ApiError::Status(
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive in time".into(),
        )),
    }
}

/// Most bytes of a refused body read and dropped.
pub const DRAIN_MAX: u64 = 256 << 20;

/// Read `body` to its end (at most [`DRAIN_MAX`] bytes), keeping nothing.
async fn drain(body: Body) {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut seen = 0u64;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len() as u64;
        if seen > DRAIN_MAX {
            return;
        }
    }
}

async fn read_multipart(req: Request<Body>, params: &mut Params) -> Result<(), ApiError> {
    let mut form = axum::extract::Multipart::from_request(req, &())
        .await
        .map_err(|e| ApiError::BadParams(format!("not a multipart form: {}", e.body_text())))?;
    let mut fields = 0;
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(()),
            Err(e) => return Err(multipart_error(&e)),
        };
        fields += 1;
        if fields > MAX_FIELDS {
            return Err(ApiError::Status(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("more than {MAX_FIELDS} form fields"),
            ));
        }
        let name = field.name().unwrap_or_default().to_owned();
        match field.file_name().map(str::to_owned) {
            Some(file) => {
                if params.files.len() >= MAX_FILES {
                    return Err(ApiError::Status(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("more than {MAX_FILES} files"),
                    ));
                }
                let bytes = field.bytes().await.map_err(|e| multipart_error(&e))?;
                let name = if file.is_empty() { name } else { file };
                params.files.push(Upload { name, bytes });
            }
            None => {
                let mut text = Vec::new();
                let mut field = field;
                while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(&e))? {
                    if text.len() + chunk.len() > MAX_TEXT_FIELD {
                        return Err(ApiError::TooLarge);
                    }
                    text.extend_from_slice(&chunk);
                }
                params
                    .values
                    .insert(name, String::from_utf8_lossy(&text).into_owned());
            }
        }
    }
}

fn multipart_error(e: &axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge
    } else {
        ApiError::BadParams(format!("bad multipart form: {}", e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_their_readings() {
        let p = Params::from_pairs([
            ("hashes", "a|b||c"),
            ("paused", "TRUE"),
            ("skip", "1"),
            ("ratioLimit", "1.5"),
            ("nan", "NaN"),
            ("tags", " hd , new,"),
            ("limit", "-3"),
        ]);
        assert_eq!(p.list("hashes", '|'), ["a", "b", "c"]);
        assert_eq!(p.list("tags", ','), ["hd", "new"]);
        assert_eq!(p.bool("paused"), Some(true));
        assert_eq!(
            p.bool("skip"),
            None,
            "qBittorrent's parseBool knows true/false only"
        );
        assert_eq!(p.float("ratioLimit"), Some(1.5));
        assert_eq!(p.float("nan"), None);
        assert_eq!(p.int("limit"), Some(-3));
        assert_eq!(p.text("missing"), "");
        assert!(p.require("missing").is_err());
        assert!(p.list("missing", '|').is_empty());
    }

    fn post(content_type: &str, body: impl Into<Body>) -> Request<Body> {
        Request::post("/api/v2/torrents/add?category=q")
            .header(header::CONTENT_TYPE, content_type)
            .body(body.into())
            .unwrap()
    }

    #[tokio::test]
    async fn a_form_body_wins_over_the_query() {
        let p = read(post(
            "application/x-www-form-urlencoded",
            "category=tv&urls=magnet%3A%3Fxt%3Durn",
        ))
        .await
        .unwrap();
        assert_eq!(p.text("category"), "tv");
        assert_eq!(p.text("urls"), "magnet:?xt=urn");
        // fetch() sends a text body as text/plain: read as a form all the same
        let p = read(post("text/plain;charset=UTF-8", "hashes=ab"))
            .await
            .unwrap();
        assert_eq!(p.text("hashes"), "ab");
        let get = Request::get("/x?hash=cd").body(Body::empty()).unwrap();
        assert_eq!(read(get).await.unwrap().text("hash"), "cd");
    }

    #[tokio::test]
    async fn multipart_fields_and_files() {
        let body = "--XX\r\nContent-Disposition: form-data; name=\"torrents\"; filename=\"a.torrent\"\r\nContent-Type: application/x-bittorrent\r\n\r\nd4:infoe\r\n--XX\r\nContent-Disposition: form-data; name=\"savepath\"\r\n\r\n/data/tv\r\n--XX--\r\n";
        let p = read(post("multipart/form-data; boundary=XX", body))
            .await
            .unwrap();
        assert_eq!(p.text("savepath"), "/data/tv");
        assert_eq!(p.text("category"), "q");
        assert_eq!(p.files.len(), 1);
        assert_eq!(p.files[0].name, "a.torrent");
        assert_eq!(&p.files[0].bytes[..], b"d4:infoe");
        // cut short: refused, no panic
        let e = read(post("multipart/form-data; boundary=XX", &body[..60]))
            .await
            .unwrap_err();
        assert!(matches!(e, ApiError::BadParams(_)), "{e:?}");
    }

    #[tokio::test]
    async fn a_form_too_large_is_refused() {
        let big = "a".repeat(MAX_FORM + 1);
        let e = read(post("application/x-www-form-urlencoded", big))
            .await
            .unwrap_err();
        assert!(matches!(e, ApiError::TooLarge), "{e:?}");
    }
}
