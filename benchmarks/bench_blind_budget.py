"""How close hkv's blind KV budget comes to real vLLM start-ups.

    .venv/bin/python benchmarks/bench_blind_budget.py [--format json] [--records PATH]

For every usable record of tests/data/vllm_startups/records.json (public start-up logs with the
model config and engine flags that produced them) hkv plans without the log's budget and is
compared with what vLLM printed: weights, "Available KV cache memory", the KV token count of the
`vllm` layout (through the steps hkv.planner.plan.plan takes for it; --full-plan calls plan()
itself), and the budget terms where the log breaks them down. The summary gives the MAPE of
available memory and of KV tokens, false "does not fit" verdicts, and how many logged values fall
inside hkv's band. A record whose plan raises is reported as a failure in its row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from blind_budget.record_result import evaluate_record, full_plan, vllm_layout_plan
from blind_budget.render import print_report
from blind_budget.summary import summarize

DEFAULT_RECORDS = Path(__file__).resolve().parents[1] / "tests" / "data" / "vllm_startups" / "records.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS, help="records.json (configs resolve beside it)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--full-plan", action="store_true",
                        help="go through hkv.planner.plan.plan (all layouts and sustained figures: minutes, same numbers)")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    planner = full_plan if args.full_plan else vllm_layout_plan
    results = [evaluate_record(rec, args.records.parent, planner) for rec in records if rec["usable"]]
    summary = summarize(results)
    if args.format == "json":
        json.dump({"summary": summary, "records": [r.as_dict() for r in results]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(results, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
