//! Prompt and setting edits with their events, and their undo (the other
//! half of `app::records`, same rule: the file write first, the event
//! right after it, a failed append logged and handed back).
//!
//! A prompt edit keeps the prompt's previous text as the event's kept copy
//! (until `history.keep_days`): prompts are the user's own instructions,
//! never a note's text. A setting edit carries its previous and new values
//! in the event — except a secret's (an API key), which is never written
//! to the history, so that edit cannot be undone.
//! Must not: edit `config.toml` or a prompt except through `config::write`
//! and `prompts`, or write a secret's value anywhere.

use crate::config::schema::{Kind, Value};
use crate::drafts::content_hash;
use crate::kb::{Actor, Event, EventKind, KbError, NewRecordEvent, RecordChange};

use super::ops::OpError;
use super::records::{FileRecords, Recorded};
use super::App;

fn prompt_event(name: &str, detail: String, new_text: &str, old_text: String) -> NewRecordEvent {
    NewRecordEvent {
        kind: EventKind::PromptEdited,
        key: format!("prompt:{name}"),
        title: name.to_string(),
        doc_type: "prompt".into(),
        private: false,
        change: RecordChange {
            inverse_is_default: false,
            detail,
            after: Some(content_hash(new_text.as_bytes())),
            inverse: None,
            not_undoable: None,
        },
        kept_text: Some(old_text.into_bytes()),
    }
}

