//! Binding the listen port: TCP and uTP (BEP 29) on the same port number, each when
//! `[peer] transports` names it, and the incoming connections they hand the session.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::config::engine::EngineConfig;
use crate::peer::utp::{UtpLimits, UtpSocket, UtpStream};

/// Tries at a free port number for both TCP and UDP when `listen_port` is 0.
const FREE_PORT_TRIES: usize = 20;

/// The bound listen port and its sockets.
#[derive(Debug)]
pub(super) struct Listeners {
    /// The port number (TCP and UDP).
    pub(super) port: u16,
    /// Incoming TCP connections, with TCP on.
    pub(super) tcp: Option<TcpListener>,
    /// The uTP socket, with uTP on.
    pub(super) utp: Option<Arc<UtpSocket>>,
    /// Incoming uTP connections, with uTP on.
    pub(super) utp_incoming: Option<mpsc::Receiver<UtpStream>>,
}

/// The uTP socket's limits from the session's: half-open as many as incoming handshakes
/// may wait ([`crate::engine::ctx::MAX_PENDING_INCOMING`]), and connections a little over
/// `max_connections` (dials in flight and closing ones too).
fn utp_limits(config: &EngineConfig) -> UtpLimits {
    UtpLimits {
        max_half_open: crate::engine::ctx::MAX_PENDING_INCOMING,
        max_connections: config.max_connections as usize + config.max_half_open as usize + 64,
    }
}

/// Bind the listen port (`0.0.0.0`) for the transports the config names; with port 0, a
/// number free for both.
///
/// # Errors
/// The port cannot be bound (in use, no permission), naming the protocol.
pub(super) async fn bind(config: &EngineConfig) -> anyhow::Result<Listeners> {
    let (tcp_on, utp_on) = (config.peer.tcp(), config.peer.utp());
    let tries = if config.listen_port == 0 && tcp_on && utp_on {
        FREE_PORT_TRIES
    } else {
        1
    };
    let mut last_err = None;
    for _ in 0..tries {
        let tcp = if tcp_on {
            Some(
                TcpListener::bind((Ipv4Addr::UNSPECIFIED, config.listen_port))
                    .await
                    .with_context(|| {
                        format!(
                            "cannot listen for peers on TCP port {} (set listen_port in the \
                             config or use --port)",
                            config.listen_port
                        )
                    })?,
            )
        } else {
            None
        };
        let port = match &tcp {
            Some(l) => l.local_addr()?.port(),
            None => config.listen_port,
        };
        if !utp_on {
            return Ok(Listeners {
                port,
                tcp,
                utp: None,
                utp_incoming: None,
            });
        }
        let addr = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
        match UtpSocket::bind(addr, utp_limits(config), true) {
            Ok((sock, incoming)) => {
                let port = sock.local_addr()?.port();
                let (snd, rcv) = sock.buffer_sizes();
                tracing::debug!(port, snd, rcv, "uTP socket bound (buffers in bytes)");
                return Ok(Listeners {
                    port,
                    tcp,
                    utp: Some(Arc::new(sock)),
                    utp_incoming: incoming,
                });
            }
            Err(e) => last_err = Some((port, e)),
        }
    }
    let (port, e) = last_err.expect("at least one try");
    Err(anyhow::anyhow!(
        "cannot listen for uTP peers on UDP port {port}: {e} (set listen_port in the config \
         or use --port, or [peer] transports = [\"tcp\"])"
    ))
}
