"""isinstance tests of family-specific cache classes that leave the family's module unimported.

A plan of a model of another family never builds these classes' instances, so each test asks
lazy_import.loaded_instance (False while the class's module is not imported) instead of
importing step5_layers, compressed_attention or conv_state_cache up front (issue 34: cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from hkv.model_specs.lazy_import import loaded_instance

if TYPE_CHECKING:
    from hkv.model_specs.compressed_attention import CompressedCacheSpec
    from hkv.model_specs.conv_state_cache import ConvStateCacheSpec, ConvStateDesc
    from hkv.model_specs.step5_layers import CircularBufferCacheSpec, SparseKVCacheSpec, SummaryCacheSpec

_M = "hkv.model_specs."


def is_compressed_spec(obj: object) -> TypeGuard[CompressedCacheSpec]:
    return loaded_instance(obj, _M + "compressed_attention:CompressedCacheSpec")


def is_conv_state_spec(obj: object) -> TypeGuard[ConvStateCacheSpec]:
    return loaded_instance(obj, _M + "conv_state_cache:ConvStateCacheSpec")


def is_conv_state_desc(obj: object) -> TypeGuard[ConvStateDesc]:
    return loaded_instance(obj, _M + "conv_state_cache:ConvStateDesc")


def is_sparse_kv_spec(obj: object) -> TypeGuard[SparseKVCacheSpec]:
    return loaded_instance(obj, _M + "step5_layers:SparseKVCacheSpec")


def is_summary_spec(obj: object) -> TypeGuard[SummaryCacheSpec]:
    return loaded_instance(obj, _M + "step5_layers:SummaryCacheSpec")


def is_circular_buffer_spec(obj: object) -> TypeGuard[CircularBufferCacheSpec]:
    return loaded_instance(obj, _M + "step5_layers:CircularBufferCacheSpec")
