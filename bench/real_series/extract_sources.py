"""Rebuild ``data/*.csv.gz`` from the upstream repositories named in ``data/SOURCES.md``.

Each upstream repository is read with ``git show COMMIT:PATH`` from a local clone (or bare
snapshot) whose directory is passed on the command line; nothing is fetched here.

    python bench/real_series/extract_sources.py \
        --largescale  PATH/TO/SmartMonitoringSchemes/LargeScaleAnalysis \
        --parsimonious PATH/TO/SmartMonitoringSchemes/ParsimoniousMonitoring \
        --netrics     PATH/TO/internet-equity/netrics-data

Output: one gzip CSV per series, columns ``t`` (Unix seconds, UTC) and ``rtt_ms`` (empty: the
sample was lost). Files are written byte-stable (gzip mtime 0) so a rebuild diffs clean.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import subprocess
from datetime import datetime
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

LARGESCALE_COMMIT = "f6d6d34442e2d4c399608ae568bddcdc5d48d742"
PARSIMONIOUS_COMMIT = "ffd7a5ccba7e6a106c9789676535d6a32b3b61ff"
NETRICS_COMMIT = "f69b20849f9f3895a0c2a842fc12998f16c18aa0"

# ParsimoniousMonitoring ships values only (one per line, no clock): each sample is placed at
# ORIGIN + index × STEP_S, the anchoring mesh's nominal ping interval. See SOURCES.md.
PM_ORIGIN = 1577836800          # 2020-01-01T00:00:00Z, an arbitrary origin
PM_STEP_S = 240
PM_SERIES = {
    # name: (path, format) -- "lines": one value a line, 2000 = missing; "indexed": "i,value", empty = missing
    "pm_hk_kz": ("data/jons_pair/rtt4_19.csv", "lines"),
    "pm_hk_nz": ("data/jons_pair/rtt4_24.csv", "lines"),
    "pm_us_np": ("data/jons_pair/rtt0_8.csv", "lines"),
    "pm_de_np": ("data/jons_pair/rtt1_8.csv", "lines"),
    "pm_haifa_santiago": ("data/noms_scenarios/Haifa_Santiago/Haifa_Santiago.csv", "indexed"),
    "pm_paris_santiago": ("data/noms_scenarios/Paris_Santiago/Paris_Santiago.csv", "indexed"),
    "pm_paris_tokyo": ("data/noms_scenarios/Paris_Tokyo/Paris_Tokyo.csv", "indexed"),
    "pm_singapore_hongkong": ("data/noms_scenarios/Singapore_HongKong/Singapore_HongKong.csv", "indexed"),
}
NETRICS_PATH = "example-data/tale-of-two-gigs/tale_of_two_gigs_netrics.csv"
NETRICS_INSTALLS = {"Hyde Park": "netrics_hyde_park", "South Shore": "netrics_south_shore"}
NETRICS_SPLIT = datetime.fromisoformat("2021-07-31T00:00:00+00:00").timestamp()   # Jul | Aug


def show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def write(name: str, rows: list[tuple[int, float | None]]) -> None:
    text = io.StringIO()
    text.write("t,rtt_ms\n")
    for t, rtt in rows:
        text.write(f"{t},{'' if rtt is None else f'{rtt:.3f}'.rstrip('0').rstrip('.')}\n")
    with open(DATA / f"{name}.csv.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(text.getvalue().encode())


def largescale(repo: Path) -> None:
    rows = []
    for line in show(repo, LARGESCALE_COMMIT, "test/1042404_6098.ndjson").splitlines():
        r = json.loads(line)
        rows.append((int(r["timestamp"]), float(r["min"]) if r.get("rcvd") else None))
    write("atlas_anchor_p6098_m1042404", sorted(rows))


def parsimonious(repo: Path) -> None:
    for name, (path, fmt) in PM_SERIES.items():
        rows = []
        for i, line in enumerate(show(repo, PARSIMONIOUS_COMMIT, path).splitlines()):
            text = line.split(",")[1] if fmt == "indexed" else line
            value = float(text) if text.strip() else None
            if value is not None and value >= 1999.0:     # the files' stand-in for a lost sample
                value = None
            rows.append((PM_ORIGIN + i * PM_STEP_S, value))
        write(name, rows)


def netrics(repo: Path) -> None:
    series: dict[str, list] = {}
    for r in csv.DictReader(io.StringIO(show(repo, NETRICS_COMMIT, NETRICS_PATH))):
        if not r["google_rtt_max_ms"]:
            continue               # another test's row (speed tests share the file)
        t = int(round(datetime.fromisoformat(r["time"]).timestamp()))
        half = "jul" if t < NETRICS_SPLIT else "aug"
        series.setdefault(f"{NETRICS_INSTALLS[r['install']]}_{half}", []).append((t, float(r["google_rtt_max_ms"])))
    for name, rows in series.items():
        write(name, sorted(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--largescale", type=Path, required=True)
    ap.add_argument("--parsimonious", type=Path, required=True)
    ap.add_argument("--netrics", type=Path, required=True)
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    largescale(args.largescale)
    parsimonious(args.parsimonious)
    netrics(args.netrics)


if __name__ == "__main__":
    main()
