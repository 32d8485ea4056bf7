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


def run_of(folder, data):
    """The driver (nvidia-smi's, else the JSON's CUDA driver version) and the commit of a run, from
    environment.txt (benchmarks.sh writes it: nvidia-smi's line per GPU, cm-tune --version, the
    commit)."""
    env = (folder / "environment.txt").read_text().split("\n") if (folder / "environment.txt").exists() else []
    smi = env[0].split(",") if env else []
    driver = smi[1].strip() if len(smi) > 1 else cuda_version(data.get("driver"))
    version = next((i for i, line in enumerate(env) if line.startswith("cm-tune ")), None)
    commit = env[version + 1].strip() if version is not None and version + 1 < len(env) else "unknown"
    return driver, commit


def header_build(data):
    """How the bench built the header: a header of machine code with g++, one of sources with nvcc."""
    if data.get("header_form") == "machine code":
        return "the header of machine code built by g++"
    return "the header built by nvcc"


def environment(folder, data):
    """The device, its driver (nvidia-smi's), CUDA, the commit and how the figures were taken."""
    driver, commit = run_of(folder, data)
    return (f"{data.get('device')}, driver {driver}, CUDA {cuda_version(data.get('runtime'))}, "
            f"cm-tune at commit {commit}; {header_build(data)} and called through its dispatch, against "
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
                       ("f64-time", "`tune --device 0 --sizes 256..4096 --dtype f64`"),
                       ("tf32x3-time", "`tune --device 0 --dtype tf32x3 --config tf32x3 --sizes 256..4096 --layout nn,nt`, "
                                       "then `--sizes 8192 --no-calibrate`")):
        t = load(folder, name)
        if t and "reused" in t:
            print(f"- {what}: not rerun; its database is the one tuned at commit {t['reused']}")
        elif t:
            warm = f", warm rerun {t['warm_seconds']} s" if "warm_seconds" in t else ""
            flags = f", with `{t['flags']}`" if t.get("flags") else ""
            print(f"- {what}: cold {t['cold_seconds']} s{warm}{flags} (exit {t['rc']})")
    print()


def precision_env(folder, data):
    driver, commit = run_of(folder, data)
    return (f"{data.get('device')}, driver {driver}, CUDA {cuda_version(data.get('runtime'))}, cm-tune at "
            f"commit {commit}; `cm-tune precision --winners`, {data.get('rounds')} interleaved rounds, {data.get('data')} "
            f"inputs (seed {data.get('seed')}), energy over loops of at least {data.get('energy_seconds')} s")


def precision_groups(data):
    """{problem: {"sgemm": row, "tf32": row, "tf32x3": row, "f32": row}} of a precision report."""
    groups = {}
    for r in data["rows"]:
        role = r.get("role")
        if role == "kernel":
            role = "tf32x3" if r["implementation"].startswith("tf32x3") else "f32"
        groups.setdefault(r["problem"], {})[role] = r
    return groups


def num(v, spec):
    return "-" if v is None else format(v, spec)


def precision_table(folder):
    """cm-tune precision at 4096^3 and 8192^3: rate, error and energy of each class."""
    for data_kind in ("uniform", "normal"):
        data = load(folder, f"precision-{data_kind}")
        if not data:
            continue
        print(f"### tf32x3 against cuBLAS SGEMM and TF32, {data_kind} inputs\n\n{precision_env(folder, data)}.\n")
        print("| problem | SGEMM TF/s | TF32 TF/s | tf32x3 TF/s | x SGEMM | error (2^-24): SGEMM / TF32 / tf32x3 | "
              "J per GEMM: SGEMM / tf32x3 (ratio) | tf32x3 kernel |")
        print("|---|---|---|---|---|---|---|---|")
        for problem, g in precision_groups(data).items():
            s, t, x = g.get("sgemm", {}), g.get("tf32", {}), g.get("tf32x3", {})
            print(f"| {problem} | {num(s.get('tflops'), '.1f')} | {num(t.get('tflops'), '.1f')} | "
                  f"{num(x.get('tflops'), '.1f')} | {fmt(x.get('ratio_to_sgemm'))} | "
                  f"{num(s.get('error_units'), '.2f')} / {num(t.get('error_units'), '.0f')} / "
                  f"{num(x.get('error_units'), '.2f')} | {num(s.get('joules_per_gemm'), '.4g')} / "
                  f"{num(x.get('joules_per_gemm'), '.4g')} ({fmt(x.get('energy_ratio_to_sgemm'))}) | "
                  f"`{x.get('implementation', '-')}` |")
        print()


