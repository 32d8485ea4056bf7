#!/usr/bin/env python3
"""Dumps the trials of a cm-tune database as JSON, the best N ok trials per problem first.

Usage: scripts/diag/dump_trials.py DATABASE N OUT.json   (needs only Python's sqlite3)
scripts/gpu/gpu_session.sh runs it at the end of every session (N = 40).
"""
import sqlite3, sys, json
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""select m,n,k,layout,batch,dtype,template_name,params,outcome,round(gflops/1000,2),round(ratio_to_cublas,3),
  registers,smem_bytes,threads,round(cv,3),samples,retime_median_ms,reason from trials
  where outcome in ('ok','abandoned','wrong','skipped','launch_error') order by dtype,m,n,k,layout,batch,median_ms""").fetchall()
out = {}
for r in rows:
    key = f"{r[0]}x{r[1]}x{r[2]}:{r[3]}" + (f"*{r[4]}" if r[4] > 1 else "") + f":{r[5]}"
    r = r[:3] + r[6:]
    lst = out.setdefault(key, [])
    if r[5] == 'ok' and len([x for x in lst if x[2]=='ok']) >= int(sys.argv[2]): continue
    if r[5] != 'ok' and r[5] != 'wrong' and len(lst) > 60: continue
    lst.append([r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14][:80]])
base = db.execute("select m,n,k,layout,batch,dtype,round(gflops/1000,2) from baselines").fetchall()
json.dump({"trials": out, "cublas": base}, open(sys.argv[3], "w"), indent=0)
