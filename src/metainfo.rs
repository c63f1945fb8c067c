//! Metainfo (.torrent) parsing, BEP 3 and BEP 12.