def accuracy_table(folder):
    """The error of each class at 512 x 512 x K (precision --winners on the accuracy sweep)."""
    loaded = {k: load(folder, f"accuracy-{k}") for k in ("uniform", "normal")}
    if not any(loaded.values()):
        return
    first = next(d for d in loaded.values() if d)
    print(f"### tf32x3 accuracy against K\n\n{precision_env(folder, first).replace(first.get('data', ''), 'uniform and normal')}."
          " Each error is the largest over the result, in units of 2^-24 of each element's scale, against FP64.\n")
    print("| problem | data | SGEMM | TF32 | tf32x3 | tf32x3 <= SGEMM | tf32x3 kernel |")
    print("|---|---|---|---|---|---|---|")
    worse = 0
    total = 0
    for data_kind, data in loaded.items():
        if not data:
            continue
        for problem, g in precision_groups(data).items():
            s, t, x = g.get("sgemm", {}), g.get("tf32", {}), g.get("tf32x3", {})
            se, xe = s.get("error_units"), x.get("error_units")
            ok = se is not None and xe is not None and xe <= se
            total += 1
            worse += not ok
            print(f"| {problem} | {data_kind} | {num(se, '.2f')} | {num(t.get('error_units'), '.0f')} | {num(xe, '.2f')} | "
                  f"{'yes' if ok else 'NO'} | `{x.get('implementation', '-')}` |")
    print(f"\ntf32x3 above SGEMM's error in {worse} of {total}.\n")


def tf32x3_shapes_table(folder):
    """The opted-in header (sgemm_tf32x3) against its own SIMT sgemm, each against cuBLAS SGEMM of the same run."""
    data = load(folder, "public-tf32x3")
    if not data:
        return
    pairs = {}
    for r in data["rows"]:
        shape, layout = shape_and_layout(r["problem"])
        pairs.setdefault((shape, layout), {})[r.get("dtype")] = r
    print(f"### Opted-in header (`sgemm_tf32x3`) against the SIMT header (`sgemm`), public suite\n\n"
          f"{environment(folder, data)}. Each ratio is over cuBLAS SGEMM timed in the same interleaved rounds as it.\n")
    print("| shape | layout | sgemm / SGEMM | sgemm_tf32x3 / SGEMM | opted in / SIMT | opted-in kernel |")
    print("|---|---|---|---|---|---|")
    big, other, gains = [], [], []
    same_kernel = 0
    for (shape, layout), g in pairs.items():
        f, x = g.get("f32"), g.get("tf32x3")
        if not f or not x:
            continue
        rf, rx = ratio(f), ratio(x)
        rel = rx / rf if rf and rx else None
        gains.append(rel)
        m, n, k = (int(v) for v in shape.split("x"))
        if min(m, n, k) >= 256:
            big.append(rx)
        same = x.get("header_kernel") == f.get("header_kernel")
        if same:
            same_kernel += 1
        elif rel is not None:
            other.append((rel, shape, layout))
        invalid = "" if x.get("header_valid", True) and f.get("header_valid", True) else " INVALID"
        print(f"| {shape} | {layout} | {fmt(rf)} | {fmt(rx)}{invalid} | {fmt(rel)} | "
              + ("sgemm's" if same else f"`{kernel_of(x)}`") + " |")
    print(f"\n- **M, N, K >= 256**, opted in: {summary_line(big, 1.3)}")
    worst = min(other) if other else None
    print(f"- **opted in against SIMT**: {same_kernel} calls run sgemm's kernel (their ratio differs by noise alone); "
          f"the {len(other)} others: {summary_line([r for r, _, _ in other], 1.0)}"
          + (f"; the lowest, {worst[1]} {worst[2]}" if worst else "") + "\n")


