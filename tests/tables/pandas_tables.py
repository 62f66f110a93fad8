#!/usr/bin/python3
"""pandas reads `xsp analyze --format csv|json` of a multi-batch-size evaluation as one frame per analysis.

On a short evaluation of ResNet-18 (the test zoo) at batch sizes 1, 2 and 4 to the framework level: for the
per-batch analyses A2 (layers) and A6 (layer types), pandas.read_csv of the CSV and pandas.read_json of the JSON
table's rows give one frame whose batch_size column is int64, holds exactly the measured batch sizes, and has as
many rows per batch size as `--batch-size B` alone gives (> 0); CSV and JSON agree row by row.
Exit 77 (CTest SKIP_RETURN_CODE) when pandas is missing (Debian: python3-pandas, scripts/install-deps.sh).

Usage: pandas_tables.py XSP_BINARY ZOO_DIR
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import pandas as pd
except ImportError as exc:
    print(f"pandas_tables: SKIP: pandas is not installed ({exc}); install python3-pandas")
    sys.exit(77)

BATCH_SIZES = [1, 2, 4]


def fail(msg):
    print(f"pandas_tables: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def xsp(binary, store, *args):
    r = subprocess.run([binary, "--store", store, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        fail(f"xsp {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def check(binary, store, analysis):
    where = f"xsp analyze 1 --analysis {analysis}"
    csv = pd.read_csv(io.StringIO(xsp(binary, store, "analyze", "1", "--analysis", analysis, "--format", "csv")))
    if "batch_size" not in csv.columns:
        fail(f"{where} --format csv: no batch_size column in {list(csv.columns)}")
    headers = int((csv[csv.columns[0]] == csv.columns[0]).sum())
    if headers:
        fail(f"{where} --format csv: the header repeats {headers} times among the rows")
    tables = json.loads(xsp(binary, store, "analyze", "1", "--analysis", analysis, "--format", "json"))
    if len(tables) != 1:
        fail(f"{where} --format json: {len(tables)} tables, expected 1 (one per analysis)")
    js = pd.read_json(io.StringIO(json.dumps(tables[0]["rows"])), orient="records", dtype=False)
    for name, frame in (("csv", csv), ("json", js)):
        if list(frame.columns) != tables[0]["columns"]:
            fail(f"{where} --format {name}: columns {list(frame.columns)}, expected {tables[0]['columns']}")
        if str(frame["batch_size"].dtype) != "int64":
            fail(f"{where} --format {name}: batch_size has dtype {frame['batch_size'].dtype}, expected int64")
        if sorted(frame["batch_size"].unique().tolist()) != BATCH_SIZES:
            fail(f"{where} --format {name}: batch sizes {sorted(frame['batch_size'].unique())}, expected {BATCH_SIZES}")
        for b in BATCH_SIZES:
            alone = pd.read_csv(io.StringIO(xsp(binary, store, "analyze", "1", "--analysis", analysis, "--format",
                                                "csv", "--batch-size", str(b))))
            got = int((frame["batch_size"] == b).sum())
            if got != len(alone) or len(alone) == 0:
                fail(f"{where} --format {name}: {got} rows of batch size {b}, expected {len(alone)} (> 0)")
    if len(csv) != len(js):
        fail(f"{where}: {len(csv)} CSV rows but {len(js)} JSON rows")
    text_columns = [c for c in csv.columns if csv[c].dtype == object]
    for c in text_columns:
        if csv[c].fillna("").tolist() != js[c].fillna("").tolist():
            fail(f"{where}: column {c} differs between CSV and JSON")
    print(f"{where}: {len(csv)} rows, batch sizes {BATCH_SIZES}, int64 batch_size in CSV and JSON")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, zoo = sys.argv[1:]
    work = tempfile.mkdtemp(prefix="xsp-pandas-")
    try:
        store = os.path.join(work, "xsp.db")
        # Few, short measurements: the tables' shape is under test, not the latencies.
        xsp(binary, store, "--zoo", zoo, "evaluate", "resnet18", "--batch-sizes", ",".join(map(str, BATCH_SIZES)),
            "--trace-level", "framework", "--leveled", "--synthetic", "--warmup", "1", "--warmup-max-ms", "0",
            "--min-batches", "2", "--min-duration-ms", "0", "--max-duration-ms", "0", "--no-progress")
        for analysis in ("A2", "A6"):
            check(binary, store, analysis)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
