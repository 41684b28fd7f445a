#!/usr/bin/env python3
"""A/B comparison of two ember-lab binaries (two versions of ember under the same lab).

usage: ab.py ROUNDS OUTDIR BIN_A BIN_B -- LAB_ARGS...

Each round runs A and B once each, in alternating order, with `--repeat 1 --json`, so that a
slow moment of a shared machine hits both alike. The `ember*` rows of every table are paired
by (experiment, table parameters, system); parameters the lab calibrates per run
(`produce_units`, `work_units`) are left out of the pairing key. For each row and metric it
prints the median of the per-round ratios B/A and the sign-test 95 % confidence interval of
that median (distribution-free, as the lab's own paired ratios).

Run A against itself (BIN_A twice) to see the noise floor of this machine: the interval an
A/A comparison gives is the finest difference an A/B one can resolve in as many rounds.

Example (old and new ember under one lab source, 11 rounds of `micro`):
    python3 crates/ember-lab/scripts/ab.py 11 /tmp/ab lab-old lab-new -- micro
"""
import json
import os
import re
import subprocess
import sys
from math import comb

METRICS = ("ns_per_op", "wall_s", "cpu_s", "ctx_switches")


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
                rows[key] = row["median"]
    return rows


def main():
    if "--" not in sys.argv or len(sys.argv) < 6:
        sys.exit(__doc__)
    rounds, outdir, bin_a, bin_b = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    lab_args = sys.argv[sys.argv.index("--") + 1 :]
    os.makedirs(outdir, exist_ok=True)
    data = []
    for i in range(rounds):
        order = [("A", bin_a), ("B", bin_b)]
        if i % 2:
            order.reverse()
        result = {}
        for name, binary in order:
            run = subprocess.run(
                [binary, *lab_args, "--repeat", "1", "--json", "--out", f"{outdir}/{name}{i}"],
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
            print(
                f"{key[0]:>18} {key[2]:<22} {metric:<13} {median:6.3f} "
                f"[{ratios[lo - 1]:.3f}-{ratios[hi - 1]:.3f}] n={n}  {key[1][:90]}"
            )


if __name__ == "__main__":
    main()
