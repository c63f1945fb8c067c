//! Piece storage on disk.
