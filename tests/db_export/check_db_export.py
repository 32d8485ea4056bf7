#!/usr/bin/env python3
"""`cm-tune db export` read back by Python, on a database of a real tune.

Usage: check_db_export.py CHECK CM_TUNE SCRIPTED_WORKER FIXTURES CACHE_DIR
  CHECK            csv, json, kernel-tuner or quoting (one ctest test each: tests/CMakeLists.txt)
  CM_TUNE          the cm-tune binary
  SCRIPTED_WORKER  the scripted measuring process (tests/worker/scripted_worker.cpp: no GPU)
  FIXTURES         tests/fixtures (kernel_tuner_t4/: Kernel Tuner's T4 schemas)
  CACHE_DIR        the tests' cache folder ($CMTUNE_TEST_CACHE_DIR wins): where jsonschema is installed
                   from PyPI (pip --target) when python3 lacks it

The database: `cm-tune tune` with the scripted measuring process (f32 nn and tn, a batch with a shared
B, i32, which has no cuBLAS baseline), then one trial row more per outcome the scripted process does
not produce (compile_error, launch_error, wrong, abandoned, skipped, crashed, timeout), copied from a
measured one as a GPU tune would have recorded it; the skipped one's reason holds a comma, double
quotes and a line break. Row counts are SQL's on the database.

Exit 0: passed; 1: failed (each failure printed); 77: skipped, the reason printed (kernel-tuner only:
jsonschema is not importable and could not be installed).
"""
import csv
import io
import json
import os
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

WHATS = {"trials": "trials", "winners": "winners", "baselines": "baselines", "devices": "devices"}
# The CUTLASS profiler's columns each row set carries (docs/DATA.md).
CUTLASS_COLUMNS = {
    "trials": ["Problem", "Provider", "OperationKind", "Operation", "Disposition", "m", "n", "k", "A", "B", "C",
               "batch_count", "cta_m", "cta_n", "Bytes", "Flops", "Flops/Byte", "Runtime", "GB/s", "GFLOPs"],
    "winners": ["Problem", "Provider", "OperationKind", "Operation", "Disposition", "m", "n", "k", "A", "B", "C",
                "batch_count", "Runtime", "GFLOPs"],
    "baselines": ["Problem", "Provider", "OperationKind", "Operation", "m", "n", "k", "A", "B", "C", "batch_count",
                  "Runtime", "GFLOPs"],
    "devices": ["device", "device_uuid", "arch"],
}
# docs/DATA.md: cm-tune's outcomes as T4's invalidity and the CUTLASS profiler's Disposition.
INVALIDITY = {"ok": "correct", "abandoned": "correct", "wrong": "correctness", "compile_error": "compile",
              "launch_error": "runtime", "crashed": "runtime", "timeout": "timeout", "skipped": "constraints"}
DISPOSITION = {"ok": "passed", "abandoned": "passed", "wrong": "incorrect", "skipped": "not_supported",
               "compile_error": "failed", "launch_error": "failed", "crashed": "failed", "timeout": "failed"}
TRICKY_REASON = 'needs "16-byte" aligned A, B and C,\r\nand lda, ldb, ldc multiples of 4 ("align=16, ld=4")'
PRESET = """name = "db-export"
description = "the generic default, BM 32, 64"
[templates.blocktile2d]
BM = [32, 64]
BN = [64]
BK = [8]
TM = [8]
TN = [4]
"""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


