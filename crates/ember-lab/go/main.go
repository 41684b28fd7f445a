// The Go peer of ember-lab: the lab's workloads in Go's runtime, whose scheduler is where the
// "wake a sleeper only if nobody is searching" rule comes from. The lab builds this program
// when `go` is on PATH, runs it as a child process and reads `metric value` lines from its
// standard output; the lab itself measures the process from outside (wall, CPU, switches).
//
//	cycle WORKERS RINGS RING_LEN HOPS TARGET_MS
//	light-load THREADS INTERVAL_US TASKS
//	producer-consumer THREADS POOLS ITEMS WORK PRODUCE
//	version (the Go release it was built with, for a lab that did not build it)
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: ember-go-peer cycle|light-load|producer-consumer ARGS...|version")
	}
	if os.Args[1] == "version" {
		fmt.Println(runtime.Version())
		return
	}
	args := make([]uint64, 0, len(os.Args)-2)
	for _, a := range os.Args[2:] {
		v, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			fail(fmt.Sprintf("not a count: %q", a))
		}
		args = append(args, v)
	}
	want := map[string]int{"cycle": 5, "light-load": 3, "producer-consumer": 5}
	n, known := want[os.Args[1]]
	if !known || len(args) != n {
		fail(fmt.Sprintf("%s takes %d numbers", os.Args[1], n))
	}
	switch os.Args[1] {
	case "cycle":
		cycle(int(args[0]), int(args[1]), int(args[2]), args[3], time.Duration(args[4])*time.Millisecond)
	case "light-load":
		lightLoad(int(args[0]), time.Duration(args[1])*time.Microsecond, int(args[2]))
	case "producer-consumer":
		producerConsumer(int(args[0]), int(args[1]), int(args[2]), args[3], args[4])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "ember-go-peer:", msg)
	os.Exit(2)
}

func metric(name string, v float64) { fmt.Printf("%s %g\n", name, v) }

// cycle: RINGS rings of RING_LEN goroutines, each blocked on its own channel; in a wave, a
// ring's token makes its share of HOPS hops, each a receive and a send to the next position.
// Waves repeat until TARGET has passed. GOMAXPROCS is WORKERS, as the Rust pools have WORKERS
// threads.
func cycle(workers, rings, ringLen int, hops uint64, target time.Duration) {
	runtime.GOMAXPROCS(workers)
	// A wave's end wakes the measuring goroutine once, as the Rust rows' mailbox does: each
	// ring's last hop adds its count, and the one that finishes the wave signals.
	done := make(chan struct{}, 1)
	var made atomic.Uint64
	var unfinished atomic.Int64
	var inboxes [][]chan uint64
	for k := 0; k < rings; k++ {
		share := hops / uint64(rings)
		if uint64(k) < hops%uint64(rings) {
			share++
		}
		ring := make([]chan uint64, ringLen)
		for i := range ring {
			ring[i] = make(chan uint64, 1)
		}
		for i := range ring {
			in, out := ring[i], ring[(i+1)%ringLen]
			go func() {
				for hop := range in {
					if hop+1 == share {
						made.Add(hop + 1)
						if unfinished.Add(-1) == 0 {
							done <- struct{}{}
						}
						continue
					}
					out <- hop + 1
				}
			}()
		}
		inboxes = append(inboxes, ring)
	}
	start := time.Now()
	waves := uint64(0)
	for waves == 0 || time.Since(start) < target {
		made.Store(0)
		unfinished.Store(int64(rings))
		for _, ring := range inboxes {
			ring[0] <- 0
		}
		<-done
		if total := made.Load(); total != hops {
			fail(fmt.Sprintf("cycle: %d hops made, %d asked", total, hops))
		}
		waves++
	}
	elapsed := time.Since(start).Seconds()
	for _, ring := range inboxes {
		for _, c := range ring {
			close(c)
		}
	}
	metric("ops_per_s", float64(hops*waves)/elapsed)
	metric("ns_per_op", elapsed*1e9/float64(hops*waves))
	metric("waves", float64(waves))
}

// lightLoad: a goroutine started every INTERVAL for TASKS tasks; each records how long after
// its `go` statement it started.
func lightLoad(threads int, interval time.Duration, tasks int) {
	runtime.GOMAXPROCS(threads)
	latency := make([]int64, tasks)
	var wg sync.WaitGroup
	wg.Add(tasks)
	start := time.Now()
	for i := 0; i < tasks; i++ {
		if due := start.Add(time.Duration(i) * interval); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
		spawned := time.Now()
		go func(i int) {
			latency[i] = int64(time.Since(spawned))
			wg.Done()
		}(i)
	}
	wg.Wait()
	sort.Slice(latency, func(a, b int) bool { return latency[a] < latency[b] })
	pct := func(p float64) float64 {
		rank := int(p / 100 * float64(tasks))
		if float64(rank) < p/100*float64(tasks) {
			rank++
		}
		if rank < 1 {
			rank = 1
		}
		return float64(latency[rank-1]) / 1e3
	}
	metric("latency_p50_us", pct(50))
	metric("latency_p99_us", pct(99))
}

// work does `units` relaxed atomic adds on a counter of its own, as the Rust rows do.
func work(units uint64) {
	var counter uint64
	for i := uint64(0); i < units; i++ {
		atomic.AddUint64(&counter, 1)
	}
	sink.Add(atomic.LoadUint64(&counter))
}

var sink atomic.Uint64

// producerConsumer: POOLS serial producers at once, each feeding THREADS consumer goroutines
// over a channel; an item costs WORK units to consume and PRODUCE units to produce.
func producerConsumer(threads, pools, items int, workUnits, produce uint64) {
	var all sync.WaitGroup
	for p := 0; p < pools; p++ {
		all.Add(1)
		go func() {
			defer all.Done()
			ch := make(chan struct{}, items)
			var consumers sync.WaitGroup
			for t := 0; t < threads; t++ {
				consumers.Add(1)
				go func() {
					defer consumers.Done()
					for range ch {
						work(workUnits)
					}
				}()
			}
			for i := 0; i < items; i++ {
				work(produce)
				ch <- struct{}{}
			}
			close(ch)
			consumers.Wait()
		}()
	}
	all.Wait()
	metric("items", float64(pools*items))
}
