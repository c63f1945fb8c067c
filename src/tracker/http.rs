//! HTTP tracker announce (BEP 3, BEP 23).
