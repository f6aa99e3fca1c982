//! The single integration test binary. Every test stays on loopback and
//! never touches `~/.jarvis`.

mod fake_llm;
mod fake_wires;
mod llm;
