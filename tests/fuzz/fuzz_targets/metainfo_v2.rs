//! libFuzzer target: see `ratorrent_fuzz::check_metainfo_v2` for the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ratorrent_fuzz::check_metainfo_v2(data));
