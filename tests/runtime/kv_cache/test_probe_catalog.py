"""--probe-capacity: the real pools admit exactly the planner's max_num_requests, every catalog
model, every layout (the Layout is the single source of truth for both)."""

import pytest

from hkv.model_specs.catalog import catalog_names
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.capacity_probe import probe_capacity


@pytest.mark.parametrize("name", catalog_names())
def test_probe_equals_prediction(name):
    model = load_model_spec(name)
    for max_len in (8192, None):
        result = plan(model, PlanConfig(available_kv_memory_bytes=8 * 2**30, max_model_len=max_len))
        for layout_name, report in result.reports.items():
            layout = report.layout
            predicted = layout.max_num_requests(layout.max_model_len)
            assert probe_capacity(layout, layout.max_model_len) == predicted, (name, layout_name, max_len)
