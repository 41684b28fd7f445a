#!/usr/bin/env bash
# ember-lab's full-width rows on a many-core machine that has nothing installed.
#
#   scripts/wide.sh --pack DIR   here (cargo, and go if the Go rows are wanted): builds DIR,
#                                a folder holding everything the run needs: the stripped lab,
#                                the prebuilt Go peer, this script and the commit it came from
#   bash DIR/wide.sh DIR         there (no cargo, go or network; glibc >= 2.34): runs the rows
#                                below, every table into $OUT/tables.md (OUT defaults to
#                                DIR/out) and each step's report.json, report.md, report.html
#                                and charts into $OUT/STEP/, the reports also bundled in
#                                $OUT/reports.tgz
#
# With C cores (`nproc`) and H = C/2, the run is: micro's fork-join, tree-sum and par-iter
# tables at H workers (the process restricted to CPUs 0..H-1 with taskset, where there is
# one; else the lab pins those runs itself) and at C workers; micro's ramp at C workers;
# containers (the ray-casting frame at C threads; pop tables shortened); producer-consumer's
# published shape at 3 x H and 3 x C threads (a fifth of the published work per item, 5
# rounds);
# light-load at C workers (0.2 s of spawns a run); ramp_probe at C workers (21 bursts, where a
# burst's ramp goes). Every table runs 9 paired rounds. Each step has a time budget (`timeout`), so one slow step cannot eat the
# others' time; a step that overruns it loses its report, and the run goes on. On 16 cores
# the budgets add up to under 6 minutes.
#
# WIDE_QUICK=1 runs every step at --quick size, 2 rounds (a dry run of the script itself).
set -u

die() { echo "wide.sh: $*" >&2; exit 1; }

