"""Replays whose outcome must not change with a speed-up, against values stored from eab1ba2.

    .venv/bin/python benchmarks/simulate_speed/check_outcomes.py            # compare
    PYTHONPATH=<eab1ba2 importable> ... check_outcomes.py --record           # (re)store

expected_outcomes.json was written with --record by the tree of eab1ba2 (the commit before the
issue-24 speed work), never by the code under check. Exit 1 naming each case that differs. A
deliberate change of semantics (issue 24 item 3's checkpoint grid on the recurrent layouts)
shows up here too: such cases differ by design, not by a speed-up.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulate_speed.replay import replay  # noqa: E402

EXPECTED = Path(__file__).with_name("expected_outcomes.json")
SHARED = "shared-prefix:n=2000,prefix=1024,prompt=64-512,output=16-128,prefixes=16,seed=1"
SESSIONS = "sessions:sessions=16,turns=4,prompt=512,output=128,seed=3"
CASES: list[tuple[str, int, str, str, str]] = [
    *[("gemma-3-27b", 2, layout, workload, cache)
      for layout in ("vllm", "hkv", "partitioned", "vllm-no-hybrid")
      for workload in ("mooncake:300", SHARED)
      for cache in ("default", "lru")],
    *[("gemma-3-27b", 2, layout, "mooncake:300", "vllm") for layout in ("vllm", "hkv")],
    ("gemma-3-27b", 2, "hkv", SESSIONS, "default"),
    *[("qwen3-next-80b-a3b", 4, layout, workload, cache)
      for layout in ("vllm", "hkv", "partitioned")
      for workload in ("mooncake:300", SHARED)
      for cache in ("default", "lru")],
]


def case_key(case: tuple[str, int, str, str, str]) -> str:
    return " ".join(map(str, case))


def main() -> int:
    record = "--record" in sys.argv
    expected = {} if record else json.loads(EXPECTED.read_text())
    outcomes, failures = {}, []
    for case in CASES:
        key = case_key(case)
        result = replay(*case)
        outcomes[key] = result["outcome"]
        verdict = "recorded" if record else ("same" if expected.get(key) == result["outcome"] else "DIFFERS")
        if verdict == "DIFFERS":
            failures.append(key)
            print(f"  expected {expected.get(key)}\n  got      {result['outcome']}")
        print(f"{verdict:>8} {result['requests_per_s']:8.0f} req/s  {key}", flush=True)
    if record:
        EXPECTED.write_text(json.dumps(outcomes, indent=1) + "\n")
    print(f"{len(failures)} of {len(CASES)} cases differ" if failures else f"all {len(CASES)} cases as stored")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
