//! Locations under `JARVIS_HOME` (default `~/.jarvis`) and their permissions.
