//! Timelines: one row per worker thread, time in ms across, rendered to SVG from an
//! [`ember::Trace`].
//!
//! Task spans are bars coloured by their label's kind ([`ember::TraceEvent::label_kind`]:
//! `"decode 7"` → `decode`; unlabelled tasks form one more kind), sleeps are a thin grey bar
//! through the middle of the row, and wake-ups a short black tick at the top of it — the
//! picture in which work hopping between threads, and threads waking for it, can be seen.
//!
//! Rendering goes through [`Timeline`], a plain description of rows and spans, so that any
//! source of spans (and the tests) can use it.

use plotters::prelude::*;
use std::path::Path;

/// What a span shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// A task whose label has this kind (`None`: unlabelled).
    Task(Option<String>),
    /// The thread slept.
    Sleep,
    /// The thread was woken (an instant).
    Wake,
}

/// One bar (or instant) on one row.
#[derive(Clone, Debug)]
pub struct Span {
    pub row: usize,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub kind: SpanKind,
}

/// Rows and their spans.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Number of rows (threads).
    pub rows: usize,
    pub spans: Vec<Span>,
}

impl Timeline {
    /// The timeline of a pool's trace: one row per worker; steals and kicks are not drawn.
    pub fn from_trace(trace: &ember::Trace) -> Timeline {
        let spans = trace
            .events()
            .iter()
            .filter_map(|e| {
                let kind = match e.kind {
                    ember::TraceKind::Task => SpanKind::Task(e.label_kind().map(str::to_string)),
                    ember::TraceKind::Sleep => SpanKind::Sleep,
                    ember::TraceKind::Wake => SpanKind::Wake,
                    _ => return None,
                };
                Some(Span {
                    row: e.worker,
                    start_ns: e.start_ns,
                    duration_ns: e.duration_ns,
                    kind,
                })
            })
            .collect();
        Timeline {
            rows: trace.threads(),
            spans,
        }
    }

    /// The task kinds present, in order of first appearance.
    fn task_kinds(&self) -> Vec<Option<String>> {
        let mut kinds: Vec<Option<String>> = Vec::new();
        for s in &self.spans {
            if let SpanKind::Task(k) = &s.kind {
                if !kinds.contains(k) {
                    kinds.push(k.clone());
                }
            }
        }
        kinds
    }
}

/// Colours of task kinds, in order.
const KIND_COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];
const SLEEP: RGBColor = RGBColor(0xa0, 0xa0, 0xa0);
/// Width of the legend column, right of the plot.
const LEGEND_WIDTH: u32 = 170;