def ragged_table(folder):
    path = folder / "ragged-tf32x3.jsonl"
    if not path.exists():
        return
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]
    if not rows:
        return
    print("### Ragged and misaligned calls, opted in (`scripts/gpu/ragged_bench.cu`)\n")
    print(f"The tf32x3 header, built with nvcc for sm_90a, against cuBLAS SGEMM in the same run ({rows[0]['rounds']} "
          "interleaved rounds, L2 flushed); errors against FP64 in units of 2^-24 of each element's scale.\n")
    print("| call | lda, ldb, ldc | sgemm / SGEMM | sgemm_tf32x3 / SGEMM | error: SGEMM / sgemm / tf32x3 | "
          "opted-in kernel | correct |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["cublas_tflops"]
        print(f"| {r['case']} | {r['lda']}, {r['ldb']}, {r['ldc']} | {fmt(r['sgemm_tflops'] / c)} | "
              f"{fmt(r['tf32x3_tflops'] / c)} | {r['err_cublas']:.2f} / {r['err_sgemm']:.2f} / {r['err_tf32x3']:.2f} | "
              f"`{r['tf32x3_kernel'].split('<')[0]}` | {'yes' if r['ok'] else 'NO'} |")
    print(f"\n{summary_line([r['tf32x3_tflops'] / r['cublas_tflops'] for r in rows], 1.0)}.\n")


def triton_table(folder):
    data = load(folder, "triton-tf32x3")
    if not data:
        return
    if "rows" not in data:
        print(f"### Triton tf32x3\n\n{data.get('error', 'not run')}.\n")
        return
    commit = run_of(folder, data)[1]
    print(f"### Triton tf32x3 (`scripts/gpu/triton_tf32x3.py`)\n\n{data['device']}, Triton {data['triton']}, PyTorch "
          f"{data['torch']}, with cm-tune at commit {commit}: `tl.dot(..., input_precision=\"tf32x3\")`, the best of four "
          "block configurations, against cuBLAS SGEMM (torch.matmul, TF32 off) in the same run "
          "(triton.testing.do_bench); errors as `cm-tune precision`'s.\n")
    print("| problem | Triton TF/s | SGEMM TF/s | x SGEMM | error (2^-24): SGEMM / Triton | config |")
    print("|---|---|---|---|---|---|")
    for r in data["rows"]:
        print(f"| {r['problem']} | {r['triton_tflops']:.1f} | {r['cublas_tflops']:.1f} | "
              f"{fmt(r['triton_tflops'] / r['cublas_tflops'])} | {r['cublas_error_units']:.2f} / "
              f"{r['triton_error_units']:.2f} | {r['config']} |")
    print()


def scale_table(folder):
    """The README's main command on one GPU and on every GPU of the host (scale.json, scale_compare.py)."""
    s = load(folder, "scale")
    if not s:
        return
    driver, commit = run_of(folder, {})
    print("### Tuning on every GPU of a host\n")
    print(f"The README's main command (`tune --sizes 256..4096`), cold, each into a database of its own, on "
          f"one host of {s['gpus']} GPUs ({s['device']}, driver "
          f"{driver}), cm-tune at commit {commit}, both runs on "
          f"{'all cores' if s['cpus'] == 'all' else 'cores ' + s['cpus']}.\n")
    print("| run | wall time | winners | exit |")
    print("|---|---|---|---|")
    print(f"| `--device 0` | {s['one_gpu_seconds']} s | {s['winners'][0]} | {s['rc'][0]} |")
    print(f"| `--device all` ({s['gpus']} GPUs) | {s['every_gpu_seconds']} s | {s['winners'][1]} | {s['rc'][1]} |")
    print()
    print(f"Speedup {s['speedup']:.2f}x. Of the {s['common']} winners the two runs share (problem, layout, batch, "
          f"type, scope), {s['same_kernel']} are the same kernel, {s['other_kernel_within_noise']} another kernel "
          f"within {s['noise']:.0%} of its time, {s['other_kernel_beyond_noise']} another kernel beyond; the winners' "
          f"times, every GPU over one: geomean {s['time_ratio_geomean']}, from {s['time_ratio_min']} to "
          f"{s['time_ratio_max']}.\n")
    if s.get("passes"):
        print("| pass | one GPU | every GPU | speedup | trials | measured in one run only |")
        print("|---|---|---|---|---|---|")
        for p in s["passes"]:
            a, b = p["one_gpu_seconds"], p["every_gpu_seconds"]
            speedup = f"{a / b:.2f}x" if a and b else "-"   # a pass of under a second (the runs' times are whole seconds)
            print(f"| {p['pass']} | {a:.0f} s | {b:.0f} s | {speedup} | {p['trials'][0]} / {p['trials'][1]} | "
                  f"{p['only_one_gpu']} / {p['only_every_gpu']} |")
        print()
    if s.get("by_kind"):
        print("| winners | shared | same kernel | other kernel, within noise | beyond | time ratio (geomean, range) |")
        print("|---|---|---|---|---|---|")
        for k in s["by_kind"]:
            print(f"| {k['kind']} | {k['common']} | {k['same_kernel']} | {k['other_kernel_within_noise']} | "
                  f"{k['other_kernel_beyond_noise']} | {k['time_ratio_geomean']} ({k['time_ratio_min']}-"
                  f"{k['time_ratio_max']}) |")
        print()
    if s.get("largest_overall_differences"):
        print("| problem (overall winner) | one GPU | every GPU | time ratio |")
        print("|---|---|---|---|")
        for d in s["largest_overall_differences"]:
            print(f"| {d['problem']} | `{d['one_gpu']}` | `{d['every_gpu']}` | {d['time_ratio']} |")
        print()


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    print("## Tuning time\n")
    tune_times(folder)
    scale_table(folder)
    layouts_table(folder, "public-layouts", "README header, public suite, every layout", ["nn", "nt", "tn", "tt"])
    rows_table(folder, "public-batched", "README header, public batched suite")
    rows_table(folder, "squares", "README header, the tuned sizes", floor=0.95)
    layouts_table(folder, "public-tuned-all", "README header plus `tune --sizes @public.txt --layout all`, public suite, "
                  "every layout", ["nn", "nt", "tn", "tt"])
    layouts_table(folder, "public-f64", "`--dtype f64` header against DGEMM, public suite", ["nn", "nt"])
    precision_table(folder)
    tf32x3_shapes_table(folder)
    ragged_table(folder)
    accuracy_table(folder)
    triton_table(folder)
    regret_table(folder, [("public-layouts", "public"), ("public-batched", "public batched"),
                          ("public-f64", "public, f64")])


if __name__ == "__main__":
    main()
