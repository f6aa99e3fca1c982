//! [`Value`]: a setting's resolved value, and how `config show` prints it.

use std::collections::BTreeMap;
use std::fmt;

/// A resolved value. Deliberately small: everything the table can describe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<String>),
    Pairs(Vec<(String, i64)>),
    Models(BTreeMap<String, Vec<String>>),
    /// An optional setting with no value.
    Unset,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::List(l) => write!(f, "{l:?}"),
            Value::Pairs(p) => {
                let parts: Vec<String> = p.iter().map(|(n, k)| format!("[{n:?}, {k}]")).collect();
                write!(f, "[{}]", parts.join(", "))
            }
            Value::Models(m) => {
                let parts: Vec<String> = m.iter().map(|(p, l)| format!("{p} = {l:?}")).collect();
                write!(f, "{{{}}}", parts.join(", "))
            }
            Value::Unset => write!(f, "(unset)"),
        }
    }
}
