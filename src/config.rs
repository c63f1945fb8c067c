//! Runtime configuration: TOML file in the user config dir, every key optional.
