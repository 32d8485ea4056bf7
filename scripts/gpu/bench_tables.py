#!/usr/bin/env python3
"""Markdown tables of docs/BENCHMARKS.md from the JSON that scripts/gpu/benchmarks.sh writes.

Usage: bench_tables.py OUT_DIR   (prints the tables of every result file present)
Each ratio is the exported header over cuBLAS (SGEMM, or DGEMM for f64) timed in the same run.
"""
import json
import math
import pathlib
import sys


def load(folder, name):
    path = folder / f"{name}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        print(f"<!-- {path.name} is not JSON: {e} -->")
        return None


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def ratio(r):
    return r.get("header_ratio")


def fmt(v):
    return "-" if v is None else f"{v:.3f}x"


def kernel_of(r):
    """The family the header ran, with its slice count when it split K."""
    k = (r.get("header_kernel") or r.get("winner") or "").split("[")[0]
    return f"{k} (K/{r['splits']})" if r.get("splits", 1) > 1 else k


def split_note(r):
    return f" in {r['splits']} slices of K" if r.get("splits", 1) > 1 else ""


def shape_and_layout(problem):
    """'256x256x256:nt' -> ('256x256x256', 'nt'), '77x99x33:tt*300' -> ('77x99x33', 'tt'); the dtype suffix is dropped."""
    parts = problem.split(":")
    layout = next((p.split("*")[0] for p in parts[1:] if p.split("*")[0] in ("nt", "tn", "tt")), "nn")
    return parts[0], layout


def summary_line(values, floor):
    values = [v for v in values if v is not None]
    under = sum(1 for v in values if v < floor)
    return f"geomean {fmt(geomean(values))}, minimum {fmt(min(values) if values else None)}, {under} of {len(values)} under {floor}x"


def cuda_version(v):
    """13000 -> '13.0'."""
    return f"{v // 1000}.{v % 1000 // 10}" if isinstance(v, int) else str(v)


def environment(folder, data):
    """The device, its driver (nvidia-smi's), CUDA, the commit and how the figures were taken."""
    env = (folder / "environment.txt").read_text().split("\n") if (folder / "environment.txt").exists() else []
    smi = env[0].split(",") if env else []
    driver = smi[1].strip() if len(smi) > 1 else cuda_version(data.get("driver"))
    commit = env[2].strip() if len(env) > 2 else "unknown"
    return (f"{data.get('device')}, driver {driver}, CUDA {cuda_version(data.get('runtime'))}, "
            f"cm-tune at commit {commit}; the header built by nvcc and called through its dispatch, against "
            f"cuBLAS timed in the same run (TF32 off), {data.get('rounds')} interleaved rounds, L2 flushed")


def layouts_table(folder, name, title, layouts):
    data = load(folder, name)
    if not data:
        return
    by_shape = {}
    for r in data["rows"]:
        shape, layout = shape_and_layout(r["problem"])
        by_shape.setdefault(shape, {})[layout] = r
    print(f"### {title}\n\n{environment(folder, data)}.\n")
    print("| shape | " + " | ".join(layouts) + " | kernels (" + ", ".join(layouts) + ") |")
    print("|---|" + "---|" * len(layouts) + "---|")
    for shape, rows in by_shape.items():
        cells = []
        for layout in layouts:
            r = rows.get(layout)
            cells.append("-" if not r else fmt(ratio(r)) + ("" if r.get("tuned") else " \\*")
                         + ("" if r.get("header_valid", True) else " INVALID"))
        kernels = ", ".join(kernel_of(rows[l]) if l in rows else "-" for l in layouts)
        print(f"| {shape} | " + " | ".join(cells) + f" | {kernels} |")
    print()
    for layout in layouts:
        values = [ratio(rows[layout]) for rows in by_shape.values() if layout in rows]
        print(f"- **{layout}**: {summary_line(values, 0.8)}")
    print("\n\\* not tuned: the cost model chose the kernel.\n")


