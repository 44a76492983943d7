"""`hkv verify`'s output: a table of checks for people, one JSON object for pipelines."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from hkv.runtime.verify.verify_checks import Check, all_ok
from hkv.runtime.verify.vllm_engine_args import EngineSettings


def verify_to_dict(model: str, platform: dict[str, Any], settings: EngineSettings, engine: dict[str, Any],
                   request_lens: tuple[int, int], runs: list[dict[str, int]], checks: list[Check]) -> dict[str, Any]:
    """`runs`: one {num_requests, num_preemptions, max_running} per sustained run, in order."""
    prompt_len, output_len = request_lens
    return {
        "ok": all_ok(checks),
        "model": model,
        "layout": "vllm",
        "vllm": {"version": platform["vllm_version"], "device_type": platform["device_type"]},
        "translations": list(settings.translations),
        "engine_args": settings.llm_args,
        "engine": engine,
        "request": {"prompt_len": prompt_len, "output_len": output_len},
        "sustained_runs": runs,
        "checks": [{"name": c.name, "predicted": c.predicted, "measured": c.measured, "ok": c.ok,
                    "note": c.note} for c in checks],
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "\n".join(map(str, value)) or "(none)"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


_VERDICT = {True: "ok", False: "MISMATCH", None: "n/a"}


def render_verify(doc: dict[str, Any], console: Console) -> None:
    vllm = doc["vllm"]
    console.print(f"hkv verify {doc['model']}: the vllm layout against vLLM {vllm['version']} "
                  f"on {vllm['device_type']}")
    if doc["translations"]:
        console.print("platform translations applied:")
        for line in doc["translations"]:
            console.print(f"  - {line}")
    request = doc["request"]
    runs = ", ".join(f"N={r['num_requests']}: {r['max_running']}/{r['num_preemptions']}"
                     for r in doc["sustained_runs"])
    console.print(f"sustained runs (N requests of {request['prompt_len']:,} prompt + {request['output_len']:,} "
                  f"output tokens: most running at once / preemptions): {runs}")
    table = Table("check", "hkv predicts", "vLLM did", "result", "note")
    for check in doc["checks"]:
        table.add_row(check["name"], _cell(check["predicted"]), _cell(check["measured"]),
                      _VERDICT[check["ok"]], check["note"])
    console.print(table)
    console.print("verify: OK" if doc["ok"] else "verify: MISMATCH")
