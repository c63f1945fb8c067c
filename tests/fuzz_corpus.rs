//! Replays the kept fuzz corpus (issue 16): `tests/fuzz/corpus-min/<target>/` holds, per
//! libFuzzer target of `tests/fuzz`, the smallest inputs that together reach every
//! coverage feature the long fuzz runs reached (libFuzzer's `-merge=1`, see
//! `tests/fuzz/run.sh`). Every input goes through the same invariant check as in the
//! fuzzer (`tests/fuzz/src/lib.rs`), on every `cargo test`, without the nightly toolchain.

#[path = "fuzz/src/lib.rs"]
mod checks;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

const FUZZ_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz");

/// An invariant check over one input (panics when an invariant breaks).
type Check = fn(&[u8]);

/// The check of each target that decodes in-process, by target name.
const CHECKS: &[(&str, Check)] = &[
    ("bencode", checks::check_bencode),
    ("metainfo", checks::check_metainfo),
    ("metainfo_v2", checks::check_metainfo_v2),
    ("hash_messages", checks::check_hash_messages),
    ("magnet", checks::check_magnet),
    ("peer_wire", checks::check_peer_stream),
    ("extension", checks::check_extension),
    ("metadata", checks::check_metadata_assembly),
    ("pex", checks::check_pex),
    ("tracker_udp", checks::check_tracker_udp),
    ("tracker_http", checks::check_tracker_http),
    ("lsd", checks::check_lsd),
    ("utp", checks::check_utp),
    ("webseed", checks::check_webseed_answer),
    ("mse", checks::check_mse),
];

/// The targets declared in `tests/fuzz/Cargo.toml` (`[[bin]]` names).
fn declared_targets() -> Vec<String> {
    let toml = std::fs::read_to_string(format!("{FUZZ_DIR}/Cargo.toml")).unwrap();
    let mut out = Vec::new();
    let mut in_bin = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(v) = line.strip_prefix("name = ") {
            out.push(v.trim_matches('"').to_owned());
        }
    }
    out
}

/// The kept inputs of `target`, sorted by file name.
fn kept(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(FUZZ_DIR).join("corpus-min").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (no kept corpus for {target})", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty", dir.display());
    files
}

/// Run `check` over every kept input of `target`; the failures, by file.
fn replay(target: &str, mut check: impl FnMut(&[u8])) -> (usize, Vec<String>) {
    let files = kept(target);
    let mut failures = Vec::new();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!(
                "{target}/{}: {msg}",
                f.file_name().unwrap().display()
            ));
        }
    }
    (files.len(), failures)
}

#[test]
fn every_fuzz_target_has_a_kept_corpus_and_a_replay() {
    for t in declared_targets() {
        assert!(
            t == "krpc" || CHECKS.iter().any(|(name, _)| *name == t),
            "fuzz target {t} has no replay in tests/fuzz_corpus.rs"
        );
        kept(&t);
    }
    assert_eq!(declared_targets().len(), CHECKS.len() + 1);
}

#[test]
fn kept_corpus_passes_every_decoder_check() {
    let mut all = Vec::new();
    let mut counts = Vec::new();
    for (t, check) in CHECKS {
        let (n, failures) = replay(t, check);
        counts.push(format!("{t} {n}"));
        all.extend(failures);
    }
    assert!(
        all.is_empty(),
        "{} kept inputs fail:\n{}",
        all.len(),
        all.join("\n")
    );
    eprintln!("replayed: {}", counts.join(", "));
}

/// KRPC datagrams go to a live DHT node on 127.0.0.1, which must answer a ping after each.
#[test]
fn kept_krpc_datagrams_leave_the_dht_node_serving() {
    let mut node = checks::KrpcNode::start();
    let (n, failures) = replay("krpc", |d| node.check(d));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("replayed {n} KRPC datagrams");
}

/// The seeds of the BEP 52 hash-message target pass its check (and are written to
/// `tests/fuzz/seeds/hash_messages` when `WRITE_FUZZ_SEEDS` is set).
#[test]
fn hash_message_seeds_pass_their_check() {
    let seeds = checks::hash_message_seeds();
    for s in &seeds {
        checks::check_hash_messages(s);
    }
    if std::env::var_os("WRITE_FUZZ_SEEDS").is_some() {
        let dir = Path::new(FUZZ_DIR).join("seeds/hash_messages");
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), s).unwrap();
        }
    }
}
