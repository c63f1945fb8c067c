//! Deterministic pseudo-random payloads for tests, and byte-for-byte tree comparison.
//!
//! Content comes from xorshift64* seeded per file (the tree seed mixed with an FNV-1a hash
//! of the file's relative path), so two files of a tree never share content and a payload
//! can be regenerated anywhere from `(layout, seed)`. Files are written in 1 MiB chunks.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::HarnessError;

/// Size of the write buffer, bytes.
const CHUNK: usize = 1 << 20;
/// Size of one compare read, bytes.
const CMP_CHUNK: usize = 64 * 1024;
/// A block (BEP 3 request size), bytes.
pub const BLOCK: u64 = 16 * 1024;

/// xorshift64* generator (Vigna 2014). Not cryptographic; fast and reproducible.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator for `seed` (any value; 0 is remapped, xorshift must not start at 0).
    pub fn new(seed: u64) -> XorShift {
        // SplitMix64 finaliser: nearby seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        XorShift(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Fill `buf` with the next bytes of the stream (little-endian words).
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut words = buf.chunks_exact_mut(8);
        for w in &mut words {
            w.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = words.into_remainder();
        if !rest.is_empty() {
            let last = self.next_u64().to_le_bytes();
            let n = rest.len();
            rest.copy_from_slice(last.get(..n).unwrap_or_default());
        }
    }
}

/// 64-bit FNV-1a of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The seed used for the file at `rel` (relative path) in a tree seeded with `seed`.
pub fn file_seed(seed: u64, rel: &Path) -> u64 {
    seed ^ fnv1a(rel.to_string_lossy().as_bytes())
}

/// The first `len` bytes of the stream for `seed`, in memory (for small files / assertions).
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    XorShift::new(seed).fill(&mut v);
    v
}

/// Write `len` bytes of the stream for `seed` to `path` (parent folders created, file
/// truncated). Identical to [`bytes`]`(len, seed)` on disk.
///
/// # Errors
/// Any I/O error creating or writing the file.
pub fn write_file(path: &Path, len: u64, seed: u64) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut out = BufWriter::with_capacity(CHUNK, File::create(path)?);
    let mut rng = XorShift::new(seed);
    let mut buf = vec![0u8; CHUNK];
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
        // `fill` consumes whole words; only the final chunk may end mid-word, so the
        // stream matches `bytes(len, seed)` exactly.
        let chunk = buf.get_mut(..n).unwrap_or_default();
        rng.fill(chunk);
        out.write_all(chunk)?;
        left -= n as u64;
    }
    out.flush()
}

/// One file of a payload tree: path relative to the tree root, length in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Relative path ('/'-separated components).
    pub path: PathBuf,
    /// Length, bytes.
    pub len: u64,
}

impl FileSpec {
    /// A file spec from a relative path and a length in bytes.
    pub fn new(path: impl Into<PathBuf>, len: u64) -> FileSpec {
        FileSpec {
            path: path.into(),
            len,
        }
    }
}

/// A multi-file layout of about `total` bytes (at least ~400 KiB) exercising the edge cases
/// of the piece/file mapping: a zero-length file, 1-byte file, files smaller than a block,
/// block − 1 / block + 1 lengths, nested folders, and one large file spanning many pieces.
pub fn multi_file_layout(total: u64) -> Vec<FileSpec> {
    let mut v = vec![
        FileSpec::new("empty.bin", 0),
        FileSpec::new("one_byte.bin", 1),
        FileSpec::new("docs/readme.txt", 1000),
        FileSpec::new("docs/block_minus_one.bin", BLOCK - 1),
        FileSpec::new("docs/block_plus_one.bin", BLOCK + 1),
        FileSpec::new("nested/a/b/deep.bin", 70_001),
        FileSpec::new("nested/a/empty_too.bin", 0),
        FileSpec::new("zz_tail.bin", 123_457),
    ];
    let small: u64 = v.iter().map(|f| f.len).sum();
    let big = total.saturating_sub(small).max(12 * BLOCK + 7);
    v.insert(5, FileSpec::new("media/big.bin", big));
    v
}

/// Total length of a layout, bytes.
pub fn total_len(files: &[FileSpec]) -> u64 {
    files.iter().map(|f| f.len).sum()
}

