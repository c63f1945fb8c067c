//! libFuzzer target: see `ratorrent_fuzz::check_webseed_answer` for the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ratorrent_fuzz::check_webseed_answer(data));
