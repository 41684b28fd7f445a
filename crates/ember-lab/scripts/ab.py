#!/usr/bin/env python3
"""A/B comparison of two ember-lab binaries (two versions of ember under the same lab).

usage: ab.py [--rt] ROUNDS OUTDIR BIN_A BIN_B -- LAB_ARGS...
       ab.py --against-aa AB_OUTDIR AA_OUTDIR

Each round runs A and B once each, in alternating order, with `--repeat 1 --json`, so that a
slow moment of a shared machine hits both alike. The `ember*` rows of every table are paired
by (experiment, table parameters, system); parameters the lab calibrates per run
(`produce_units`, `work_units`) are left out of the pairing key. For each row and metric it
prints the median of the per-round ratios B/A and the sign-test 95 % confidence interval of
that median (distribution-free, as the lab's own paired ratios).

Run A against itself (BIN_A twice) to see the noise floor of this machine: the interval an
A/A comparison gives is the finest difference an A/B one can resolve in as many rounds.
`--against-aa` reads the `raw.json` of an A/B run and of its A/A run and prints each row and
metric whose A/B interval lies wholly above (or below) the A/A interval of the same row.

`--rt` runs both binaries under `chrt -f 10` (real-time priority, which needs the privilege):
on a small machine the 2-worker rows otherwise swing between levels with whatever else runs.
Rows that report `waves` (`cycle`) also get `ctx_switches_per_wave`: a `cycle` run lasts as
long whatever its speed, so a faster build makes more waves, and more switches, per run.

Example (old and new ember under one lab source, 11 rounds of `micro`):
    python3 crates/ember-lab/scripts/ab.py 11 /tmp/ab lab-old lab-new -- micro
"""
import ast
import json
import os
import re
import subprocess
import sys
from math import comb

METRICS = ("ns_per_op", "wall_s", "cpu_s", "ctx_switches", "ctx_switches_per_wave")


def ci_ranks(n):
    """1-based ranks (lo, hi) of the sign-test 95 % interval of a median of n values."""
    total, k = 0.0, -1
    for i in range(n + 1):
        total += comb(n, i) / 2**n
        if total > 0.025:
            break
        k = i
    return k + 1, n - k


def pairing_key(experiment, params, system):
    params = {k: v for k, v in params.items() if k not in ("produce_units", "work_units")}
    return (experiment, json.dumps(params, sort_keys=True), system)


def ember_rows(report):
    rows = {}
    for experiment in report["experiments"]:
        for row in experiment["rows"]:
            if row["system"].startswith("ember"):
                key = pairing_key(experiment["name"], row.get("params", {}), row["system"])
                rows[key] = with_per_wave(dict(row["median"]))
    return rows


def with_per_wave(median):
    """`median` with `ctx_switches_per_wave` where it reports `waves`."""
    if median.get("waves") and "ctx_switches" in median:
        median["ctx_switches_per_wave"] = median["ctx_switches"] / median["waves"]
    return median


def intervals(data):
    """Per (row, metric): the median of the per-round ratios B/A and its sign-test 95 % CI."""
    out = {}
    for key in sorted(set(data[0]["A"]) & set(data[0]["B"])):
        for metric in METRICS:
            ratios = sorted(
                d["B"][key][metric] / d["A"][key][metric]
                for d in data
                if key in d["A"] and key in d["B"] and d["A"][key].get(metric) and d["B"][key].get(metric)
            )
            n = len(ratios)
            if n < 6:
                continue
            lo, hi = ci_ranks(n)
            median = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
            out[(key, metric)] = (median, ratios[lo - 1], ratios[hi - 1], n)
    return out


def against_aa(ab_dir, aa_dir):
    """Prints the rows and metrics whose A/B interval lies wholly outside the A/A one."""
    def load(d):
        with open(f"{d}/raw.json") as raw:
            # Keys were written as the text of their tuples.
            rounds = json.load(raw)
        return [{w: {ast.literal_eval(k): with_per_wave(v) for k, v in r[w].items()} for w in r} for r in rounds]

    ab, aa = intervals(load(ab_dir)), intervals(load(aa_dir))
    for (key, metric), (median, lo, hi, n) in sorted(ab.items()):
        if (key, metric) not in aa:
            continue
        _, aa_lo, aa_hi, _ = aa[(key, metric)]
        side = "above" if lo > aa_hi else "below" if hi < aa_lo else None
        if side:
            print(
                f"{side:<5} {key[2]:<22} {metric:<21} {median:6.3f} [{lo:.3f}-{hi:.3f}] "
                f"A/A [{aa_lo:.3f}-{aa_hi:.3f}] n={n}  {key[1][:90]}"
            )


def main():
    args = sys.argv[1:]
    if args[:1] == ["--against-aa"]:
        if len(args) != 3:
            sys.exit(__doc__)
        against_aa(args[1], args[2])
        return
    prefix = []
    if args[:1] == ["--rt"]:
        prefix, args = ["chrt", "-f", "10"], args[1:]
    if "--" not in args or len(args) < 5:
        sys.exit(__doc__)
    rounds, outdir, bin_a, bin_b = int(args[0]), args[1], args[2], args[3]
    lab_args = args[args.index("--") + 1 :]
    os.makedirs(outdir, exist_ok=True)
    data = []
    for i in range(rounds):
        order = [("A", bin_a), ("B", bin_b)]
        if i % 2:
            order.reverse()
        result = {}
        for name, binary in order:
            run = subprocess.run(
                [*prefix, binary, *lab_args, "--repeat", "1", "--json", "--out", f"{outdir}/{name}{i}"],
                capture_output=True,
                text=True,
            )
            if run.returncode != 0:
                sys.exit(f"{binary} failed:\n{run.stderr[-2000:]}")
            result[name] = ember_rows(json.loads(run.stdout))
        data.append(result)
        print(f"round {i + 1}/{rounds} done", file=sys.stderr, flush=True)
    with open(f"{outdir}/raw.json", "w") as raw:
        json.dump([{w: {str(k): v for k, v in d[w].items()} for w in d} for d in data], raw)
    for (key, metric), (median, lo, hi, n) in intervals(data).items():
        print(
            f"{key[0]:>18} {key[2]:<22} {metric:<13} {median:6.3f} "
            f"[{lo:.3f}-{hi:.3f}] n={n}  {key[1][:90]}"
        )


if __name__ == "__main__":
    main()
