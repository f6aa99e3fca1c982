//! Model text → safe HTML (filled in with the chat routes).
