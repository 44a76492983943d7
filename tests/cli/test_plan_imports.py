"""A cold `hkv plan` imports only what planning needs (issue 34: a plan in half a second).

Each check runs the real entry point in a fresh interpreter, plans a catalog model with
--format json, and lists what got imported: the other commands and their libraries (the runtime,
torch, transformers, the Hub client, numpy...), pydantic (typer's value conversion, replaced by
cli/light_coercion.py) and rich (human output only) must all stay out. A top-level import
re-added anywhere on the path fails here. benchmarks/bench_plan_startup.py times the same command.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Packages (and their submodules) a JSON plan of a catalog model must not import.
HEAVY = ("torch", "transformers", "huggingface_hub", "safetensors", "numpy", "triton", "tokenizers",
         "pydantic", "rich", "hkv.runtime", "hkv.kernels", "hkv.model_specs.hub")
# The other commands, imported only when they run (cli/lazy_commands.py).
OTHER_COMMANDS = ("hkv.cli.models_command", "hkv.cli.gpus_command", "hkv.cli.simulate_command",
                  "hkv.cli.run_command", "hkv.cli.verify_command", "hkv.cli.explain_log_command",
                  "hkv.cli.calibrate_command")

_PROBE = """
import json, runpy, sys
sys.argv = ["hkv", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("hkv.cli", run_name="__main__")
except SystemExit as exit:
    code = exit.code or 0
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def imported_by(*args: str) -> tuple[str, set[str]]:
    """(stdout, modules imported) of `hkv ARGS` in a fresh interpreter; fails on a non-zero exit."""
    result = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["exit"] == 0, result.stderr
    return result.stdout, set(report["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("model", ["gemma-3-27b", "qwen3-next-80b-a3b", "gpt-oss-20b"])
def test_json_plan_of_a_catalog_model_stays_light(model: str) -> None:
    stdout, modules = imported_by("plan", model, "--gpu", "h100", "--format", "json")
    assert json.loads(stdout)["model"]["name"]  # it did plan
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, OTHER_COMMANDS) == []


def test_sglang_and_calibration_wait_for_their_options() -> None:
    _, modules = imported_by("plan", "gemma-3-27b", "--gpu", "h100", "--format", "json")
    assert loaded(modules, ("hkv.planner.engines.sglang.plan", "hkv.planner.engines.sglang.server_args",
                            "hkv.planner.startup.sglang_verdict", "hkv.planner.budget.fitted",
                            "hkv.planner.engines.vllm.log")) == []


# Family-specific modules, and quantization formats, a dense unquantized model never needs: the
# dispatch tables name them "module:function" (model_specs/lazy_import.py) and the planner tests
# their classes without importing them (model_specs/family_specs.py).
OTHER_FAMILIES = ("hkv.model_specs.step5_layers", "hkv.model_specs.compressed_attention",
                  "hkv.model_specs.conv_state_cache", "hkv.model_specs.recurrent_dims",
                  "hkv.model_specs.step3p7_model", "hkv.model_specs.inkling_layers",
                  "hkv.model_specs.dory_layers", "hkv.model_specs.domyn_edge_layers",
                  "hkv.model_specs.padded_latent_layers", "hkv.model_specs.param_count_hybrid",
                  "hkv.model_specs.param_count_gemma4", "hkv.model_specs.param_breakdown_gemma4",
                  "hkv.model_specs.param_breakdown_deepseek_v4", "hkv.model_specs.param_breakdown_audio")
QUANT_FORMATS = tuple(f"hkv.planner.budget.quantization.{name}" for name in (
    "awq", "gptq", "auto_round", "bitsandbytes", "compressed_tensors", "deepseek_v4_fp8", "fp8",
    "modelopt", "mxfp4"))


def test_a_dense_model_loads_no_other_family_or_quantization_format() -> None:
    _, modules = imported_by("plan", "llama-3.1-8b-instruct", "--gpu", "h100", "--format", "json")
    assert loaded(modules, OTHER_FAMILIES) == []
    assert loaded(modules, QUANT_FORMATS) == []


def test_a_family_module_loads_when_its_model_is_planned() -> None:
    """The other side: the lazy tables still reach a family's code (a hybrid and an MXFP4 model)."""
    _, modules = imported_by("plan", "gpt-oss-20b", "--gpu", "h100", "--format", "json")
    assert loaded(modules, ("hkv.planner.budget.quantization.mxfp4",)) != []
    _, modules = imported_by("plan", "qwen3-next-80b-a3b", "--gpu", "h100", "--format", "json")
    assert loaded(modules, ("hkv.model_specs.recurrent_dims", "hkv.model_specs.param_count_hybrid")) == [
        "hkv.model_specs.param_count_hybrid", "hkv.model_specs.recurrent_dims"]


def test_the_help_still_lists_every_command_in_order() -> None:
    result = subprocess.run([sys.executable, "-m", "hkv.cli", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.split("Commands:")[1].strip().splitlines()]
    assert listed == ["plan", "models", "gpus", "simulate", "run", "verify", "explain-log", "calibrate"]
