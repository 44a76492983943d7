"""How close hkv's blind KV budget comes to real vLLM start-ups, in sample and out of sample.

    .venv/bin/python benchmarks/bench_blind_budget.py [--format json] [--records PATH] [--refit]

For every usable record of tests/data/vllm_startups/records.json (public start-up logs with the
model config and engine flags that produced them) hkv plans without the log's budget and is
compared with what vLLM printed: weights, "Available KV cache memory", the KV token count of the
`vllm` layout, and the budget terms where the log breaks them down.

Every constant of the budget fitted on logs (hkv.planner.budget.fitted) is scored twice:
- in sample: fitted on every record, then scoring every record (the shipped constants);
- out of sample: each record scored under a re-fit without every record of its source (author or
  machine: `source_group`), so a record never judges a constant it helped fit;
- calibrated: within one source's machine and release, each start-up calibrates hkv for the others
  (`hkv plan --calibrate LOG`), on top of the out-of-sample constants.
The targets hold out of sample. `--refit` writes the in-sample fit into
planner/budget/budget_constants.py (SHIPPED) and stops.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from blind_budget.out_of_sample import calibrated, constants_table_rows, in_sample, observations, out_of_sample
from blind_budget.record_result import full_plan, vllm_layout_plan
from blind_budget.render import print_report
from blind_budget.shipped_source import write_shipped
from blind_budget.summary import summarize, summarize_calibrated

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RECORDS = ROOT / "tests" / "data" / "vllm_startups" / "records.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS, help="records.json (configs resolve beside it)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--full-plan", action="store_true",
                        help="go through hkv.planner.plan.plan (all layouts and sustained figures: minutes, same numbers)")
    parser.add_argument("--refit", action="store_true", help="write the fit on every record as the shipped constants")
    args = parser.parse_args(argv)
    records = [rec for rec in json.loads(args.records.read_text()) if rec["usable"]]
    data_dir = args.records.parent
    planner = full_plan if args.full_plan else vllm_layout_plan
    obs = observations(records, data_dir)
    constants, inside = in_sample(records, data_dir, planner, obs)
    if args.refit:
        write_shipped(ROOT / "planner" / "budget" / "budget_constants.py", constants)
        print(f"wrote the fit on {len(obs)} start-ups into planner/budget/budget_constants.py", file=sys.stderr)
        return 0
    outside, refits = out_of_sample(records, data_dir, planner, obs)
    in_summary, out_summary = summarize(inside), summarize(outside)
    pairs = calibrated(records, data_dir, planner, obs, refits)
    cal_summary = summarize_calibrated(pairs)
    rows = constants_table_rows(constants)
    if args.format == "json":
        json.dump({"in_sample": in_summary, "out_of_sample": out_summary, "calibrated": cal_summary,
                   "constants": asdict(constants),
                   "records": [r.as_dict() for r in outside],
                   "records_in_sample": [r.as_dict() for r in inside]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(outside, in_summary, out_summary, rows, cal_summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
