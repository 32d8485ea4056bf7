#!/usr/bin/env python3
"""Reads `ncu --import REPORT --page raw --csv` on stdin and prints, per kernel, the figures that
docs/BENCHMARKS.md and docs/notes/ quote: duration, FP32 throughput, issue activity, shared-memory
bank conflicts and the largest warp stall reasons.

Usage: ncu --import REPORT.ncu-rep --page raw --csv | scripts/diag/ncu_summary.py
(scripts/gpu/gpu_session.sh runs it in its `profile` and `rawmetrics` phases.)"""
import csv
import sys

rows = list(csv.reader(sys.stdin))
if len(rows) < 3:
    sys.exit("no profile data")
header, units, data = rows[0], rows[1], rows[2:]
col = {name: i for i, name in enumerate(header)}


def value(row, name):
    i = col.get(name)
    if i is None or row[i] in ("", "n/a"):
        return None
    try:
        return float(row[i].replace(",", ""))
    except ValueError:
        return row[i]


for row in data:
    name = row[col["Kernel Name"]][:100]
    print(name)
    for metric, label in [
        ("gpu__time_duration.sum", "duration"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput % of peak"),
        ("gpc__cycles_elapsed.max", "cycles elapsed"),
        ("sm__cycles_active.avg", "SM active cycles (mean)"),
        ("sm__cycles_active.max", "SM active cycles (max)"),
        ("smsp__cycles_active.avg", "SMSP active cycles (mean)"),
        ("sm__cycles_elapsed.avg.per_second", "SM clock"),
        ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe active %"),
        ("smsp__inst_executed_pipe_fma.sum", "FMA-pipe instructions"),
        ("sm__inst_executed.avg.per_cycle_active", "IPC"),
        ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue slots busy %"),
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "shared load bank conflicts"),
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "shared store bank conflicts"),
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared load wavefronts"),
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "shared store wavefronts"),
        ("smsp__sass_inst_executed_op_shared_ld.sum", "shared load instructions"),
        ("launch__registers_per_thread", "registers/thread"),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %"),
    ]:
        v = value(row, metric)
        if v is not None:
            unit = units[col[metric]]
            print(f"  {label:32s} {v:>16,.2f} {unit}" if isinstance(v, float) else f"  {label:32s} {v} {unit}")
    stalls = []
    for name_, i in col.items():
        if name_.startswith("smsp__average_warp_latency_issue_stalled_") and name_.endswith(".ratio"):
            v = value(row, name_)
            if isinstance(v, float):
                stalls.append((v, name_[len("smsp__average_warp_latency_issue_stalled_"):-len(".ratio")]))
    if not stalls:
        for name_, i in col.items():
            if name_.startswith("smsp__pcsamp_warps_issue_stalled_") and not name_.endswith("_not_issued"):
                v = value(row, name_)
                if isinstance(v, float):
                    stalls.append((v, name_[len("smsp__pcsamp_warps_issue_stalled_"):]))
    stalls.sort(reverse=True)
    if stalls:
        print("  top stall reasons: " + ", ".join(f"{n} {v:.2f}" for v, n in stalls[:6]))
