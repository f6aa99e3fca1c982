//! [`lock`], [`read`] and [`write`]: the one way the crate takes a `Mutex`
//! or an `RwLock`.
//!
//! A panic while a guard is held poisons the mutex. What the crate keeps
//! behind its mutexes (registries, caches, progress, a session whose commit
//! is all-or-nothing, indexes that roll back uncommitted work) is whole
//! between the statements that change it, so the data is used as it is
//! rather than turning one panic into a panic in every later caller.
//! Must not: hold any state of its own.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Take `m`, ignoring poisoning (see the module docs).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read `l`, ignoring poisoning (see the module docs).
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write `l`, ignoring poisoning (see the module docs).
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}