class Fixture:
    """A folder with a tuned database, and cm-tune run on it."""

    def __init__(self, cmtune, worker, folder):
        self.cmtune, self.folder = cmtune, pathlib.Path(folder)
        self.db = self.folder / "tune.db"
        self.env = dict(os.environ, CMTUNE_MEASURE_WORKER=worker, CMTUNE_SCRIPT_HASHED="1")
        (self.folder / "preset.toml").write_text(PRESET)
        r = self.run(["tune", "--sizes", "64,128,96x80x72:tn,32x48x40*3:sb=0,64:i32", "--config",
                      str(self.folder / "preset.toml"), "--no-calibrate", "--seed", "3", "--jobs", "2"])
        if r.returncode != 0:
            raise SystemExit(f"check_db_export: the tune failed ({r.returncode}): {r.stderr.decode()}")
        self.add_outcome_rows()

    def run(self, args):
        return subprocess.run([self.cmtune, "--quiet", "--db", str(self.db)] + args, cwd=self.folder, env=self.env,
                              capture_output=True, timeout=120)

    def add_outcome_rows(self):
        with sqlite3.connect(self.db) as db:
            columns = [row[1] for row in db.execute("PRAGMA table_info(trials)") if row[1] != "id"]
            first = db.execute("SELECT min(id) FROM trials").fetchone()[0]
            untimed = {"median_ms", "min_ms", "cv", "samples", "gflops", "ratio_to_cublas", "retime_median_ms"}
            unvalidated = {"max_abs_error", "max_error_ratio", "simt_error_ratio"}
            for outcome, reason in [("compile_error", "error: identifier \"x\" is undefined"),
                                    ("launch_error", "too many resources requested for launch"),
                                    ("wrong", "C[0][1] is 3.5, expected 1.25 (error 2.8x the tolerance)"),
                                    ("abandoned", "first 3 samples 9 ms > 6 ms (3x the best so far)"),
                                    ("skipped", TRICKY_REASON),
                                    ("crashed", "killed by signal 11"),
                                    ("timeout", "still running after 2000 ms, the kernel timeout")]:
                timed = outcome == "abandoned"
                validated = outcome in ("abandoned", "wrong")
                values = []
                for c in columns:
                    if c == "trial_key":
                        values.append(f"trial_key || '/{outcome}'")
                    elif c in ("outcome", "reason"):
                        values.append("?")
                    elif (c in untimed and not timed) or (c in unvalidated and not validated):
                        values.append("NULL")
                    else:
                        values.append(c)
                db.execute(f"INSERT INTO trials ({', '.join(columns)}) SELECT {', '.join(values)} FROM trials "
                           f"WHERE id = ?", (outcome, reason, first))

    def export(self, fmt, what=None, out=None):
        """The export's text: from stdout, or from --out FILE (checked to match stdout's)."""
        args = ["db", "export", "--format", fmt] + (["--what", what] if what else [])
        r = self.run(args)
        check(r.returncode == 0 and r.stderr == b"", f"{' '.join(args)}: exit {r.returncode}: {r.stderr.decode()}")
        if out:
            written = self.run(args + ["--out", out])
            check(written.returncode == 0, f"{' '.join(args)} --out {out}: exit {written.returncode}")
            check(written.stdout.decode().startswith(f"wrote {out}: "), f"--out {out} printed {written.stdout!r}")
            check((self.folder / out).read_bytes() == r.stdout, f"--out {out} differs from stdout")
        return r.stdout.decode("utf-8")

    def sql(self, query, *args):
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as db:
            return db.execute(query, args).fetchall()

    def count(self, table):
        return self.sql(f"SELECT count(*) FROM {table}")[0][0]


