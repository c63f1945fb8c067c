//! Tracker clients.

pub mod http;
