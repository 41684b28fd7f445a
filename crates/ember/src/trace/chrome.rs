//! The Chrome trace event format: a JSON object with a `traceEvents` array.
//!
//! Written by hand rather than through serde: the format needs five fields per event and
//! string escaping, and the runtime crate should not pull a serialisation stack into every
//! program that links it.

use std::io::{self, Write};

use super::{Trace, TraceKind};

pub(super) fn write(trace: &Trace, name: &str, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            writeln!(out, ",")?;
        }
        Ok(())
    };
    for worker in 0..trace.threads {
        sep(&mut out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{worker},\
             \"args\":{{\"name\":\"{}-{worker}\"}}}}",
            escape(name)
        )?;
    }
    for (flow, event) in trace.events.iter().enumerate() {
        sep(&mut out)?;
        let ts = event.start_ns as f64 / 1000.0;
        let tid = event.worker;
        match event.kind {
            TraceKind::Task | TraceKind::Sleep => {
                let (label, cat) = match (event.kind, &event.label) {
                    (TraceKind::Sleep, _) => ("sleep".to_owned(), "sleep"),
                    (_, Some(label)) => (escape(label), "task"),
                    (_, None) => ("task".to_owned(), "task"),
                };
                write!(
                    out,
                    "{{\"ph\":\"X\",\"name\":\"{label}\",\"cat\":\"{cat}\",\"pid\":1,\
                     \"tid\":{tid},\"ts\":{ts:.3},\"dur\":{:.3}}}",
                    event.duration_ns as f64 / 1000.0
                )?;
            }
            TraceKind::Wake | TraceKind::Steal | TraceKind::Kick => {
                let name = match event.kind {
                    TraceKind::Wake => "wake",
                    TraceKind::Steal => "steal",
                    _ => "kick",
                };
                write!(
                    out,
                    "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{name}\",\"pid\":1,\"tid\":{tid},\
                     \"ts\":{ts:.3},\"args\":{{\"count\":{}}}}}",
                    event.count
                )?;
                if let (Some(waker), Some(at_ns)) = (event.woken_by, event.woken_at_ns) {
                    write_wake_arrow(&mut out, flow, waker, at_ns, tid, ts)?;
                }
            }
        }
    }
    writeln!(out, "\n]}}")?;
    out.flush()
}

/// An arrow from `waker` at `at_ns` to `wakee` at `ts` µs: a flow's start and end, each bound
/// to a slice of a nanosecond made for it (a flow binds to the slice enclosing its end point,
/// and a waker often makes its wake-ups between two tasks, a wakee wakes between its sleep
/// and its next task).
fn write_wake_arrow(
    out: &mut impl Write,
    flow: usize,
    waker: usize,
    at_ns: u64,
    wakee: usize,
    ts: f64,
) -> io::Result<()> {
    let at = at_ns as f64 / 1000.0;
    write!(
        out,
        ",\n{{\"ph\":\"X\",\"name\":\"wake-up\",\"cat\":\"wake\",\"pid\":1,\"tid\":{waker},\
         \"ts\":{at:.3},\"dur\":0.001}},\n\
         {{\"ph\":\"s\",\"id\":{flow},\"name\":\"wake\",\"cat\":\"wake\",\"pid\":1,\
         \"tid\":{waker},\"ts\":{at:.3}}},\n\
         {{\"ph\":\"X\",\"name\":\"woken\",\"cat\":\"wake\",\"pid\":1,\"tid\":{wakee},\
         \"ts\":{ts:.3},\"dur\":0.001}},\n\
         {{\"ph\":\"f\",\"bp\":\"e\",\"id\":{flow},\"name\":\"wake\",\"cat\":\"wake\",\
         \"pid\":1,\"tid\":{wakee},\"ts\":{ts:.3}}}"
    )
}

/// Escapes a string for a JSON string literal.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => escaped.push_str("\\\""),
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if (c as u32) < 0x20 => escaped.push_str(&format!("\\u{:04x}", c as u32)),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceEvent;

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(escape("a\"b\\c\nd\u{1}"), "a\\\"b\\\\c\\nd\\u0001");
    }

    #[test]
    fn writes_metadata_spans_and_instants() {
        let trace = Trace {
            name: "t".into(),
            threads: 2,
            events: vec![
                TraceEvent {
                    kind: TraceKind::Task,
                    worker: 1,
                    start_ns: 1500,
                    duration_ns: 2000,
                    label: Some("decode \"7\"".into()),
                    count: 0,
                    woken_by: None,
                    woken_at_ns: None,
                },
                TraceEvent {
                    kind: TraceKind::Kick,
                    worker: 0,
                    start_ns: 4000,
                    duration_ns: 0,
                    label: None,
                    count: 3,
                    woken_by: None,
                    woken_at_ns: None,
                },
                TraceEvent {
                    kind: TraceKind::Wake,
                    worker: 1,
                    start_ns: 9000,
                    duration_ns: 0,
                    label: None,
                    count: 0,
                    woken_by: Some(0),
                    woken_at_ns: Some(8000),
                },
            ],
        };
        let mut out = Vec::new();
        write(&trace, "pool", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\"name\":\"pool-1\""));
        assert!(text.contains("\"name\":\"decode \\\"7\\\"\""));
        assert!(text.contains("\"ts\":1.500,\"dur\":2.000"));
        assert!(text.contains("\"name\":\"kick\""));
        assert!(text.contains("\"count\":3"));
        // The wake-up's arrow: out of worker 0 at 8 µs, into worker 1 at 9 µs.
        assert!(text.contains("\"ph\":\"s\",\"id\":2,\"name\":\"wake\",\"cat\":\"wake\",\"pid\":1,\"tid\":0,\"ts\":8.000"));
        assert!(text.contains("\"ph\":\"f\",\"bp\":\"e\",\"id\":2,\"name\":\"wake\",\"cat\":\"wake\",\"pid\":1,\"tid\":1,\"ts\":9.000"));
        assert!(text.contains(
            "\"name\":\"wake-up\",\"cat\":\"wake\",\"pid\":1,\"tid\":0,\"ts\":8.000,\"dur\":0.001"
        ));
        assert!(text.contains(
            "\"name\":\"woken\",\"cat\":\"wake\",\"pid\":1,\"tid\":1,\"ts\":9.000,\"dur\":0.001"
        ));
        assert_eq!(text.matches("\"ph\":").count(), 9);
        // Valid JSON as a whole.
        let _: serde_json::Value = serde_json::from_str(&text).unwrap();
    }
}
