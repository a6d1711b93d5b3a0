#!/usr/bin/env python3
"""Sums `ncu --csv --page raw --metrics gpu__time_duration.sum` output per kernel name.

usage: ncu_summary.py NCU_CSV [--pass-kernel embedding_kernel]
Prints the kernels' total device time and per pass (passes: the launches of --pass-kernel, which
runs once per forward pass), then the kernels by share of that time. With the wall time per token from
`llaisys-bench cuda --scenario decode`, the difference is what the host and the launch gaps cost.
"""
import argparse
import collections
import csv
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--pass-kernel", default="embedding_kernel")
    a = ap.parse_args()
    lines = open(a.csv, encoding="utf-8", errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        sys.exit("no ncu CSV header found")
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    name_col = header.index("Kernel Name")
    time_col = next(i for i, h in enumerate(header) if h.startswith("gpu__time_duration"))
    unit = rows[1][time_col] if len(rows) > 1 and not rows[1][0].isdigit() else "ns"
    scale = {"ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "nsecond": 1e-3}.get(unit, 1e-3)
    per_kernel = collections.defaultdict(lambda: [0, 0.0])
    for r in rows[1:]:
        if not r or not r[0].isdigit():
            continue
        try:
            t = float(r[time_col].replace(",", "")) * scale
        except ValueError:
            continue
        k = r[name_col].split("(")[0][:80]
        per_kernel[k][0] += 1
        per_kernel[k][1] += t
    passes = max(1, sum(n for k, (n, _) in per_kernel.items() if a.pass_kernel in k))
    a.passes = passes
    total = sum(v[1] for v in per_kernel.values())
    launches = sum(v[0] for v in per_kernel.values())
    print(f"{launches} launches, {total:.1f} us of kernel time in all, {total / a.passes:.1f} us and "
          f"{launches / a.passes:.0f} launches per pass ({a.passes} passes)")
    for k, (n, t) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"  {100 * t / total:5.1f}%  {t / a.passes:8.1f} us/pass  {n / a.passes:5.1f} launches/pass  {k}")


if __name__ == "__main__":
    main()
