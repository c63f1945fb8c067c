//! libFuzzer target: see `ratorrent_fuzz::check_utp` for the invariants checked (the uTP
//! packet parser, and a connection fed the datagrams).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ratorrent_fuzz::check_utp(data));
