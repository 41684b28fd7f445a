//! Tracing: labelled tasks show up as `Task` events with their labels, the Chrome export is
//! valid JSON of the trace event format, and a pool built without tracing records nothing.

use std::collections::HashSet;

use ember::{Pool, Task, TraceKind, WakePolicy};

/// A small labelled graph: three chains of `decode i` tasks and a `merge` after them.
fn labelled_graph(pool: &Pool) -> Vec<String> {
    let mut labels = Vec::new();
    let mut tails: Vec<Task<u64>> = Vec::new();
    for c in 0..3u64 {
        let mut prev: Option<Task<u64>> = None;
        for i in 0..10u64 {
            let label = format!("decode {}", c * 10 + i);
            labels.push(label.clone());
            let builder = pool.task(move || c * 10 + i).label(label);
            prev = Some(match &prev {
                Some(p) => builder.after(&[p]).spawn(),
                None => builder.spawn(),
            });
        }
        tails.push(prev.unwrap());
    }
    let deps: Vec<&dyn ember::Dependency> =
        tails.iter().map(|t| t as &dyn ember::Dependency).collect();
    let merge = pool.task(|| 0u64).after(&deps).label("merge").spawn();
    labels.push("merge".to_owned());
    merge.join().unwrap();
    for tail in tails {
        tail.join().unwrap();
    }
    labels
}

#[test]
fn labelled_tasks_are_recorded_with_their_labels() {
    for policy in [
        WakePolicy::Eager,
        WakePolicy::Searching,
        WakePolicy::Biased { batch: 20 },
    ] {
        let pool = Pool::builder()
            .threads(2)
            .wake(policy)
            .trace(true)
            .build()
            .unwrap();
        let labels = labelled_graph(&pool);
        pool.spawn(|| {}); // an unlabelled task
        pool.wait_idle();
        let trace = pool.trace();
        assert_eq!(trace.threads(), 2);
        let events = trace.events();
        let seen: Vec<&str> = events
            .iter()
            .filter(|e| e.kind == TraceKind::Task)
            .filter_map(|e| e.label.as_deref())
            .collect();
        for label in &labels {
            assert_eq!(
                seen.iter().filter(|&&s| s == label).count(),
                1,
                "{policy:?}: label {label:?} should appear once among {seen:?}"
            );
        }
        assert!(
            events
                .iter()
                .any(|e| e.kind == TraceKind::Task && e.label.is_none()),
            "{policy:?}: the unlabelled spawned task is missing"
        );
        assert!(events.iter().all(|e| e.worker < 2));
        assert!(
            events.windows(2).all(|w| w[0].start_ns <= w[1].start_ns),
            "{policy:?}: events are not ordered by start time"
        );
        let decode = events
            .iter()
            .find(|e| e.label.as_deref() == Some("decode 7"))
            .unwrap();
        assert_eq!(decode.label_kind(), Some("decode"));
        // Drained: a second call holds no task (idle workers may still record sleeps).
        assert!(pool
            .trace()
            .events()
            .iter()
            .all(|e| e.kind != TraceKind::Task));
    }
}

