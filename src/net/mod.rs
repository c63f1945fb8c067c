//! Addresses and URLs as the protocols meet them, below every service that uses them:
//!
//! - [`ip_filter`]: IP filter lists (eMule `.dat`, PeerGuardian `.p2p`, gzip) and lookups.
//! - [`scope`]: how far an IP address reaches (loopback, local network, Internet), the one
//!   definition the DHT, LSD and PEX decide with.
//! - [`url`]: tracker URLs fit to show (no passkeys in logs, on screen or in `info`), and
//!   whether a text the user typed is a URL.

pub mod ip_filter;
pub mod scope;
pub mod url;

pub use scope::{Scope, is_local, scope_of};
pub use url::{
    check_tracker_url, host_of, is_fetchable_scheme, is_url, mask_passkey, unfetchable_scheme,
    url_scheme,
};