pack() {
    local dir=$1
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    [ -f "$root/crates/ember-lab/Cargo.toml" ] || die "--pack runs from the repository's scripts/"
    mkdir -p "$dir" || die "cannot create $dir"
    dir=$(cd "$dir" && pwd)
    echo "building the lab (release)"
    (cd "$root" && cargo build --release -p ember-lab) || die "cargo build failed"
    cp "$root/target/release/ember-lab" "$dir/ember-lab" || die "copying the lab"
    strip "$dir/ember-lab" || die "strip failed"
    echo "building ramp_probe (release)"
    (cd "$root" && cargo build --release -p ember-lab --example ramp_probe) || die "cargo build failed"
    cp "$root/target/release/examples/ramp_probe" "$dir/ramp_probe" && strip "$dir/ramp_probe" \
        || die "copying ramp_probe"
    if command -v go >/dev/null; then
        echo "building the Go peer"
        # CGO off: a static program, which needs no libc of the machine it runs on.
        (cd "$root/crates/ember-lab/go" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$dir/ember-go-peer" .) \
            || die "go build failed"
    else
        rm -f "$dir/ember-go-peer"
        echo "no go on PATH: the packed run has no Go rows"
    fi
    cp "${BASH_SOURCE[0]}" "$dir/wide.sh" && chmod +x "$dir/wide.sh" || die "copying wide.sh"
    # The run has no git to ask: the commit travels as a file.
    local commit
    commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
    if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        commit="$commit-dirty"
    fi
    echo "$commit" > "$dir/commit"
    check_libs "$dir/ember-lab"
    check_libs "$dir/ramp_probe"
    echo "packed into $dir: $(cd "$dir" && ls | tr '\n' ' ')"
    echo "run there: bash $dir/wide.sh $dir   (or OUT=/some/dir bash wide.sh .)"
}

# The lab must run where only glibc >= 2.34 is: it may link the C library's own objects
# (and libgcc_s, which every glibc system has), and no symbol version newer than 2.34.
check_libs() {
    local exe=$1 bad
    if command -v ldd >/dev/null; then
        bad=$(ldd "$exe" | grep -v -E 'linux-vdso|ld-linux|/lib(c|m|dl|rt|pthread|gcc_s)\.so' || true)
        [ -z "$bad" ] || die "$exe links more than glibc: $bad"
    fi
    if command -v objdump >/dev/null; then
        bad=$(objdump -T "$exe" | grep -o -E 'GLIBC_2\.(3[5-9]|[4-9][0-9])' | sort -u | tr '\n' ' ')
        [ -z "$bad" ] || die "$exe needs symbols newer than glibc 2.34: $bad"
        echo "libraries: glibc only, newest symbol version $(objdump -T "$exe" | grep -o -E 'GLIBC_2\.[0-9]+' | sort -t. -k2 -n -u | tail -1)"
    fi
}

run() {
    local dir
    dir=$(cd "$1" && pwd) || die "no folder $1"
    local lab=$dir/ember-lab
    [ -x "$lab" ] || die "$lab missing: pack first (scripts/wide.sh --pack DIR)"
    local out=${OUT:-$dir/out}
    mkdir -p "$out" || die "cannot create $out"
    out=$(cd "$out" && pwd)
    if [ -x "$dir/ember-go-peer" ]; then
        export EMBER_LAB_GO_PEER=$dir/ember-go-peer
    fi
    local cores half
    cores=$(nproc)
    half=$(( cores / 2 > 0 ? cores / 2 : 1 ))
    local size=(--repeat 9)
    # The published producer-consumer shape (3 pools x C threads, 50 items a consumer) at a
    # fifth of its work per item, 5 rounds: at the publication's 10^6 units even 3 rounds
    # outlasted a 50 s budget on 16 cores; at a fifth, 5 rounds took 20-25 s.
    local pc=(producer-consumer --items-per-thread 100 --published-work 200000)
    local pc_size=(--repeat 5)
    if [ -n "${WIDE_QUICK:-}" ]; then
        size=(--quick --repeat 2)
        pc=(producer-consumer --items-per-thread 100)
        pc_size=("${size[@]}")
    fi
    # Restricts a step to CPUs 0..half-1: taskset where there is one, else nothing (the lab
    # then pins its narrower runs itself, `--workers` below the core count).
    local narrow=()
    command -v taskset >/dev/null && narrow=(taskset -c "0-$(( half - 1 ))")
    local fj=(micro --micro-bench fork-join,tree-sum,par-iter)

    {
        echo "# ember-lab, full width: $cores cores"
        echo
        echo "commit $(cat "$dir/commit" 2>/dev/null || echo unknown); $(uname -sr)"
        echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
        echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
        [ -n "${WIDE_QUICK:-}" ] && echo "WIDE_QUICK: --quick sizes, 2 rounds: no verdicts"
        echo
    } > "$out/tables.md"

    local start=$SECONDS failed=0
    # step NAME BUDGET_S COMMAND...: runs the lab's COMMAND within BUDGET_S seconds.
    step() {
        local name=$1 budget=$2
        shift 2
        printf '[%4d s] %s: starting (budget %d s)\n' $(( SECONDS - start )) "$name" "$budget"
        local t0=$SECONDS rc=0
        timeout -k 10 "$budget" "$@" --out "$out/$name" > "$out/$name.txt" 2> "$out/$name.err" || rc=$?
        local took=$(( SECONDS - t0 ))
        {
            echo "## $name"
            echo
            echo "\`$*\`: exit $rc, $took s"
            echo
            cat "$out/$name.txt"
            echo
        } >> "$out/tables.md"
        if [ "$rc" = 0 ]; then
            printf '[%4d s] %s: done in %d s\n' $(( SECONDS - start )) "$name" "$took"
        else
            [ "$rc" = 124 ] && echo "  over its budget: killed, no report" >&2
            tail -3 "$out/$name.err" >&2
            printf '[%4d s] %s: FAILED (exit %d) after %d s\n' $(( SECONDS - start )) "$name" "$rc" "$took"
            failed=$(( failed + 1 ))
        fi
    }

    # Budgets in seconds; on 16 cores the steps should take about two thirds of them, and
    # they sum to 340 s (375 with a second binary's ramp): about 6 minutes with the set-up.
    step "micro-$cores" 70 "$lab" "${fj[@]}" --workers "$cores" "${size[@]}"
    step "micro-$half" 80 "${narrow[@]}" "$lab" "${fj[@]}" --workers "$half" "${size[@]}"
    step "ramp-$cores" 35 "$lab" micro --micro-bench ramp "${size[@]}"
    step "containers-$cores" 25 "$lab" containers --cn-pop-items 200000 "${size[@]}"
    step "producer-consumer-3x$cores" 45 "$lab" "${pc[@]}" "${pc_size[@]}"
    step "producer-consumer-3x$half" 45 "${narrow[@]}" "$lab" "${pc[@]}" "${pc_size[@]}"
    step "light-load-$cores" 40 "$lab" light-load --ll-seconds 0.2 "${size[@]}"
    # Where a burst's ramp goes (the lab's example): wake-up latency, its cost, the levels.
    if [ -x "$dir/ramp_probe" ]; then
        printf '[%4d s] ramp-probe: starting\n' $(( SECONDS - start ))
        local bursts=21
        [ -n "${WIDE_QUICK:-}" ] && bursts=2
        {
            echo "## ramp-probe"
            echo
            echo '```'
            RAMP_PROBE_SLOW=1 timeout -k 5 30 "$dir/ramp_probe" "$cores" "$bursts" 2>&1
            echo '```'
            echo
        } >> "$out/tables.md"
    fi
    # A second lab binary packed beside the first (another build of ember, such as the one
    # before a change): its ramp, for a before/after on the same machine.
    if [ -x "$dir/ember-lab-base" ]; then
        step "ramp-$cores-base" 35 "$dir/ember-lab-base" micro --micro-bench ramp "${size[@]}"
    fi

    # Every step's full report in one file, for machines that hand back only a few files.
    (cd "$out" && tar czf reports.tgz -- */report.md */report.json 2>/dev/null)
    printf '[%4d s] all steps ended, %d failed; tables in %s/tables.md, full reports in %s/reports.tgz\n' \
        $(( SECONDS - start )) "$failed" "$out" "$out"
    [ "$failed" = 0 ]
}

case "${1:-}" in
    --pack)
        [ $# = 2 ] || die "usage: wide.sh --pack DIR"
        pack "$2"
        ;;
    "" | -h | --help)
        sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        ;;
    *)
        [ $# = 1 ] || die "usage: wide.sh DIR (after wide.sh --pack DIR)"
        run "$1"
        ;;
esac
