//! A tolerant, zero-copy bencode decoder (BEP 3 §bencoding).
//!
//! `bendy` (used for encoding) refuses dictionaries whose keys are unsorted or repeated,
//! which real .torrent files, trackers and peers do send. This decoder accepts them,
//! keeps every value as a borrowed slice of the input, and records the raw bytes of each
//! dictionary so that the info hash is taken over the bytes exactly as they appeared.
//!
//! Limits: nesting deeper than [`MAX_DEPTH`] is an error (no stack overflow on hostile
//! input); string lengths are checked against the remaining input before any use, so a
//! decoder never allocates from a length it read.

use std::fmt;

/// Deepest nesting of lists/dictionaries accepted. Real metainfo nests fewer than 10 levels.
pub const MAX_DEPTH: usize = 64;

/// A decoded bencode value borrowing from the input buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// `i<n>e`: a signed 64-bit integer.
    Int(i64),
    /// `<len>:<bytes>`: a byte string (not necessarily UTF-8).
    Bytes(&'a [u8]),
    /// `l...e`
    List(Vec<Value<'a>>),
    /// `d...e`
    Dict(Dict<'a>),
}

/// A dictionary in input order, with the raw bytes it was decoded from (`d` to `e`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dict<'a> {
    /// Key/value pairs in the order they appeared (unsorted and repeated keys kept).
    pub entries: Vec<(&'a [u8], Value<'a>)>,
    /// The exact input bytes of this dictionary, `d` through `e`.
    pub raw: &'a [u8],
}

impl<'a> Dict<'a> {
    /// The first value stored under `key`, if any.
    pub fn get(&self, key: &[u8]) -> Option<&Value<'a>> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value under `key` if it is an integer.
    pub fn get_int(&self, key: &[u8]) -> Option<i64> {
        self.get(key).and_then(Value::as_int)
    }

    /// The value under `key` if it is a byte string.
    pub fn get_bytes(&self, key: &[u8]) -> Option<&'a [u8]> {
        self.get(key).and_then(Value::as_bytes)
    }

    /// The value under `key` if it is a UTF-8 byte string.
    pub fn get_str(&self, key: &[u8]) -> Option<&'a str> {
        self.get_bytes(key)
            .and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The value under `key` if it is a dictionary.
    pub fn get_dict(&self, key: &[u8]) -> Option<&Dict<'a>> {
        self.get(key).and_then(Value::as_dict)
    }

    /// The value under `key` if it is a list.
    pub fn get_list(&self, key: &[u8]) -> Option<&[Value<'a>]> {
        self.get(key).and_then(Value::as_list)
    }
}

impl<'a> Value<'a> {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The byte string, if this is one.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The byte string as UTF-8, if this is a valid UTF-8 string.
    pub fn as_str(&self) -> Option<&'a str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The list items, if this is a list.
    pub fn as_list(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The dictionary, if this is one.
    pub fn as_dict(&self) -> Option<&Dict<'a>> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// A short name of the value's type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "integer",
            Value::Bytes(_) => "string",
            Value::List(_) => "list",
            Value::Dict(_) => "dictionary",
        }
    }
}

/// Why a buffer is not valid bencode. `offset` is the byte position of the fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ended inside a value.
    #[error("bencode truncated: input ends inside a value (offset {offset})")]
    UnexpectedEof {
        /// Byte offset where more input was needed.
        offset: usize,
    },
    /// A byte that cannot start or continue a value.
    #[error("invalid bencode: unexpected byte {byte:?} at offset {offset}")]
    UnexpectedByte {
        /// The offending byte, shown as a char when printable.
        byte: ByteChar,
        /// Its offset.
        offset: usize,
    },
    /// An integer with a leading zero, `-0`, no digits, or out of `i64` range.
    #[error("invalid bencode integer: {reason} ({text})")]
    BadInteger {
        /// What is wrong with it.
        reason: &'static str,
        /// The integer as written, e.g. `i020000e` (cut to 32 bytes).
        text: String,
        /// Offset of its first byte.
        offset: usize,
    },
    /// A string length prefix that is larger than the rest of the input.
    #[error(
        "invalid bencode: string length {len} at offset {offset} exceeds the remaining {remaining} bytes"
    )]
    StringTooLong {
        /// Declared length.
        len: u64,
        /// Offset of the length prefix.
        offset: usize,
        /// Bytes actually left.
        remaining: usize,
    },
    /// A dictionary key that is not a byte string.
    #[error("invalid bencode: dictionary key at offset {offset} is not a string")]
    NonStringKey {
        /// Offset of the key.
        offset: usize,
    },
    /// Lists/dictionaries nested deeper than [`MAX_DEPTH`].
    #[error("bencode nesting too deep (more than {max} levels at offset {offset})")]
    TooDeep {
        /// The limit.
        max: usize,
        /// Where the limit was crossed.
        offset: usize,
    },
    /// Bytes after the top-level value (only from [`decode`]).
    #[error("invalid bencode: {count} trailing bytes after the value (offset {offset})")]
    TrailingBytes {
        /// How many bytes follow.
        count: usize,
        /// Offset of the first one.
        offset: usize,
    },
}