/// Writes `t` as an SVG timeline titled `title` to `path`.
pub fn write_svg(t: &Timeline, title: &str, path: &Path) -> Result<(), String> {
    let err = |x: &dyn std::fmt::Display| x.to_string();
    let rows = t.rows.max(1);
    let end_ns = t
        .spans
        .iter()
        .map(|s| s.start_ns + s.duration_ns)
        .max()
        .unwrap_or(0)
        .max(1);
    let ms = |ns: u64| ns as f64 / 1e6;
    // Bottom of a row's band: thread 0 on top.
    let base = |row: usize| (rows - 1 - row.min(rows - 1)) as f64;
    let height = 120 + 60 * rows as u32;
    let root = SVGBackend::new(path, (1400, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| err(&x))?;
    let root = root
        .titled(title, ("sans-serif", 18))
        .map_err(|x| err(&x))?;
    let (plot, legend) = root.split_horizontally(1400 - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..ms(end_ns) * 1.01, 0f64..rows as f64)
        .map_err(|x| err(&x))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("time (ms)")
        .draw()
        .map_err(|x| err(&x))?;
    // Row names, left of the plot, centred on each row (`backend_coord` is in the image's
    // pixels, `plot.draw` in the plot area's).
    let (bx, by) = plot.get_base_pixel();
    for r in 0..rows {
        let (px, py) = chart.backend_coord(&(0.0, base(r) + 0.5));
        plot.draw(&Text::new(
            format!("thread {r}"),
            (px - bx - 80, py - by - 7),
            ("sans-serif", 14),
        ))
        .map_err(|x| err(&x))?;
    }

    // Sleeps first, so task bars are drawn over any overlap.
    chart
        .draw_series(
            t.spans
                .iter()
                .filter(|s| s.kind == SpanKind::Sleep)
                .map(|s| {
                    let y = base(s.row) + 0.5;
                    Rectangle::new(
                        [
                            (ms(s.start_ns), y - 0.04),
                            (ms(s.start_ns + s.duration_ns), y + 0.04),
                        ],
                        SLEEP.filled(),
                    )
                }),
        )
        .map_err(|x| err(&x))?;

    let kinds = t.task_kinds();
    for (i, kind) in kinds.iter().enumerate() {
        let colour = KIND_COLOURS[i % KIND_COLOURS.len()];
        let bars: Vec<[(f64, f64); 2]> = t
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Task(kind.clone()))
            .map(|s| {
                let y = base(s.row);
                // At least a hair wide, so very short tasks stay visible.
                let x1 = ms(s.start_ns + s.duration_ns.max(end_ns / 4000));
                [(ms(s.start_ns), y + 0.2), (x1, y + 0.8)]
            })
            .collect();
        chart
            .draw_series(bars.iter().map(|&b| Rectangle::new(b, colour.filled())))
            .map_err(|x| err(&x))?;
        // A white outline separates back-to-back tasks.
        chart
            .draw_series(
                bars.iter()
                    .map(|&b| Rectangle::new(b, WHITE.stroke_width(1))),
            )
            .map_err(|x| err(&x))?;
    }

    chart
        .draw_series(
            t.spans
                .iter()
                .filter(|s| s.kind == SpanKind::Wake)
                .map(|s| {
                    let (x, y) = (ms(s.start_ns), base(s.row));
                    PathElement::new(vec![(x, y + 0.8), (x, y + 0.95)], BLACK.stroke_width(1))
                }),
        )
        .map_err(|x| err(&x))?;

    // The legend, right of the plot.
    let mut y = 24;
    let mut entry = |swatch: &dyn Fn(i32) -> Result<(), String>, text: &str| {
        swatch(y)?;
        legend
            .draw(&Text::new(
                text.to_string(),
                (34, y - 7),
                ("sans-serif", 14),
            ))
            .map_err(|x| err(&x))?;
        y += 22;
        Ok::<(), String>(())
    };
    for (i, kind) in kinds.iter().enumerate() {
        let colour = KIND_COLOURS[i % KIND_COLOURS.len()];
        entry(
            &|y| {
                legend
                    .draw(&Rectangle::new([(8, y - 6), (28, y + 6)], colour.filled()))
                    .map_err(|x| err(&x))
            },
            kind.as_deref().unwrap_or("unlabelled"),
        )?;
    }
    entry(
        &|y| {
            legend
                .draw(&Rectangle::new([(8, y - 2), (28, y + 2)], SLEEP.filled()))
                .map_err(|x| err(&x))
        },
        "sleeping",
    )?;
    entry(
        &|y| {
            legend
                .draw(&PathElement::new(vec![(18, y - 7), (18, y + 7)], BLACK))
                .map_err(|x| err(&x))
        },
        "wake-up",
    )?;
    root.present().map_err(|x| err(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_thread() {
        let span = |row, start_ns, duration_ns, kind| Span {
            row,
            start_ns,
            duration_ns,
            kind,
        };
        let t = Timeline {
            rows: 3,
            spans: vec![
                span(0, 0, 1_000_000, SpanKind::Task(Some("decode".into()))),
                span(1, 500_000, 800_000, SpanKind::Task(Some("decode".into()))),
                span(1, 1_400_000, 100_000, SpanKind::Task(None)),
                span(2, 0, 2_000_000, SpanKind::Sleep),
                span(2, 2_000_000, 0, SpanKind::Wake),
            ],
        };
        let path = std::env::temp_dir().join(format!("ember-timeline-{}.svg", std::process::id()));
        write_svg(&t, "test timeline", &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        for row in 0..3 {
            assert_eq!(
                svg.matches(&format!("\nthread {row}\n")).count(),
                1,
                "{svg}"
            );
        }
        assert!(!svg.contains("thread 3"));
        for label in ["decode", "unlabelled", "sleeping", "wake-up", "time (ms)"] {
            assert!(svg.contains(label), "{label} missing");
        }
    }

    #[test]
    fn from_a_pool_trace() {
        let pool = ember::Pool::builder()
            .threads(2)
            .trace(true)
            .build()
            .unwrap();
        let a = pool.task(|| ()).label("decode 0").spawn();
        let b = pool.task(|| ()).after(&[&a]).label("decode 1").spawn();
        b.join().unwrap();
        pool.wait_idle();
        let t = Timeline::from_trace(&pool.trace());
        assert_eq!(t.rows, 2);
        let decodes = t
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Task(Some("decode".into())))
            .count();
        assert_eq!(decodes, 2);
    }
}