def rows_table(folder, name, title, floor=0.8):
    data = load(folder, name)
    if not data:
        return
    print(f"### {title}\n\n{environment(folder, data)}.\n")
    print("| call | header / cuBLAS | header TF/s | cuBLAS TF/s | kernel |")
    print("|---|---|---|---|---|")
    for r in data["rows"]:
        mark = "" if r.get("tuned") else " \\*"
        invalid = "" if r.get("header_valid", True) else " INVALID"
        print(f"| {r['problem']}{mark} | {fmt(ratio(r))}{invalid} | {r.get('header_tflops') or 0:.2f} | "
              f"{r.get('cublas_tflops') or 0:.2f} | `{r.get('header_kernel') or r.get('winner')}`"
              f"{split_note(r)} |")
    print(f"\n{summary_line([ratio(r) for r in data['rows']], floor)}.\n\n\\* not tuned: the cost model chose the kernel.\n")


def quantile(values, q):
    """Linear interpolation between order statistics, as cm-tune's spreads."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def regret_table(folder, suites):
    """bench --regret: the dispatched kernel's time over the fastest exported kernel's, per suite and layout."""
    lines = []
    for name, title in suites:
        data = load(folder, name)
        if not data or not data.get("regret"):
            continue
        groups = {}
        for r in data["regret"]["rows"]:
            groups.setdefault(shape_and_layout(r["problem"])[1], []).append(r)
        for layout, rows in groups.items():
            values = [r["regret"] for r in rows]
            worst = max(rows, key=lambda r: r["regret"])
            lines.append(f"| {title} | {layout} | {len(values)} | {quantile(values, 0.5):.3f} | {quantile(values, 0.9):.3f} | "
                         f"{max(values):.3f} | {worst['problem']}: `{worst['chosen'].split('[')[0]}` against "
                         f"`{worst['best'].split('[')[0]}` |")
    if not lines:
        return
    print("### Dispatch regret (`bench --regret`)\n")
    print("Every exported kernel that a call can run is timed with the one the dispatch chose, interleaved; the "
          "regret is the chosen kernel's time over the fastest's (split K: the header's split run).\n")
    print("| suite | layout | calls | median | 90th pct | max | worst call: chosen against fastest |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(lines) + "\n")


def tune_times(folder):
    for name, what in (("readme-time", "the README's main command (`tune --device 0 --sizes 256..4096`)"),
                       ("tuned-all-time", "then `tune --device 0 --sizes @public.txt --layout all` (flags below)"),
                       ("f64-time", "`tune --device 0 --sizes 256..4096 --dtype f64`")):
        t = load(folder, name)
        if t and "reused" in t:
            print(f"- {what}: not rerun; its database is the one tuned at commit {t['reused']}")
        elif t:
            warm = f", warm rerun {t['warm_seconds']} s" if "warm_seconds" in t else ""
            flags = f", with `{t['flags']}`" if t.get("flags") else ""
            print(f"- {what}: cold {t['cold_seconds']} s{warm}{flags} (exit {t['rc']})")
    print()


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    print("## Tuning time\n")
    tune_times(folder)
    layouts_table(folder, "public-layouts", "README header, public suite, every layout", ["nn", "nt", "tn", "tt"])
    rows_table(folder, "public-batched", "README header, public batched suite")
    rows_table(folder, "squares", "README header, the tuned sizes", floor=0.95)
    layouts_table(folder, "public-tuned-all", "README header plus `tune --sizes @public.txt --layout all`, public suite, "
                  "every layout", ["nn", "nt", "tn", "tt"])
    layouts_table(folder, "public-f64", "`--dtype f64` header against DGEMM, public suite", ["nn", "nt"])
    regret_table(folder, [("public-layouts", "public"), ("public-batched", "public batched"),
                          ("public-f64", "public, f64")])


if __name__ == "__main__":
    main()
