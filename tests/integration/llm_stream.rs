//! Streaming events of the LLM layer against the fake servers: deltas reach
//! the callback while the reply is still streaming, a tool turn reports its
//! events in the documented order, and a stop mid-stream closes the socket.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use jarvis::cancel::Cancel;
use jarvis::llm::{
    CallError, ChatProvider, Message, StepUsage, StreamEvent, ToolCall, ToolError, ToolOutcome, TurnEnd,
};
use serde_json::json;

use crate::support::fakes::llm::{End, FakeServer};
use crate::support::fakes::wires::{sse, tool_spec, Wire, WIRES};

/// An owned copy of a [`StreamEvent`], so tests can send and compare them.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Step(usize),
    Text(String),
    Thinking(String),
    CallStart(usize, String),
    CallEnd(usize, ToolCall),
    Result(String, String, bool),
    Usage(StepUsage),
}

fn own(e: StreamEvent<'_>) -> Ev {
    match e {
        StreamEvent::StepStart { step } => Ev::Step(step),
        StreamEvent::TextDelta(t) => Ev::Text(t.to_string()),
        StreamEvent::ThinkingDelta(t) => Ev::Thinking(t.to_string()),
        StreamEvent::ToolCallStart { index, name } => Ev::CallStart(index, name.to_string()),
        StreamEvent::ToolCallEnd { index, call } => Ev::CallEnd(index, call.clone()),
        StreamEvent::ToolResult { call, outcome } => {
            Ev::Result(call.id.clone(), outcome.content.clone(), outcome.is_error)
        }
        StreamEvent::Usage(u) => Ev::Usage(u),
        other => panic!("unexpected event {other:?}"),
    }
}

#[test]
fn deltas_arrive_while_the_reply_is_still_streaming_and_stop_closes_the_socket() {
    for wire in WIRES {
        // Two deltas, then the server keeps the stream open, trickling one
        // more delta at a time: anything the callback sees before the stop
        // arrived before the end of the reply, because there is no end.
        let trickle = match wire {
            Wire::Ollama => format!(
                "{}\n",
                json!({"message":{"role":"assistant","content":"."},"done":false})
            ),
            Wire::OpenRouter => sse(None, &json!({"choices":[{"index":0,"delta":{"content":"."}}]})),
            Wire::Anthropic => sse(
                Some("content_block_delta"),
                &json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"."}}),
            ),
        };
        let server = FakeServer::start(vec![wire.reply(wire.text_events(&["Hel", "lo"])).with_end(End::Hang {
            trickle: Some(trickle),
            every: Duration::from_millis(100),
        })]);
        let provider: Box<dyn ChatProvider> = wire.provider(&server);
        let cancel = Cancel::new();
        let original = vec![Message::user("hi")];
        let (events_tx, events) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let c = cancel.clone();
        let mut messages = original.clone();
        thread::spawn(move || {
            let mut on_event = |e: StreamEvent<'_>| {
                let _ = events_tx.send(own(e));
            };
            let mut dispatch = |_: &ToolCall| Err(ToolError::Failed("no tools".into()));
            let r = provider.agentic_turn_streaming(&mut messages, &[], &mut dispatch, "", Some(&c), &mut on_event);
            let _ = done_tx.send((r, messages));
        });
        let mut seen = Vec::new();
        while seen.iter().filter(|e| **e == Ev::Text(".".into())).count() < 2 {
            let e = events
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("{wire:?}: no live delta; got {seen:?}"));
            seen.push(e);
        }
        assert!(done.try_recv().is_err(), "{wire:?}: the turn must still be running");
        assert_eq!(
            &seen[..3],
            &[Ev::Step(0), Ev::Text("Hel".into()), Ev::Text("lo".into())],
            "{wire:?}"
        );
        cancel.cancel();
        let (result, messages) = done.recv_timeout(Duration::from_secs(10)).expect("turn ended");
        assert!(matches!(result, Err(CallError::Cancelled(_))), "{wire:?}: {result:?}");
        assert_eq!(
            messages, original,
            "{wire:?}: a stopped turn leaves the transcript alone"
        );
        server
            .closed
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{wire:?}: the server never saw the connection close"));
    }
}

