"""Compare two runs of the benchmarks: for each JSON file in BEFORE that AFTER also has, how many of
its non-timing figures are equal, and which differ (timings, which change from run to run, are
counted apart).

    python scripts/compare_figures.py docs/figures out/figures [--json OUT]

Exits with status 1 when a figure differs or a file is missing from AFTER.
"""
import argparse
import json
from pathlib import Path

from benchmarks.compare import compare


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="folder of benchmark JSON files")
    ap.add_argument("after", type=Path, help="folder of the same files from another run")
    ap.add_argument("--json", type=Path, help="write the counts here")
    args = ap.parse_args(argv)
    report, same = {}, True
    for path in sorted(args.before.glob("*.json")):
        other = args.after / path.name
        if not other.is_file():
            print(f"{path.name}: not in {args.after}")
            same = False
            continue
        result = compare(json.loads(path.read_text()), json.loads(other.read_text()))
        report[path.name] = {"figures": result.figures, "equal": result.equal, "timings": result.timings,
                             "differ": list(result.differ)}
        print(f"{path.name}: {result.equal}/{result.figures} figures equal ({result.timings} timings left out)")
        for line in result.differ:
            print(f"    {line}")
        same = same and not result.differ
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
