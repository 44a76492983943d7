"""Model specs: what hkv knows about a model's caches and weights.

Typical use:
    from hkv.model_specs import load_model_spec, CacheOptions
    spec = load_model_spec("gemma-3-27b")                 # catalog name, HF id, directory or config.json
    for layer, cache in spec.cache_specs(CacheOptions(tp=2)):
        ...
"""

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, LayerCacheSpec, StateCacheSpec
from hkv.model_specs.catalog import CatalogEntry, catalog_entries, catalog_names, find_catalog_entry
from hkv.model_specs.errors import InvalidConfigError, ModelSpecError, SpecNotFoundError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer, RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec

__all__ = [
    "AttentionCacheSpec", "AttentionDesc", "CacheKind", "CacheLayer", "CacheOptions", "CatalogEntry",
    "InvalidConfigError", "LayerCacheSpec", "ModelSpec", "ModelSpecError", "RecurrentDesc",
    "SpecNotFoundError", "StateCacheSpec", "catalog_entries", "catalog_names", "find_catalog_entry",
    "from_hf_config", "load_model_spec",
]