/// A setting's value as `config set` takes it back, when it can be.
fn raw_of(v: &Value) -> Option<String> {
    match v {
        Value::Bool(b) => Some(b.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Str(s) => Some(s.clone()),
        Value::List(l) => serde_json::to_string(l).ok(),
        Value::Pairs(_) | Value::Models(_) | Value::Unset => None,
    }
}

fn prompt_error(e: crate::prompts::PromptError) -> OpError {
    OpError::Prompt(e)
}

impl App {
    /// Save the user's copy of prompt `name` and record it.
    pub fn prompt_save(&self, name: &str, text: &str, actor: &Actor) -> Result<Recorded, OpError> {
        let old = crate::prompts::load(self.home(), name).map_err(|e| prompt_error(e.into()))?;
        crate::prompts::save(self.home(), name, text).map_err(prompt_error)?;
        if old == text {
            return Ok(Recorded::default());
        }
        let detail = format!(
            "edited ({} characters, was {})",
            text.chars().count(),
            old.chars().count()
        );
        Ok(self.record(prompt_event(name, detail, text, old), actor))
    }

    /// Put prompt `name` back to the shipped text and record it; returns
    /// the text.
    pub fn prompt_reset(&self, name: &str, actor: &Actor) -> Result<(String, Recorded), OpError> {
        let old = crate::prompts::load(self.home(), name).map_err(|e| prompt_error(e.into()))?;
        let text = crate::prompts::revert(self.home(), name).map_err(prompt_error)?;
        if old == text {
            return Ok((text, Recorded::default()));
        }
        let detail = "reset to the shipped text".to_string();
        let recorded = self.record(prompt_event(name, detail, &text, old), actor);
        Ok((text, recorded))
    }

    /// Write setting `dotted` = `raw` in `config.toml`, reload the
    /// configuration, and record the edit with the previous value.
    pub fn setting_set(&self, dotted: &str, raw: &str, actor: &Actor) -> Result<Recorded, OpError> {
        let before = self.config();
        crate::config::write::set_value(self.home(), dotted, raw, &*self.env)?;
        self.reload_config()?;
        let after = self.config();
        Ok(self.record(setting_event(dotted, &before, &after), actor))
    }
}

fn setting_event(dotted: &str, before: &crate::config::Config, after: &crate::config::Config) -> NewRecordEvent {
    let field = after
        .entries()
        .find(|(f, _, _)| f.dotted() == dotted)
        .map(|(f, _, _)| f);
    let secret = field.is_none_or(|f| f.kind == Kind::Secret) || dotted.ends_with(".api_key");
    let (old, new) = (before.value(dotted), after.value(dotted));
    let change = if secret {
        RecordChange {
            inverse_is_default: false,
            detail: "set (a secret, or a server's setting: its value is not recorded)".into(),
            after: None,
            inverse: None,
            not_undoable: Some(format!(
                "the value of {dotted} is not kept in the history; set it again with `jarvis config set {dotted} …`"
            )),
        }
    } else {
        let default = matches!(before.origin(dotted), crate::config::Origin::Default);
        let was = if default {
            format!("{old} (the default)")
        } else {
            old.to_string()
        };
        // Undoing a change from the default removes the key again, which
        // works for a default no value can spell (an unset path) too.
        let inverse = match raw_of(old) {
            None if default => Some(String::new()),
            raw => raw,
        };
        RecordChange {
            inverse_is_default: default,
            detail: format!("set to {new}, was {was}"),
            after: raw_of(new),
            not_undoable: inverse.is_none().then(|| {
                format!("its previous value ({old}) cannot be written back here; set it with `jarvis config set {dotted} …`")
            }),
            inverse,
        }
    };
    NewRecordEvent {
        kind: EventKind::SettingEdited,
        key: format!("setting:{dotted}"),
        title: dotted.to_string(),
        doc_type: "setting".into(),
        private: false,
        change,
        kept_text: None,
    }
}

fn prompt_name(e: &Event) -> Option<&str> {
    e.key.strip_prefix("prompt:")
}

/// Whether a prompt edit can be undone: the prompt still holds its text.
pub(super) fn check_prompt(f: &FileRecords<'_>, e: &Event) -> Result<Option<String>, KbError> {
    let Some(name) = prompt_name(e) else {
        return Ok(Some(format!("{} names no prompt", e.key)));
    };
    let now = crate::prompts::load(f.app.home(), name).map_err(|err| KbError::RecordFile {
        kind: err.kind(),
        message: err.to_string(),
    })?;
    let after = e.record.as_ref().and_then(|r| r.after.as_deref());
    if after != Some(content_hash(now.as_bytes()).as_str()) {
        return Ok(Some(format!(
            "the prompt {name} changed since event {}; undo the later change first, or edit it by hand",
            e.id
        )));
    }
    Ok(None)
}

pub(super) fn undo_prompt(f: &FileRecords<'_>, e: &Event, cause: &crate::store::Cause) -> Result<String, KbError> {
    let refuse = |reason: &str| KbError::UndoRefused {
        id: e.id,
        reason: reason.into(),
    };
    let name = prompt_name(e).ok_or_else(|| refuse("the event names no prompt"))?;
    let kept = f.kb.store().kept_chunks(e.id)?;
    let old = kept
        .into_iter()
        .next()
        .map(|k| String::from_utf8_lossy(&k.record).into_owned())
        .ok_or_else(|| refuse("its previous text is no longer kept"))?;
    let now = crate::prompts::load(f.app.home(), name).map_err(|err| KbError::RecordFile {
        kind: err.kind(),
        message: err.to_string(),
    })?;
    let prompt_failed = |err: crate::prompts::PromptError| KbError::RecordFile {
        kind: err.kind(),
        message: err.to_string(),
    };
    crate::prompts::save(f.app.home(), name, &old).map_err(prompt_failed)?;
    let detail = format!("put back its text from before event {}", e.id);
    let unrecorded = f.append(prompt_event(name, detail, &old, now), cause);
    Ok(format!(
        "put the prompt {name} back to its text from before event {}{unrecorded}",
        e.id
    ))
}

fn setting_parts(e: &Event) -> Option<(&str, Option<&str>, &str)> {
    let key = e.key.strip_prefix("setting:")?;
    let r = e.record.as_ref()?;
    Some((key, r.after.as_deref(), r.inverse.as_deref()?))
}

/// Whether a setting edit can be undone: the file still sets what it set.
pub(super) fn check_setting(f: &FileRecords<'_>, e: &Event) -> Result<Option<String>, KbError> {
    let Some((key, after, _)) = setting_parts(e) else {
        return Ok(Some("the event kept no previous value".into()));
    };
    let cfg = crate::config::Config::load(f.app.home(), &*f.app.env as crate::config::Env<'_>).map_err(|err| {
        KbError::RecordFile {
            kind: err.kind(),
            message: err.to_string(),
        }
    })?;
    if raw_of(cfg.value(key)).as_deref() != after {
        return Ok(Some(format!(
            "{key} changed since event {} (it is now {}); set it by hand with `jarvis config set`",
            e.id,
            cfg.value(key)
        )));
    }
    Ok(None)
}

pub(super) fn undo_setting(f: &FileRecords<'_>, e: &Event, cause: &crate::store::Cause) -> Result<String, KbError> {
    let (key, _, old) = setting_parts(e).ok_or_else(|| KbError::UndoRefused {
        id: e.id,
        reason: "the event kept no previous value".into(),
    })?;
    let failed = |err: OpError| KbError::RecordFile {
        kind: err.kind(),
        message: err.to_string(),
    };
    let to_default = e.record.as_ref().is_some_and(|r| r.inverse_is_default);
    let before = f.app.config();
    let written = if to_default {
        crate::config::write::unset_value(f.app.home(), key, &*f.app.env)
    } else {
        crate::config::write::set_value(f.app.home(), key, old, &*f.app.env)
    };
    written.map_err(|e| failed(e.into()))?;
    f.app.reload_config().map_err(|e| failed(OpError::App(e)))?;
    let after = f.app.config();
    let unrecorded = f.append(setting_event(key, &before, &after), cause);
    if to_default {
        return Ok(format!(
            "set {key} back to its default ({}), as before event {}{unrecorded}",
            after.value(key),
            e.id
        ));
    }
    Ok(format!("set {key} back to {old}, as before event {}{unrecorded}", e.id))
}