/// Write every file of `files` under `root` (created if missing) with content derived
/// from `seed` (see [`file_seed`]).
///
/// # Errors
/// Any I/O error.
pub fn write_tree(root: &Path, files: &[FileSpec], seed: u64) -> io::Result<()> {
    fs::create_dir_all(root)?;
    for f in files {
        write_file(&root.join(&f.path), f.len, file_seed(seed, &f.path))?;
    }
    Ok(())
}

/// Every regular file under `root`, as sorted relative paths. A missing root is an error.
fn list_files(root: &Path) -> io::Result<Vec<PathBuf>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_dir() {
                walk(root, &path, out)?;
            } else {
                out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

/// Compare two files byte for byte.
///
/// # Errors
/// A message naming the file and the first differing offset (or the lengths, or the I/O
/// error).
pub fn compare_files(expected: &Path, actual: &Path) -> Result<(), HarnessError> {
    let err = |m: String| HarnessError(m);
    let open =
        |p: &Path| File::open(p).map_err(|e| err(format!("cannot open {}: {e}", p.display())));
    let (mut a, mut b) = (open(expected)?, open(actual)?);
    let len = |f: &File, p: &Path| {
        f.metadata()
            .map(|m| m.len())
            .map_err(|e| err(format!("cannot stat {}: {e}", p.display())))
    };
    let (la, lb) = (len(&a, expected)?, len(&b, actual)?);
    let mut ba = vec![0u8; CMP_CHUNK];
    let mut bb = vec![0u8; CMP_CHUNK];
    let mut offset: u64 = 0;
    loop {
        let na =
            read_full(&mut a, &mut ba).map_err(|e| err(format!("{}: {e}", expected.display())))?;
        let nb =
            read_full(&mut b, &mut bb).map_err(|e| err(format!("{}: {e}", actual.display())))?;
        let (sa, sb) = (
            ba.get(..na).unwrap_or_default(),
            bb.get(..nb).unwrap_or_default(),
        );
        if let Some(i) = sa.iter().zip(sb).position(|(x, y)| x != y) {
            return Err(err(format!(
                "{} differs from {} at byte offset {} (expected {:#04x}, found {:#04x}); lengths {} and {}",
                actual.display(),
                expected.display(),
                offset + i as u64,
                sa.get(i).copied().unwrap_or_default(),
                sb.get(i).copied().unwrap_or_default(),
                la,
                lb
            )));
        }
        if na != nb {
            return Err(err(format!(
                "{} has {lb} bytes, expected {la} (identical over the first {} bytes)",
                actual.display(),
                offset + na.min(nb) as u64
            )));
        }
        if na == 0 {
            return Ok(());
        }
        offset += na as u64;
    }
}

/// Read until `buf` is full or EOF; returns the bytes read.
fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(buf.get_mut(n..).unwrap_or_default())? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Compare two trees: the same set of regular files (folders alone are not compared;
/// a zero-length file must exist), each identical byte for byte.
///
/// # Errors
/// A message listing missing and unexpected files, or the first differing file and offset.
pub fn compare_trees(expected: &Path, actual: &Path) -> Result<(), HarnessError> {
    let list = |p: &Path| {
        list_files(p).map_err(|e| HarnessError(format!("cannot list {}: {e}", p.display())))
    };
    let (want, got) = (list(expected)?, list(actual)?);
    let missing: Vec<_> = want.iter().filter(|p| !got.contains(p)).collect();
    let extra: Vec<_> = got.iter().filter(|p| !want.contains(p)).collect();
    if !missing.is_empty() || !extra.is_empty() {
        return Err(HarnessError(format!(
            "{} does not hold the same files as {}: missing {missing:?}, unexpected {extra:?}",
            actual.display(),
            expected.display()
        )));
    }
    for rel in &want {
        compare_files(&expected.join(rel), &actual.join(rel))?;
    }
    Ok(())
}

/// [`compare_trees`], panicking with its message on a difference.
///
/// # Panics
/// When the trees differ.
pub fn assert_trees_equal(expected: &Path, actual: &Path) {
    if let Err(e) = compare_trees(expected, actual) {
        panic!("{e}");
    }
}
