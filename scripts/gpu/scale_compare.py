#!/usr/bin/env python3
"""Compares the winners of the README's command on one GPU and on every GPU (benchmarks.sh scale-1,
scale-all), for docs/BENCHMARKS.md.

Usage: scale_compare.py OUT > OUT/scale.json
Reads OUT/scale-{1,all}-time.json and OUT/scale-{1,all}-winners.jsonl (`db export --what winners
--format json`). A winner is keyed by its problem, layout, batch, type and scope; where the run on
every GPU holds one per GPU of the model, the fastest stands for them. Two runs agree on a problem
when they chose the same kernel, or kernels whose measured times differ by at most NOISE (3%): the
spread of one kernel's median between two runs on two H100s. The winners are also counted apart by
kind: the overall winners of the requested problems (OUT/scale-1.json, tune --json, names them), the
overall winners of calibration's shapes, and the per-family and portable winners. Where the saved
databases are there (OUT/scale-{1,all}-nocubins.db.gz), each pass's wall time and the trials each
pass measured in one run only (by trial key) are added. Prints one JSON object.
"""
import gzip
import json
import math
import pathlib
import sqlite3
import sys
import tempfile

NOISE = 0.03


def winners(path):
    best = {}
    devices, names = set(), set()
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        w = json.loads(line)
        devices.add(w["device_uuid"])
        names.add(w["device"])
        key = (w["Problem"], w["layout"], w["batch_count"], w["dtype"], w["scope"])
        if key not in best or w["Runtime"] < best[key]["Runtime"]:
            best[key] = w
    return best, devices, names


def agreement(one, every, keys):
    """How the winners of KEYS agree between the two runs, and where they differ, largest first."""
    same = within = beyond = 0
    ratios, differ = [], []
    for key in sorted(keys):
        a, b = one[key], every[key]
        r = b["Runtime"] / a["Runtime"]
        ratios.append(r)
        if a["Operation"] == b["Operation"]:
            same += 1
            continue
        if abs(r - 1) <= NOISE:
            within += 1
        else:
            beyond += 1
        differ.append({"problem": ":".join(map(str, key)), "one_gpu": a["Operation"], "every_gpu": b["Operation"],
                       "time_ratio": round(r, 4)})
    differ.sort(key=lambda d: -abs(d["time_ratio"] - 1))
    return {
        "common": len(ratios), "same_kernel": same, "other_kernel_within_noise": within,
        "other_kernel_beyond_noise": beyond,
        "time_ratio_geomean": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None,
        "time_ratio_min": round(min(ratios), 4) if ratios else None,
        "time_ratio_max": round(max(ratios), 4) if ratios else None,
    }, differ


def requested_problems(out):
    """The requested problems' names as tune --json gives them, or None without that file."""
    path = out / "scale-1.json"
    if not path.exists():
        return None
    return {p["problem"] for p in json.loads(path.read_text()).get("problems", [])}


def kind_of(key, requested):
    scope = key[4]
    if scope != "overall":
        return "family and portable winners"
    return "requested problems" if key[0] in requested else "calibration shapes"


def open_saved(path, folder):
    """A connection to a database saved gzipped (benchmarks.sh's save_without_cubins), unpacked into FOLDER."""
    plain = pathlib.Path(folder) / path.name.removesuffix(".gz")
    with gzip.open(path) as src:
        plain.write_bytes(src.read())
    return sqlite3.connect(plain)


def passes(out):
    """Each pass (run record) of both runs: its wall time, its trials, and those measured in that run only."""
    paths = [out / f"scale-{w}-nocubins.db.gz" for w in ("1", "all")]
    if not all(p.exists() for p in paths):
        return None
    with tempfile.TemporaryDirectory() as folder:
        dbs = [open_saved(p, folder) for p in paths]
        keys, seconds = [], []
        for db in dbs:
            keys.append({run: {k for (k,) in db.execute("SELECT trial_key FROM trials WHERE run_id = ?", (run,))}
                         for (run,) in db.execute("SELECT id FROM runs ORDER BY id")})
            seconds.append({run: s for run, s in db.execute(
                "SELECT id, round((julianday(ended_at) - julianday(started_at)) * 86400, 1) FROM runs")})
        for db in dbs:
            db.close()
    result = []
    for run in sorted(keys[0].keys() | keys[1].keys()):
        a, b = keys[0].get(run, set()), keys[1].get(run, set())
        result.append({"pass": run, "one_gpu_seconds": seconds[0].get(run), "every_gpu_seconds": seconds[1].get(run),
                       "trials": [len(a), len(b)], "only_one_gpu": len(a - b), "only_every_gpu": len(b - a)})
    return result


def main():
    out = pathlib.Path(sys.argv[1])
    one, one_devices, _ = winners(out / "scale-1-winners.jsonl")
    every, every_devices, models = winners(out / "scale-all-winners.jsonl")
    t1 = json.loads((out / "scale-1-time.json").read_text())
    ta = json.loads((out / "scale-all-time.json").read_text())
    common = one.keys() & every.keys()
    counts, differ = agreement(one, every, common)
    _, overall_differ = agreement(one, every, {k for k in common if k[4] == "overall"})
    requested = requested_problems(out)
    by_kind = []
    if requested is not None:
        for kind in ("requested problems", "calibration shapes", "family and portable winners"):
            kind_counts, kind_differ = agreement(one, every, {k for k in common if kind_of(k, requested) == kind})
            by_kind.append({"kind": kind, **kind_counts, "largest_differences": kind_differ[:5]})
    print(json.dumps({
        "one_gpu_seconds": t1["seconds"], "every_gpu_seconds": ta["seconds"], "gpus": ta["gpus"],
        "cpus": ta.get("cpus"), "device": ", ".join(sorted(models)), "rc": [t1["rc"], ta["rc"]],
        "speedup": round(t1["seconds"] / ta["seconds"], 3) if ta["seconds"] else None,
        "devices": [len(one_devices), len(every_devices)],
        "winners": [len(one), len(every)], **counts, "noise": NOISE,
        "largest_differences": differ[:10],
        "largest_overall_differences": overall_differ[:5],
        "by_kind": by_kind,
        "passes": passes(out),
    }, indent=1))


if __name__ == "__main__":
    main()
