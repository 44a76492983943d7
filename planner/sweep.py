"""sweep(model, base, gpus, tps) -> one Plan per GPU x TP: the cartesian product of PlanConfigs.

A GPU or TP size the model does not fit is a row whose plan says so (`fits` False), never an
error: the point of a sweep is to see where the model fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.errors import InvalidInputError
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.plan import Plan, plan
from hkv.planner.plan_config import PlanConfig


@dataclass(frozen=True)
class SweepRow:
    plan: Plan

    @property
    def gpu(self) -> str:
        """The --gpu key (aliases resolved, e.g. "h100"); "custom" under gpu_memory_bytes."""
        return self.plan.budget.device

    @property
    def tp(self) -> int:
        return self.plan.config.tp

    @property
    def fits(self) -> bool:
        """The weights and runtime overhead fit the GPU (the plan's budget), as `hkv plan` says."""
        return self.plan.budget.fits


def sweep_configs(base: PlanConfig, gpus: tuple[str, ...], tps: tuple[int, ...]) -> tuple[PlanConfig, ...]:
    """`base` with each GPU x TP, GPU-major in the given order. Raises InvalidInputError for an
    unknown GPU (get_gpu's message), a TP PlanConfig refuses (its message), an empty list, a
    duplicate (aliases included: "h100-sxm" is "h100"), or a GPU list with gpu_memory_bytes
    (one memory size for every GPU would make the rows the same)."""
    if not gpus or not tps:
        raise InvalidInputError("a sweep needs at least one gpu and one tp", fields=("gpu", "tp"))
    names = tuple(get_gpu(name).name for name in gpus)
    _refuse_duplicates("gpu", names)
    _refuse_duplicates("tp", tps)
    if len(names) > 1 and base.gpu_memory_bytes is not None:
        raise InvalidInputError("gpu_memory_bytes gives every GPU the same memory; drop it to sweep gpu",
                                fields=("gpu_memory_bytes", "gpu"))
    return tuple(replace(base, gpu=name, tp=tp) for name in names for tp in tps)


def sweep(model: ModelSpec, base: PlanConfig, gpus: tuple[str, ...],
          tps: tuple[int, ...]) -> tuple[SweepRow, ...]:
    """One plan per config of `sweep_configs` (same order). Pure; raises what `sweep_configs`
    and `plan` raise (a primary layout that cannot apply does so for every row)."""
    return tuple(SweepRow(plan(model, cfg)) for cfg in sweep_configs(base, gpus, tps))


def _refuse_duplicates(field: str, values: tuple[object, ...]) -> None:
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise InvalidInputError(f"{field} lists {', '.join(repeated)} more than once; give each value once",
                                fields=(field,))
