"""Parameter counts of pure state-space models: every layer a norm and one Mamba mixer, no MLP."""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden, norms
from hkv.model_specs.recurrent_dims import mamba1_intermediate, mamba2_dims




def mamba2(view: ConfigView, kinds: Kinds) -> int:
    """Mamba2Model: in_proj, conv1d, dt_bias / A_log / D, gated RMSNorm, out_proj per layer."""
    d = mamba2_dims(view)
    bias = bool(view.value("use_bias", False))
    mixer = pb.mamba2_mixer(hidden(view), intermediate=d.intermediate, conv_dim=d.conv_dim, n_heads=d.n_heads,
                            conv_kernel=d.conv_kernel, proj_bias=bias,
                            conv_bias=bool(view.value("use_conv_bias", True)), out_bias=bias)
    return decoder_total(view, [mixer + norms(view, 1) for _ in kinds])


def mamba1(view: ConfigView, kinds: Kinds) -> int:
    """MambaModel / FalconMambaModel: Mamba1 mixers without Jamba's inner norm weights
    (Falcon-Mamba's dt/B/C norms have none)."""
    bias = bool(view.value("use_bias", False))
    mixer = pb.mamba1_mixer(hidden(view), intermediate=mamba1_intermediate(view),
                            d_state=view.int_value("state_size"), d_conv=view.int_value("conv_kernel"),
                            dt_rank=view.int_value("time_step_rank"), proj_bias=bias,
                            conv_bias=bool(view.value("use_conv_bias", True)), inner_norms=False)
    return decoder_total(view, [mixer + norms(view, 1) for _ in kinds])
