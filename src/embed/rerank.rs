//! Cross-encoder re-ranking (in progress).
