//! Stand-ins for the services Jarvis talks to, on 127.0.0.1, so no test
//! reaches beyond loopback.
//!
//! - `llm`: model servers speaking each provider's streaming wire, byte
//!   by byte under the test's control (drops, silences, hangs); `wires`:
//!   the canned streams and settings for each wire.
//! - `stand`: a generic HTTP service answering from a handler; `papers`
//!   and `digest`: the answers of the paper services and of arXiv,
//!   bioRxiv and the scoring model, in their real shapes.

pub mod digest;
pub mod llm;
pub mod papers;
pub mod stand;
pub mod wires;
