//! The listening socket and its connections: HTTP/1.1 (hyper) with keep-alive, at most
//! [`MAX_CONNECTIONS`] at once (more are closed at once), request headers within
//! [`HEADER_TIMEOUT`], a connection closed gracefully after [`CONNECTION_LIFETIME`],
//! bodies bounded ([`super::params`]). Requests go through an axum router (one
//! route, `/api/v2/{scope}/{action}`, and a `404` for the rest) to
//! [`super::dispatch::handle`], with the client's address.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::Response;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower::ServiceExt;

use super::dispatch::{self, Api};
use super::params::MAX_BODY;

/// Most connections open at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Longest wait for a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection is closed after this long, once its request in progress is answered
/// (clients open a new one): an idle keep-alive connection holds no slot for long.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);
/// Longest a handler may take (an add by URL waits for its fetch: `add_url_timeout` is
/// at most 600 s).
pub const HANDLER_TIMEOUT: Duration = Duration::from_secs(660);

/// The client's address, put on each request.
#[derive(Debug, Clone, Copy)]
struct Peer(SocketAddr);

/// The router: every path to [`dispatch::handle`] (it answers `404` for what is not an
/// endpoint), bodies up to [`MAX_BODY`].
fn router(api: Arc<Api>) -> Router {
    Router::new()
        .fallback(entry)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(api)
}

async fn entry(State(api): State<Arc<Api>>, req: Request) -> Response<Body> {
    let peer = req
        .extensions()
        .get::<Peer>()
        .map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), |p| p.0);
    match tokio::time::timeout(HANDLER_TIMEOUT, dispatch::handle(api, peer, req)).await {
        Ok(r) => r,
        Err(_) => {
            let mut r = Response::new(Body::from("the request took too long"));
            *r.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
            r
        }
    }
}

/// Accept connections on `listener` until `stop` turns true.
pub async fn run(
    listener: TcpListener,
    api: Arc<Api>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let app = router(api);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.changed() => break,
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    // out of file descriptors and the like: wait, do not spin
                    tracing::warn!("Web API accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // full: closed at once (the client retries)
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service =
                hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(Peer(peer));
                    let app = app.clone();
                    async move {
                        let r = app.oneshot(req.map(Body::new)).await;
                        Ok::<_, Infallible>(r.unwrap_or_else(|e| match e {}))
                    }
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(true)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let age = tokio::time::sleep(CONNECTION_LIFETIME);
            let mut age = std::pin::pin!(age);
            let mut closing = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!("Web API connection from {peer}: {e}");
                        }
                        break;
                    }
                    _ = &mut age, if !closing => {
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                    _ = stop.changed(), if !closing => {
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        });
    }
}
