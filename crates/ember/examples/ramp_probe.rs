use std::sync::Mutex;
use std::time::{Duration, Instant};
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(2);
    let pool = ember::Pool::builder()
        .threads(n)
        .trace(true)
        .build()
        .unwrap();
    for round in 0..5 {
        std::thread::sleep(Duration::from_millis(50));
        let _ = pool.trace();
        let starts = Mutex::new(Vec::new());
        let (t0, sp) = pool.install(|| {
            let t0 = Instant::now();
            ember::scope(|s| {
                for _ in 0..n {
                    let starts = &starts;
                    s.spawn(move |_| {
                        let at = Instant::now();
                        starts
                            .lock()
                            .unwrap()
                            .push((at, ember::current_thread_index()));
                        while at.elapsed() < Duration::from_millis(2) {}
                    });
                }
            });
            (t0, ember::current_thread_index())
        });
        let mut v = starts.into_inner().unwrap();
        v.sort_by_key(|x| x.0);
        let d: Vec<_> = v
            .iter()
            .map(|(at, w)| (at.duration_since(t0).as_micros(), *w))
            .collect();
        let tr = pool.trace();
        let wakes: Vec<_> = tr
            .events()
            .iter()
            .map(|e| {
                (
                    format!("{:?}", e.kind),
                    e.worker,
                    e.woken_by,
                    e.start_ns / 1000,
                    e.duration_ns / 1000,
                )
            })
            .collect();
        println!("round {round}: spawner {sp:?} {d:?}\n   wakes {wakes:?}");
    }
}