def csv_rows(text):
    """The rows of a CSV text as Python's csv module reads them (newline="": RFC 4180's line breaks)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return reader.fieldnames, list(reader)


def same_value(json_value, csv_text):
    """A JSON field and the same field of the CSV row: null is empty, flags true/false, numbers equal."""
    if json_value is None:
        return csv_text == ""
    if isinstance(json_value, bool):
        return csv_text == ("true" if json_value else "false")
    if isinstance(json_value, (int, float)):
        return float(csv_text) == float(json_value)
    return csv_text == json_value


def check_csv(fx):
    for what, table in WHATS.items():
        header, rows = csv_rows(fx.export("csv", what, out=f"{what}.csv"))
        check(len(rows) == fx.count(table), f"csv --what {what}: {len(rows)} rows, the database has {fx.count(table)}")
        check(len(set(header)) == len(header), f"csv --what {what}: a column name twice: {header}")
        for column in CUTLASS_COLUMNS[what]:
            check(column in header, f"csv --what {what}: no column {column}")
        check(all(len(r) == len(header) and None not in r for r in rows), f"csv --what {what}: a row of another width")
    # Each trial's values are the database's.
    _, rows = csv_rows(fx.export("csv"))
    stored = {row[0]: row[1:] for row in fx.sql("SELECT id, outcome, median_ms, template_name, params, m, n, k, "
                                                "dtype, layout, batch FROM trials")}
    check(sorted(int(r["trial_id"]) for r in rows) == sorted(stored), "csv: the trial ids are not the database's")
    for r in rows:
        outcome, median, template, params, m, n, k, dtype, layout, batch = stored[int(r["trial_id"])]
        check(r["outcome"] == outcome and r["Disposition"] == DISPOSITION[outcome],
              f"csv: trial {r['trial_id']}: outcome {r['outcome']}, Disposition {r['Disposition']}")
        check((r["Runtime"] == "" if median is None else float(r["Runtime"]) == median),
              f"csv: trial {r['trial_id']}: Runtime {r['Runtime']}, median_ms {median}")
        check(r["Operation"] == f"{template}[{params}]" and r["params"] == params,
              f"csv: trial {r['trial_id']}: Operation {r['Operation']}")
        check((int(r["m"]), int(r["n"]), int(r["k"]), r["dtype"], r["layout"], int(r["batch_count"])) ==
              (m, n, k, dtype, layout, batch), f"csv: trial {r['trial_id']}: another problem")
        if median is not None:
            flops = 2.0 * m * n * k * batch
            check(abs(float(r["GFLOPs"]) - flops / median / 1e6) <= 1e-9 * flops / median,
                  f"csv: trial {r['trial_id']}: GFLOPs {r['GFLOPs']}")
    check({r["outcome"] for r in rows} == set(INVALIDITY), "csv: not every outcome is among the trials")
    # The i32 winners have no ratio to cuBLAS (empty); the f32 ones do.
    _, winners = csv_rows(fx.export("csv", "winners"))
    check(all((w["ratio_to_cublas"] == "") == (w["dtype"] == "i32") for w in winners),
          "csv --what winners: ratio_to_cublas empty for other than the i32 winners")
    check(any(w["Problem"] == "32x48x40*3:sb=0" and w["B"] == "f32:row" for w in winners),
          "csv --what winners: no row of the batch")


def check_json(fx):
    for what, table in WHATS.items():
        text = fx.export("json", what, out=f"{what}.jsonl")
        lines = text.split("\n")
        check(lines[-1] == "", f"json --what {what}: the last line has no newline")
        records = [json.loads(line) for line in lines[:-1]]
        check(len(records) == fx.count(table),
              f"json --what {what}: {len(records)} objects, the database has {fx.count(table)}")
        header, rows = csv_rows(fx.export("csv", what))
        check(len(rows) == len(records), f"json --what {what}: not as many rows as the CSV")
        for record, row in zip(records, rows):
            check(isinstance(record, dict) and sorted(record) == sorted(header),
                  f"json --what {what}: the fields differ from the CSV's columns: {sorted(record)}")
            for name in header:
                check(same_value(record.get(name), row[name]),
                      f"json --what {what}: {name} is {record.get(name)!r} in JSON, {row[name]!r} in CSV")
    kinds = {r["outcome"]: r for r in map(json.loads, fx.export("json").splitlines())}
    check(kinds["ok"]["Runtime"] > 0 and kinds["crashed"]["Runtime"] is None, "json: Runtime of ok and crashed trials")
    check(kinds["skipped"]["reason"] == TRICKY_REASON, "json: the skipped trial's reason did not survive")


def load_jsonschema(cache):
    """jsonschema, installed from PyPI into CACHE/python when python3 lacks it; None and the reason when it cannot be."""
    try:
        import jsonschema
        return jsonschema, None
    except ImportError:
        pass
    target = pathlib.Path(cache) / "python"
    if not (target / "jsonschema").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--no-input", "--root-user-action=ignore", "--retries", "1", "--timeout", "15", "--target",
                            str(target), "jsonschema"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            lines = (r.stderr or r.stdout).strip().splitlines() or ["no output"]
            return None, (f"jsonschema is not importable by {sys.executable} and `pip install --target {target} "
                          f"jsonschema` failed ({r.returncode}): {lines[-1]}")
    sys.path.insert(0, str(target))
    try:
        import jsonschema
        return jsonschema, None
    except ImportError as e:
        return None, f"jsonschema installed in {target} does not import: {e}"


def check_kernel_tuner(fx, fixtures, cache):
    jsonschema, why = load_jsonschema(cache)
    if jsonschema is None:
        print(f"check_db_export: SKIP: {why}")
        sys.exit(77)
    schemas = pathlib.Path(fixtures) / "kernel_tuner_t4"
    text = fx.export("kernel-tuner", out="t4.json")
    document = json.loads(text)
    for name in ("results-schema.json", "metadata-schema.json"):
        schema = json.loads((schemas / name).read_text())
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
        check(not errors, f"kernel-tuner: not valid against {name}: " +
              "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5]))
    check(document.get("schema_version") == "1.0.0", "kernel-tuner: schema_version is not 1.0.0")
    results = document.get("results", [])
    check(len(results) == fx.count("trials"), f"kernel-tuner: {len(results)} results, {fx.count('trials')} trials")
    stored = {row[0]: row[1:] for row in fx.sql("SELECT id, outcome, template_name, params, median_ms FROM trials")}
    for r in results:
        trial = r["cm_tune"]["trial_id"]
        outcome, template, params, median = stored[trial]
        check(r["invalidity"] == INVALIDITY[outcome], f"kernel-tuner: trial {trial} ({outcome}) is {r['invalidity']}")
        check(r["correctness"] == (1 if outcome in ("ok", "abandoned") else 0),
              f"kernel-tuner: trial {trial} ({outcome}): correctness {r['correctness']}")
        expected = {"template": template}
        expected.update({k: int(v) for k, v in (kv.split("=") for kv in params.split(","))})
        check(r["configuration"] == expected, f"kernel-tuner: trial {trial}: configuration {r['configuration']}")
        times = {m["name"]: m["value"] for m in r["measurements"] if m["unit"] == "ms"}
        check(times.get("time") == median, f"kernel-tuner: trial {trial}: time {times.get('time')}, median {median}")
        check(r["objectives"] == ["time"], f"kernel-tuner: trial {trial}: objectives {r['objectives']}")
        check(r["times"].get("compilation_time", -1) >= 0, f"kernel-tuner: trial {trial}: no compilation time")
    check({r["invalidity"] for r in results} == set(INVALIDITY.values()), "kernel-tuner: an invalidity is missing")
    metadata = document.get("metadata", {})
    check(metadata.get("timeunit") == "milliseconds", "kernel-tuner: metadata.timeunit is not milliseconds")
    check(len(metadata.get("hardware", {}).get("hardware_description", [])) == fx.count("devices"),
          "kernel-tuner: hardware_description is not the database's devices")


def check_quoting(fx):
    text = fx.export("csv", out="quoted.csv")
    quoted = '"' + TRICKY_REASON.replace('"', '""') + '"'
    check(quoted in text, "quoting: the reason is not quoted as RFC 4180 says (in quotes, its quotes doubled)")
    check(text.endswith("\r\n") and "\r\n" in text.split("\n", 1)[0] + "\n", "quoting: lines do not end in CRLF")
    _, rows = csv_rows(text)
    skipped = [r for r in rows if r["outcome"] == "skipped"]
    check(len(skipped) == 1 and skipped[0]["reason"] == TRICKY_REASON,
          f"quoting: the reason read back as {[r['reason'] for r in skipped]!r}")
    operations = [r["Operation"] for r in rows]
    check(all("," in o and o.startswith("blocktile2d[") and o.endswith("]") for o in operations),
          f"quoting: a kernel label with commas did not survive: {operations[:3]}")
    check(all(len(r) == len(rows[0]) for r in rows), "quoting: a row of another width")


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    check_name, cmtune, worker, fixtures, cache = sys.argv[1:]
    cache = os.environ.get("CMTUNE_TEST_CACHE_DIR") or cache
    with tempfile.TemporaryDirectory(prefix="cmt-db-export-") as folder:
        fx = Fixture(cmtune, worker, folder)
        if check_name == "csv":
            check_csv(fx)
        elif check_name == "json":
            check_json(fx)
        elif check_name == "kernel-tuner":
            check_kernel_tuner(fx, fixtures, cache)
        elif check_name == "quoting":
            check_quoting(fx)
        else:
            print(f"check_db_export: unknown check {check_name}")
            return 2
    for f in failures:
        print(f"check_db_export: FAIL: {f}")
    print(f"check_db_export {check_name}: {'passed' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
