//! How the contract's data is serialised where serde's default form does not fit (the
//! daemon's control socket, [`crate::control`], carries it with postcard):
//! - paths as their raw bytes: a Unix path need not be UTF-8, and serde's own form of a
//!   `PathBuf` fails on one that is not ([`path`], [`opt_path`]);
//! - a piece map as runs of one state ([`piece_runs`]): a torrent of 100,000 pieces
//!   downloading in order is a handful of runs, not 100,000 bytes per snapshot.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `PathBuf` as bytes (`#[serde(with = "serde_forms::path")]`).
pub mod path {
    use super::*;

    /// Write the path's bytes.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(p.as_os_str().as_bytes())
    }

    /// Read a path from bytes.
    ///
    /// # Errors
    /// Those of the deserializer (the input is not a byte string).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        let bytes: Vec<u8> = Bytes::deserialize(d)?.0;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
    }
}

/// An `Option<PathBuf>` as optional bytes (`#[serde(with = "serde_forms::opt_path")]`).
pub mod opt_path {
    use super::*;

    /// Write `None` or the path's bytes.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        p.as_ref()
            .map(|p| Bytes(p.as_os_str().as_bytes().to_vec()))
            .serialize(s)
    }

    /// Read `None` or a path from bytes.
    ///
    /// # Errors
    /// Those of the deserializer.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        let bytes: Option<Bytes> = Option::deserialize(d)?;
        Ok(bytes.map(|b| PathBuf::from(std::ffi::OsString::from_vec(b.0))))
    }
}

/// Bytes as one byte string (not a sequence of numbers).
struct Bytes(Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bytes, E> {
                Ok(Bytes(v.as_bytes().to_vec()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Bytes, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes(out))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

/// A piece map (`Arc<[PieceState]>`) as runs: `(state, count)` pairs in piece order
/// (`#[serde(with = "serde_forms::piece_runs")]`).
pub mod piece_runs {
    use std::sync::Arc;

    use super::*;
    use crate::api::PieceState;

    /// Most pieces a map read back may hold (a torrent's piece count is a `u32`; a
    /// hostile stream must not make the reader allocate more than the pieces of the
    /// largest torrent the engine accepts).
    pub const MAX_PIECES: u64 = 1 << 24;

    /// Write the map as runs.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(pieces: &Arc<[PieceState]>, s: S) -> Result<S::Ok, S::Error> {
        let mut runs: Vec<(PieceState, u32)> = Vec::new();
        for &p in pieces.iter() {
            match runs.last_mut() {
                Some((state, n)) if *state == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        runs.serialize(s)
    }

    /// Read runs back into a map.
    ///
    /// # Errors
    /// Those of the deserializer; more than [`MAX_PIECES`] pieces in all.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[PieceState]>, D::Error> {
        let runs: Vec<(PieceState, u32)> = Vec::deserialize(d)?;
        let total: u64 = runs.iter().map(|(_, n)| u64::from(*n)).sum();
        if total > MAX_PIECES {
            return Err(serde::de::Error::custom(format!(
                "a piece map of {total} pieces (at most {MAX_PIECES})"
            )));
        }
        let mut out = Vec::with_capacity(total as usize);
        for (state, n) in runs {
            out.extend(std::iter::repeat_n(state, n as usize));
        }
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::PieceState;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Paths {
        #[serde(with = "path")]
        p: PathBuf,
        #[serde(with = "opt_path")]
        o: Option<PathBuf>,
        #[serde(with = "piece_runs")]
        pieces: Arc<[PieceState]>,
    }

    #[test]
    fn paths_that_are_not_utf8_and_piece_runs_round_trip() {
        let raw = PathBuf::from(std::ffi::OsString::from_vec(b"/d/caf\xe9".to_vec()));
        let mut pieces = vec![PieceState::Have; 10_000];
        pieces.extend([PieceState::Downloading; 3]);
        pieces.extend([PieceState::Missing; 90_000]);
        for v in [
            Paths {
                p: raw.clone(),
                o: Some(raw),
                pieces: pieces.into(),
            },
            Paths {
                p: PathBuf::from("/ok"),
                o: None,
                pieces: Arc::from(Vec::new()),
            },
        ] {
            let bytes = postcard::to_stdvec(&v).unwrap();
            assert!(
                bytes.len() < 40,
                "runs, not one byte a piece: {}",
                bytes.len()
            );
            let back: Paths = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(back, v);
        }
    }

    #[test]
    fn a_huge_piece_count_is_refused_before_allocating() {
        let runs = vec![(PieceState::Have, u32::MAX), (PieceState::Have, u32::MAX)];
        let mut bytes = postcard::to_stdvec(&PathBuf::from("/x").as_os_str().as_bytes()).unwrap();
        bytes.extend(postcard::to_stdvec(&None::<Vec<u8>>).unwrap());
        bytes.extend(postcard::to_stdvec(&runs).unwrap());
        let err = postcard::from_bytes::<Paths>(&bytes).unwrap_err();
        assert!(matches!(err, postcard::Error::SerdeDeCustom), "{err:?}");
    }
}