/// A byte printed as a character when it is printable ASCII, else as `0xNN`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ByteChar(pub u8);

impl fmt::Debug for ByteChar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii_graphic() {
            write!(f, "'{}'", self.0 as char)
        } else {
            write!(f, "0x{:02x}", self.0)
        }
    }
}

/// Decode exactly one value that must fill the whole buffer.
///
/// # Errors
/// Any [`DecodeError`], including [`DecodeError::TrailingBytes`].
pub fn decode(input: &[u8]) -> Result<Value<'_>, DecodeError> {
    let (value, used) = decode_prefix(input)?;
    if used != input.len() {
        return Err(DecodeError::TrailingBytes {
            count: input.len() - used,
            offset: used,
        });
    }
    Ok(value)
}

/// Decode one value at the start of `input`; returns it and the number of bytes it used.
/// Used where a bencoded header is followed by raw payload (BEP 9 `ut_metadata` data).
///
/// # Errors
/// Any [`DecodeError`] except `TrailingBytes`.
pub fn decode_prefix(input: &[u8]) -> Result<(Value<'_>, usize), DecodeError> {
    let mut p = Parser { input, pos: 0 };
    let v = p.value(0)?;
    Ok((v, p.pos))
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Result<u8, DecodeError> {
        self.input
            .get(self.pos)
            .copied()
            .ok_or(DecodeError::UnexpectedEof { offset: self.pos })
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, DecodeError> {
        match self.peek()? {
            b'i' => self.int().map(Value::Int),
            b'0'..=b'9' => self.bytes().map(Value::Bytes),
            b'l' => {
                let depth = self.enter(depth)?;
                self.pos += 1;
                let mut items = Vec::new();
                while self.peek()? != b'e' {
                    items.push(self.value(depth)?);
                }
                self.pos += 1;
                Ok(Value::List(items))
            }
            b'd' => {
                let depth = self.enter(depth)?;
                let start = self.pos;
                self.pos += 1;
                let mut entries = Vec::new();
                loop {
                    let b = self.peek()?;
                    if b == b'e' {
                        break;
                    }
                    if !b.is_ascii_digit() {
                        return Err(DecodeError::NonStringKey { offset: self.pos });
                    }
                    let key = self.bytes()?;
                    let value = self.value(depth)?;
                    entries.push((key, value));
                }
                self.pos += 1;
                Ok(Value::Dict(Dict {
                    entries,
                    raw: &self.input[start..self.pos],
                }))
            }
            b => Err(DecodeError::UnexpectedByte {
                byte: ByteChar(b),
                offset: self.pos,
            }),
        }
    }

    fn enter(&self, depth: usize) -> Result<usize, DecodeError> {
        if depth >= MAX_DEPTH {
            Err(DecodeError::TooDeep {
                max: MAX_DEPTH,
                offset: self.pos,
            })
        } else {
            Ok(depth + 1)
        }
    }

    /// `i<digits>e`
    fn int(&mut self) -> Result<i64, DecodeError> {
        let start = self.pos;
        self.pos += 1; // 'i'
        let digits_start = self.pos;
        let end = self.input[digits_start..]
            .iter()
            .position(|&b| b == b'e')
            .map(|i| digits_start + i)
            .ok_or(DecodeError::UnexpectedEof {
                offset: self.input.len(),
            })?;
        let text = &self.input[digits_start..end];
        let bad = |reason| DecodeError::BadInteger {
            reason,
            text: String::from_utf8_lossy(&self.input[start..(end + 1).min(start + 32)])
                .into_owned(),
            offset: start,
        };
        let (neg, digits) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad("not a decimal number"));
        }
        if digits.len() > 1 && digits[0] == b'0' {
            return Err(bad("leading zero"));
        }
        if neg && digits == b"0" {
            return Err(bad("negative zero"));
        }
        let mut v: i64 = 0;
        for &d in digits {
            let d = i64::from(d - b'0');
            v = v
                .checked_mul(10)
                .and_then(|v| {
                    if neg {
                        v.checked_sub(d)
                    } else {
                        v.checked_add(d)
                    }
                })
                .ok_or_else(|| bad("out of 64-bit range"))?;
        }
        self.pos = end + 1;
        Ok(v)
    }

    /// `<len>:<bytes>`
    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let mut len: u64 = 0;
        loop {
            let b = self.peek()?;
            match b {
                b'0'..=b'9' => {
                    if self.pos > start && self.input[start] == b'0' {
                        return Err(DecodeError::UnexpectedByte {
                            byte: ByteChar(b),
                            offset: self.pos,
                        });
                    }
                    len = len.saturating_mul(10).saturating_add(u64::from(b - b'0'));
                    self.pos += 1;
                }
                b':' if self.pos > start => {
                    self.pos += 1;
                    break;
                }
                _ => {
                    return Err(DecodeError::UnexpectedByte {
                        byte: ByteChar(b),
                        offset: self.pos,
                    });
                }
            }
        }
        let remaining = self.input.len() - self.pos;
        if len > remaining as u64 {
            return Err(DecodeError::StringTooLong {
                len,
                offset: start,
                remaining,
            });
        }
        let s = &self.input[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(decode(b"i42e").unwrap(), Value::Int(42));
        assert_eq!(decode(b"i-7e").unwrap(), Value::Int(-7));
        assert_eq!(decode(b"i0e").unwrap(), Value::Int(0));
        assert_eq!(decode(b"4:spam").unwrap(), Value::Bytes(b"spam"));
        assert_eq!(decode(b"0:").unwrap(), Value::Bytes(b""));
        assert_eq!(
            decode(&b"i9223372036854775807e"[..]).unwrap(),
            Value::Int(i64::MAX)
        );
        assert_eq!(
            decode(&b"i-9223372036854775808e"[..]).unwrap(),
            Value::Int(i64::MIN)
        );
    }

    #[test]
    fn bad_integers_are_named() {
        for (input, reason) in [
            (&b"i020000e"[..], "leading zero"),
            (b"i-0e", "negative zero"),
            (b"i-01e", "leading zero"),
            (b"ie", "not a decimal number"),
            (b"i1x2e", "not a decimal number"),
            (b"i9223372036854775808e", "out of 64-bit range"),
        ] {
            match decode(input) {
                Err(DecodeError::BadInteger { reason: r, .. }) => assert_eq!(r, reason),
                other => panic!("{input:?}: {other:?}"),
            }
        }
        let msg = decode(b"i020000e").unwrap_err().to_string();
        assert_eq!(msg, "invalid bencode integer: leading zero (i020000e)");
    }

    #[test]
    fn unsorted_and_repeated_keys_are_kept_in_order() {
        let input = b"d3:zzzi1e3:aaai2e3:zzzi3ee";
        let v = decode(input).unwrap();
        let d = v.as_dict().unwrap();
        let keys: Vec<_> = d.entries.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, vec![&b"zzz"[..], b"aaa", b"zzz"]);
        assert_eq!(d.get_int(b"zzz"), Some(1));
        assert_eq!(d.raw, &input[..]);
    }

    #[test]
    fn raw_span_of_nested_dict() {
        let input = b"d4:infod1:xi1e1:ali1eee3:fooi2ee";
        let v = decode(input).unwrap();
        let info = v.as_dict().unwrap().get_dict(b"info").unwrap();
        assert_eq!(info.raw, b"d1:xi1e1:ali1eee");
    }

    #[test]
    fn depth_bomb_fails_cleanly() {
        for open in [b'l', b'd'] {
            let mut input = vec![b'd', b'1', b':', b'x'];
            for _ in 0..100_000 {
                input.push(open);
                if open == b'd' {
                    input.extend_from_slice(b"1:k");
                }
            }
            assert!(matches!(decode(&input), Err(DecodeError::TooDeep { .. })));
        }
        // exactly MAX_DEPTH levels is fine
        let mut ok = vec![b'l'; MAX_DEPTH];
        ok.extend(vec![b'e'; MAX_DEPTH]);
        assert!(decode(&ok).is_ok());
        let mut bad = vec![b'l'; MAX_DEPTH + 1];
        bad.extend(vec![b'e'; MAX_DEPTH + 1]);
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn truncation_and_garbage() {
        for input in [
            &b""[..],
            b"d",
            b"l",
            b"i12",
            b"5:abc",
            b"d3:foo",
            b"<html>",
            b"d1:ai1e",
            b"di1ei2ee",
            b"18446744073709551616:x",
            b"99999999999999999999999999:x",
            b"01:a",
        ] {
            assert!(decode(input).is_err(), "{input:?} accepted");
        }
        assert!(matches!(
            decode(b"i1ei2e"),
            Err(DecodeError::TrailingBytes { count: 3, .. })
        ));
    }

    #[test]
    fn prefix_decoding_reports_length() {
        let input = b"d8:msg_typei1e5:piecei0eeRAWPAYLOAD";
        let (v, used) = decode_prefix(input).unwrap();
        assert_eq!(&input[used..], b"RAWPAYLOAD");
        assert_eq!(v.as_dict().unwrap().get_int(b"piece"), Some(0));
    }

    #[test]
    fn never_panics_on_any_prefix_of_valid_input() {
        let input = b"d8:announce3:url4:infod6:lengthi5e4:name1:a12:piece lengthi16384e6:pieces20:aaaaaaaaaaaaaaaaaaaaee";
        for end in 0..input.len() {
            let _ = decode(&input[..end]);
        }
        for i in 0..input.len() {
            let mut m = input.to_vec();
            m[i] = m[i].wrapping_add(1);
            let _ = decode(&m);
        }
    }
}
