"""Recurrent-state geometry per family, in RecurrentDesc terms (see layer_desc.RecurrentDesc).

Per request and layer, before TP (elements):
  Mamba1      conv (d_conv-1) x intermediate                ssm intermediate x d_state
  Mamba2      conv (conv_kernel-1) x (intermediate + 2*n_groups*d_state)
                                                             ssm n_heads x head_dim x d_state
  GDN         conv (conv_kernel-1) x (2*key_dim + value_dim) ssm v_heads x k_head_dim x v_head_dim
  Lightning   no conv                                        ssm heads x head_dim x head_dim
  KDA         conv (kernel-1) x 3*heads*head_dim (q, k, v)   ssm heads x head_dim x head_dim
  Short conv  conv (conv_L_cache-1) x conv_dim               no ssm state (LFM2's gated conv)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hkv.model_specs.attention_dims import model_head_dim
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_kinds import RECURRENT_VARIANT


@dataclass(frozen=True)
class RecurrentGeometry:
    """RecurrentDesc fields shared by every recurrent layer of a model (all but layer_idx / dtypes)."""

    variant: str
    conv_kernel_len: int
    conv_dim: int
    ssm_heads: int
    ssm_dims: tuple[int, ...]
    conv_groups: int = 0  # Mamba2 B/C groups inside conv_dim (replicated to fill TP ranks)
    conv_group_dim: int = 0  # d_state: channels per group in each of B and C


@dataclass(frozen=True)
class Mamba2Dims:
    intermediate: int  # n_heads * head_dim: width of x, z, and the gated norm
    n_heads: int
    head_dim: int
    d_state: int
    n_groups: int
    conv_kernel: int

    @property
    def conv_dim(self) -> int:
        return self.intermediate + 2 * self.n_groups * self.d_state


def mamba2_dims(view: ConfigView) -> Mamba2Dims:
    if view.family == "nemotron_h":
        n_heads, head_dim = view.int_value("mamba_num_heads"), view.int_value("mamba_head_dim")
        # NemotronHMamba2Mixer sizes everything by heads x head_dim, not by expand x hidden.
        return Mamba2Dims(n_heads * head_dim, n_heads, head_dim, view.int_value("ssm_state_size"),
                          view.int_value("n_groups"), view.int_value("conv_kernel"))
    if view.family == "zamba2":
        # vLLM's Zamba2 sizes the mixer by mamba_expand x hidden; mamba_headdim is that / n_mamba_heads.
        intermediate, n_heads = view.int_value("mamba_expand") * view.int_value("hidden_size"), view.int_value(
            "n_mamba_heads")
        head_dim = view.int_value("mamba_headdim", intermediate // n_heads, why="Zamba2Config derives it")
        return Mamba2Dims(intermediate, n_heads, head_dim, view.int_value("mamba_d_state"),
                          view.int_value("mamba_ngroups"), view.int_value("mamba_d_conv"))
    if view.family == "mamba2":
        # Mamba2Config: num_heads x head_dim == expand x hidden_size (checked by its mixer).
        n_heads, head_dim = view.int_value("num_heads"), view.int_value("head_dim")
        return Mamba2Dims(n_heads * head_dim, n_heads, head_dim, view.int_value("state_size"),
                          view.int_value("n_groups"), view.int_value("conv_kernel"))
    n_heads = view.int_value("mamba_n_heads")
    intermediate = _mamba2_intermediate(view)
    head_dim_raw = view.value("mamba_d_head")
    head_dim = intermediate // n_heads if head_dim_raw == "auto" else view.int_value("mamba_d_head")
    if n_heads * head_dim != intermediate:
        raise InvalidConfigError(f"mamba_n_heads {n_heads} x mamba_d_head {head_dim} != mamba intermediate "
                                 f"size {intermediate}; the config is inconsistent")
    return Mamba2Dims(intermediate, n_heads, head_dim, view.int_value("mamba_d_state"),
                      view.int_value("mamba_n_groups"), view.int_value("mamba_d_conv"))


def _mamba2_intermediate(view: ConfigView) -> int:
    if view.family == "falcon_h1":
        if view.has("mamba_d_ssm"):
            return view.int_value("mamba_d_ssm")
        if isinstance(view.get("mamba_d_head"), int) and view.has("mamba_n_heads"):
            size = view.int_value("mamba_n_heads") * view.int_value("mamba_d_head")
            view.note(f"mamba_d_ssm absent: used mamba_n_heads x mamba_d_head = {size}, the only size "
                      "consistent with the given head dims")
            return size
        # FalconH1Config's default mamba_d_ssm (1024) is only valid for its default head counts.
        return view.int_value("mamba_d_ssm", 1024, why="FalconH1Config default")
    return view.int_value("mamba_expand") * view.int_value("hidden_size")


def _mamba2(view: ConfigView) -> RecurrentGeometry:
    d = mamba2_dims(view)
    return RecurrentGeometry("mamba2", d.conv_kernel, d.conv_dim, d.n_heads, (d.head_dim, d.d_state),
                             conv_groups=d.n_groups, conv_group_dim=d.d_state)


# Pure Mamba1 models (MambaConfig, FalconMambaConfig) name their keys without the "mamba_" prefix.
_PURE_MAMBA1 = ("mamba", "falcon_mamba")


def mamba1_intermediate(view: ConfigView) -> int:
    if view.family in _PURE_MAMBA1:
        return view.int_value("intermediate_size")
    return view.int_value("mamba_expand") * view.int_value("hidden_size")


def _mamba1(view: ConfigView) -> RecurrentGeometry:
    intermediate = mamba1_intermediate(view)
    pure = view.family in _PURE_MAMBA1
    return RecurrentGeometry("mamba1", view.int_value("conv_kernel" if pure else "mamba_d_conv"), intermediate,
                             intermediate, (view.int_value("state_size" if pure else "mamba_d_state"),))


def _gdn(view: ConfigView) -> RecurrentGeometry:
    k_heads, v_heads = view.int_value("linear_num_key_heads"), view.int_value("linear_num_value_heads")
    k_dim, v_dim = view.int_value("linear_key_head_dim"), view.int_value("linear_value_head_dim")
    conv_dim = 2 * k_heads * k_dim + v_heads * v_dim  # q and k share key_dim; v has value_dim
    kernel = view.int_value("linear_conv_kernel_dim")
    return RecurrentGeometry("gdn", kernel, conv_dim, v_heads, (k_dim, v_dim))


def _lightning(view: ConfigView) -> RecurrentGeometry:
    heads, head_dim = view.int_value("num_attention_heads"), model_head_dim(view)
    return RecurrentGeometry("lightning", 0, 0, heads, (head_dim, head_dim))


def kda_heads_and_dims(view: ConfigView) -> tuple[int, int, int]:
    """(heads, head_dim, conv_kernel) of Kimi delta attention: linear_attn_config, else flat keys."""
    if view.family == "bailing_hybrid":
        return _bailing_kda(view)
    nested = view.get("linear_attn_config") or {}
    heads = nested.get("num_heads") or view.int_value("linear_num_heads")
    head_dim = nested.get("head_dim") or view.int_value("linear_head_dim")
    kernel = nested.get("short_conv_kernel_size") or view.int_value("linear_conv_kernel_dim")
    return int(heads), int(head_dim), int(kernel)


def _bailing_kda(view: ConfigView) -> tuple[int, int, int]:
    """vLLM's BailingMoeV3 sizes its KDA layers by num_attention_heads x head_dim and
    short_conv_kernel_size; transformers' BailingHybrid reads linear_num_heads x linear_head_dim.
    A real checkpoint has one width; where the two disagree the engine's reading wins, noted."""
    heads, head_dim = view.int_value("num_attention_heads"), view.int_value("head_dim")
    kernel = view.int_value("short_conv_kernel_size", view.get("linear_conv_kernel_dim"))
    lin_heads, lin_dim = view.get("linear_num_heads"), view.get("linear_head_dim")
    if lin_heads and lin_dim and (lin_heads, lin_dim) != (heads, head_dim):
        view.note(f"KDA state sized as vLLM does, num_attention_heads x head_dim = {heads} x {head_dim}; "
                  f"the config's linear_num_heads x linear_head_dim ({lin_heads} x {lin_dim}) disagree")
    return heads, head_dim, kernel


def _short_conv(view: ConfigView) -> RecurrentGeometry:
    """LFM2 / LFM2-MoE / LFM3: a gated depthwise conv over conv_dim channels (vLLM's LFM2 reads
    conv_dim, LFM2-MoE hidden_size; transformers always convolves hidden_size)."""
    width = view.int_value("conv_dim") if view.family == "lfm2" and view.has("conv_dim") else view.int_value(
        "hidden_size")
    return RecurrentGeometry("short_conv", view.int_value("conv_L_cache"), width, 0, ())


def _kda(view: ConfigView) -> RecurrentGeometry:
    heads, head_dim, kernel = kda_heads_and_dims(view)
    return RecurrentGeometry("kda", kernel, 3 * heads * head_dim, heads, (head_dim, head_dim))


_BUILDERS: dict[str, Callable[[ConfigView], RecurrentGeometry]] = {
    "mamba1": _mamba1, "mamba2": _mamba2, "gdn": _gdn, "lightning": _lightning, "kda": _kda,
    "short_conv": _short_conv,
}


def recurrent_geometry(view: ConfigView) -> RecurrentGeometry:
    return _BUILDERS[RECURRENT_VARIANT[view.family]](view)