#[test]
fn chrome_json_is_valid_trace_event_format() {
    let pool = Pool::builder()
        .threads(2)
        .name("trace-test")
        .trace(true)
        .build()
        .unwrap();
    labelled_graph(&pool);
    // A label that needs escaping.
    pool.task(|| ())
        .label("quote \" backslash \\ newline \n tab \t")
        .spawn()
        .join()
        .unwrap();
    let trace = pool.trace();
    let path = std::env::temp_dir().join(format!("ember-trace-test-{}.json", std::process::id()));
    trace.write_chrome_json(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();

    let json: serde_json::Value = serde_json::from_str(&text).expect("the trace is valid JSON");
    let events = json["traceEvents"]
        .as_array()
        .expect("`traceEvents` is an array");
    assert!(
        events.iter().all(|e| e["ph"].is_string()),
        "every event has `ph`"
    );
    let thread_names: HashSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        thread_names,
        HashSet::from(["trace-test-0", "trace-test-1"])
    );
    let spans: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert!(spans
        .iter()
        .all(|e| e["ts"].is_number() && e["dur"].is_number() && e["tid"].is_number()));
    let names: HashSet<&str> = spans.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(
        names.contains("merge") && names.contains("decode 29"),
        "{names:?}"
    );
    assert!(names.contains("quote \" backslash \\ newline \n tab \t"));
    // One span per task recorded, plus the metadata rows and instants.
    let tasks = trace
        .events()
        .iter()
        .filter(|e| e.kind == TraceKind::Task)
        .count();
    assert_eq!(spans.iter().filter(|e| e["cat"] == "task").count(), tasks);
    // A wake-up made by a worker of the pool is drawn as an arrow: a flow's start and end,
    // each on a slice of its own, and the two ends share an id.
    let arrows = trace
        .events()
        .iter()
        .filter(|e| e.kind == TraceKind::Wake && e.woken_by.is_some() && e.woken_at_ns.is_some())
        .count();
    let ends = |ph: &str| -> Vec<u64> {
        let mut ids: Vec<u64> = events
            .iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["id"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ends("s").len(), arrows);
    assert_eq!(ends("s"), ends("f"));
    assert_eq!(
        spans.iter().filter(|e| e["cat"] == "wake").count(),
        2 * arrows
    );
    // The metadata rows, one entry per event, and four per arrow.
    assert_eq!(events.len(), trace.events().len() + 2 + 4 * arrows);
}

#[test]
fn without_trace_nothing_is_recorded() {
    let pool = Pool::builder().threads(2).build().unwrap();
    labelled_graph(&pool);
    pool.wait_idle();
    assert!(pool.trace().events().is_empty());
    let off = Pool::builder().threads(2).trace(false).build().unwrap();
    labelled_graph(&off);
    assert!(off.trace().events().is_empty());
}

/// A task that panics still gets its span, with its label, as does every spawned job; the
/// pool and the trace are fine afterwards.
#[test]
fn panicking_tasks_and_jobs_are_recorded_too() {
    let pool = Pool::builder()
        .threads(2)
        .trace(true)
        .panic_handler(|_| {})
        .build()
        .unwrap();
    let failed = pool
        .task(|| -> u64 { panic!("a traced task panics") })
        .label("fails")
        .spawn();
    assert!(failed.join().is_err());
    for i in 0..10 {
        pool.spawn(move || {
            if i % 2 == 0 {
                panic!("a traced job panics");
            }
        });
    }
    pool.wait_idle();
    let events = pool.trace().events().to_vec();
    let tasks: Vec<_> = events
        .iter()
        .filter(|e| e.kind == TraceKind::Task)
        .collect();
    assert_eq!(tasks.len(), 11, "one span per task and job: {tasks:?}");
    assert_eq!(
        tasks
            .iter()
            .filter(|e| e.label.as_deref() == Some("fails"))
            .count(),
        1
    );
}

/// A span covers its task: a task or job that sleeps 3 ms has a span at least that long, and
/// a task's span is in the trace once `join` has returned (it ends before the task's ending
/// is published).
#[test]
fn a_span_covers_its_task_and_is_recorded_before_the_task_ends() {
    let pool = Pool::builder().threads(2).trace(true).build().unwrap();
    let nap = std::time::Duration::from_millis(3);
    let napping = pool
        .task(move || std::thread::sleep(nap))
        .label("naps")
        .spawn();
    napping.join().unwrap();
    let spans = |label: Option<&str>| -> Vec<u64> {
        pool.trace()
            .events()
            .iter()
            .filter(|e| e.kind == TraceKind::Task && e.label.as_deref() == label)
            .map(|e| e.duration_ns)
            .collect()
    };
    let task_spans = spans(Some("naps"));
    assert_eq!(task_spans.len(), 1, "the task's span, right after join");
    assert!(
        task_spans[0] >= nap.as_nanos() as u64,
        "the task's span ({} ns) is shorter than its nap",
        task_spans[0]
    );
    pool.spawn(move || std::thread::sleep(nap));
    pool.wait_idle();
    let job_spans = spans(None);
    assert_eq!(job_spans.len(), 1, "the job's span, right after wait_idle");
    assert!(
        job_spans[0] >= nap.as_nanos() as u64,
        "the job's span ({} ns) is shorter than its nap",
        job_spans[0]
    );
}

/// A sleep that ends at its deadline names no waker: the note an earlier wake-up left (here,
/// the caller's, which woke the worker for its `install`) belongs to an earlier sleep.
#[test]
fn a_sleep_that_times_out_names_no_waker() {
    let pool = Pool::builder().threads(2).trace(true).build().unwrap();
    let never = pool.event();
    let gated = pool.task(|| ()).after(&[&never]).spawn();
    // Both workers asleep, so that the install's job is brought by a noted wake-up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while format!("{pool:?}").matches("state: sleeping").count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "workers never slept: {pool:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let worker = pool.install(move || {
        let gated = gated
            .join_timeout(std::time::Duration::from_millis(30))
            .expect_err("a task behind an event nobody completes cannot finish");
        drop(gated);
        ember::current_thread_index().unwrap()
    });
    let events = pool.trace().events().to_vec();
    never.complete();
    pool.wait_idle();
    let wakes: Vec<_> = events
        .iter()
        .filter(|e| e.kind == TraceKind::Wake && e.worker == worker)
        .collect();
    // The wake-up that brought the install, noted by the caller; then the wait's timed-out
    // sleep, last.
    assert!(
        wakes.iter().any(|e| e.woken_at_ns.is_some()),
        "no noted wake-up brought the install: {events:?}"
    );
    let last = wakes.last().unwrap();
    assert_eq!(
        (last.woken_by, last.woken_at_ns),
        (None, None),
        "a sleep ended by its deadline: {last:?}"
    );
}
