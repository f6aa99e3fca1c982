//! Line-level parsing of streamed responses: Server-Sent Events (Anthropic,
//! OpenAI-compatible) and newline-delimited JSON (Ollama). Pure: the I/O
//! loop feeds lines in and checks cancellation between events.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none.
    pub event: String,
    /// All `data:` lines of the event, joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser: feed it lines (without the line ending), get an
/// event back on each blank line that ends one.
#[derive(Debug, Default)]
pub struct SseParser {
    event: String,
    data: Vec<String>,
}

impl SseParser {
    pub fn push_line(&mut self, line: &str) -> Option<SseEvent> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            // Comment: OpenRouter sends ": OPENROUTER PROCESSING" keep-alives.
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }

    /// Flushes a final event not followed by a blank line (stream ended).
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.dispatch()
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        if self.data.is_empty() {
            self.event.clear();
            return None;
        }
        let event = SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data).join("\n"),
        };
        Some(event)
    }
}

/// An NDJSON line worth parsing: non-blank, trimmed.
pub fn ndjson_line(line: &str) -> Option<&str> {
    let t = line.trim();
    (!t.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_comments_and_multiline_data() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for line in [
            ": OPENROUTER PROCESSING",
            "",
            "event: message_start",
            "data: {\"a\":1}",
            "",
            "data: line1",
            "data:line2\r",
            "",
            "data: [DONE]",
        ] {
            out.extend(p.push_line(line));
        }
        out.extend(p.finish());
        assert_eq!(
            out,
            vec![
                SseEvent {
                    event: "message_start".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "line1\nline2".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn ndjson_skips_blank_lines() {
        assert_eq!(ndjson_line("  \n"), None);
        assert_eq!(ndjson_line("{\"done\":true}\n"), Some("{\"done\":true}"));
    }
}
