#!/usr/bin/env python3
"""Compares the winners of the README's command on one GPU and on every GPU (benchmarks.sh scale-1,
scale-all), for docs/BENCHMARKS.md.

Usage: scale_compare.py OUT > OUT/scale.json
Reads OUT/scale-{1,all}-time.json and OUT/scale-{1,all}-winners.jsonl (`db export --what winners
--format json`). A winner is keyed by its problem, layout, batch, type and scope; where the run on
every GPU holds one per GPU of the model, the fastest stands for them. Two runs agree on a problem
when they chose the same kernel, or kernels whose measured times differ by at most NOISE (3%): the
spread of one kernel's median between two runs on two H100s. Prints one JSON object.
"""
import json
import math
import pathlib
import sys

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


def main():
    out = pathlib.Path(sys.argv[1])
    one, one_devices, _ = winners(out / "scale-1-winners.jsonl")
    every, every_devices, models = winners(out / "scale-all-winners.jsonl")
    t1 = json.loads((out / "scale-1-time.json").read_text())
    ta = json.loads((out / "scale-all-time.json").read_text())
    same = within = beyond = 0
    ratios, differ = [], []
    for key in sorted(one.keys() & every.keys()):
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
    print(json.dumps({
        "one_gpu_seconds": t1["seconds"], "every_gpu_seconds": ta["seconds"], "gpus": ta["gpus"],
        "cpus": ta.get("cpus"), "device": ", ".join(sorted(models)), "rc": [t1["rc"], ta["rc"]],
        "speedup": round(t1["seconds"] / ta["seconds"], 3) if ta["seconds"] else None,
        "devices": [len(one_devices), len(every_devices)],
        "winners": [len(one), len(every)], "common": len(ratios), "same_kernel": same,
        "other_kernel_within_noise": within, "other_kernel_beyond_noise": beyond, "noise": NOISE,
        "time_ratio_geomean": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None,
        "time_ratio_min": round(min(ratios), 4) if ratios else None,
        "time_ratio_max": round(max(ratios), 4) if ratios else None,
        "largest_differences": differ[:10],
    }, indent=1))


if __name__ == "__main__":
    main()
