//! Peer wire protocol (BEP 3).
