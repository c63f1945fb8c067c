//! The byte streams a connection runs on: [`Transport`] (anything that splits into a read
//! and a write half: TCP, uTP, an encrypted stream later, in-memory pipes in tests) and
//! [`PeerStream`], a handshaken stream on its way from the listener or a dial to its
//! torrent.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::peer::utp::UtpStream;

/// A byte stream a peer connection can run on: it splits into independent read and write
/// halves (TCP: `into_split`, lock-free).
pub trait Transport: Send + 'static {
    /// Read half.
    type Reader: AsyncRead + Unpin + Send + 'static;
    /// Write half.
    type Writer: AsyncWrite + Unpin + Send + 'static;
    /// Split the stream.
    fn split(self) -> (Self::Reader, Self::Writer);
}

impl Transport for TcpStream {
    type Reader = tokio::net::tcp::OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;
    fn split(self) -> (Self::Reader, Self::Writer) {
        self.into_split()
    }
}

impl Transport for UtpStream {
    type Reader = UtpStream;
    type Writer = UtpStream;
    fn split(self) -> (Self::Reader, Self::Writer) {
        UtpStream::split(self)
    }
}

impl Transport for tokio::io::DuplexStream {
    type Reader = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Writer = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    fn split(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
    }
}

/// A handshaken stream on its way from the listener or a dial to the torrent.
#[derive(Debug)]
pub enum PeerStream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// uTP (BEP 29).
    Utp(UtpStream),
}

impl PeerStream {
    /// Over uTP.
    pub fn is_utp(&self) -> bool {
        matches!(self, PeerStream::Utp(_))
    }
}