#[test]
fn a_tool_turn_reports_calls_results_thinking_text_and_usage_in_order() {
    for wire in WIRES {
        let server = FakeServer::start(vec![
            wire.tool_calls(&[
                ("c1", "search_kb", vec!["{\"q\":", "\"cats\"}"]),
                ("c2", "read_note", vec!["{\"path\":\"a.md\"}"]),
            ]),
            wire.thinking("hmm", "Done."),
        ]);
        let provider = wire.provider(&server);
        let mut events = Vec::new();
        let mut dispatched = Vec::new();
        let mut dispatch = |call: &ToolCall| {
            dispatched.push(call.clone());
            if call.name == "read_note" {
                Err(ToolError::Failed("no such note".into()))
            } else {
                Ok(ToolOutcome::ok("3 hits"))
            }
        };
        let mut messages = vec![Message::user("q")];
        let end = provider
            .agentic_turn_streaming(
                &mut messages,
                &[tool_spec("search_kb"), tool_spec("read_note")],
                &mut dispatch,
                "sys",
                None,
                &mut |e| events.push(own(e)),
            )
            .unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(end, TurnEnd::Reply("Done.".into()), "{wire:?}");
        assert_eq!(dispatched.len(), 2, "{wire:?}");

        let usage: Vec<StepUsage> = events
            .iter()
            .filter_map(|e| match e {
                Ev::Usage(u) => Some(*u),
                _ => None,
            })
            .collect();
        let without_usage: Vec<Ev> = events.iter().filter(|e| !matches!(e, Ev::Usage(_))).cloned().collect();
        let expected = vec![
            Ev::Step(0),
            Ev::CallStart(0, "search_kb".into()),
            Ev::CallStart(1, "read_note".into()),
            Ev::CallEnd(0, dispatched[0].clone()),
            Ev::CallEnd(1, dispatched[1].clone()),
            Ev::Result(dispatched[0].id.clone(), "3 hits".into(), false),
            Ev::Result(dispatched[1].id.clone(), "no such note".into(), true),
            Ev::Step(1),
            Ev::Thinking("hmm".into()),
            Ev::Text("Done.".into()),
        ];
        assert_eq!(without_usage, expected, "{wire:?}");
        assert_eq!(dispatched[0].arguments, json!({"q":"cats"}), "{wire:?}");
        assert_eq!(dispatched[1].arguments, json!({"path":"a.md"}), "{wire:?}");
        // The ids the events carry are the ids the transcript keeps.
        let kept: Vec<String> = messages[1].tool_calls().map(|c| c.0.to_string()).collect();
        assert_eq!(
            kept,
            vec![dispatched[0].id.clone(), dispatched[1].id.clone()],
            "{wire:?}"
        );
        match wire {
            Wire::OpenRouter => {
                let step = StepUsage {
                    input_tokens: Some(3),
                    output_tokens: Some(2),
                    cost_usd: Some(0.0125),
                };
                assert_eq!(usage, vec![step, step], "{wire:?}: one report per request");
            }
            Wire::Anthropic => {
                let step = StepUsage {
                    input_tokens: Some(5),
                    ..StepUsage::default()
                };
                assert_eq!(usage, vec![step, step], "{wire:?}");
            }
            // The fake's Ollama done chunk reports no counts: nothing is made up.
            Wire::Ollama => assert!(usage.is_empty(), "{wire:?}: {usage:?}"),
        }
        // Usage closes its step: it comes before the next step starts.
        if let Some(first) = events.iter().position(|e| matches!(e, Ev::Usage(_))) {
            let step1 = events.iter().position(|e| *e == Ev::Step(1)).expect("step 1");
            let end0 = events
                .iter()
                .position(|e| matches!(e, Ev::CallEnd(..)))
                .expect("call end");
            assert!(first < end0 && end0 < step1, "{wire:?}: {events:?}");
        }
    }
}

#[test]
fn usage_counts_come_from_each_wire_and_the_plain_path_still_works() {
    let ollama = FakeServer::start(vec![Wire::Ollama.reply(vec![
        format!(
            "{}\n",
            json!({"message":{"role":"assistant","content":"ok"},"done":false})
        ),
        format!(
            "{}\n",
            json!({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",
                   "prompt_eval_count":11,"eval_count":7})
        ),
    ])]);
    let anthropic = FakeServer::start(vec![Wire::Anthropic.reply({
        let mut v = Wire::Anthropic.text_events(&["ok"]);
        v.push(sse(
            Some("content_block_stop"),
            &json!({"type":"content_block_stop","index":0}),
        ));
        v.push(sse(
            Some("message_delta"),
            &json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}),
        ));
        v.push(sse(Some("message_stop"), &json!({"type":"message_stop"})));
        v
    })]);
    for (wire, server, expected) in [
        (Wire::Ollama, &ollama, (Some(11), Some(7))),
        (Wire::Anthropic, &anthropic, (Some(5), Some(9))),
    ] {
        let p = wire.provider(server);
        let mut events = Vec::new();
        let mut messages = vec![Message::user("q")];
        let mut dispatch = |_: &ToolCall| Err(ToolError::Failed("no tools".into()));
        p.agentic_turn_streaming(&mut messages, &[], &mut dispatch, "", None, &mut |e| {
            events.push(own(e))
        })
        .expect("turn");
        let usage = events.iter().find_map(|e| match e {
            Ev::Usage(u) => Some((u.input_tokens, u.output_tokens)),
            _ => None,
        });
        assert_eq!(usage, Some(expected), "{wire:?}: {events:?}");
        // The whole-message path over the same wire is unchanged.
        assert_eq!(
            p.complete(&[Message::user("x")], 10, None, None).expect("complete"),
            "ok"
        );
    }
}
