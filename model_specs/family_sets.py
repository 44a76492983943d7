"""model_type sets of families whose code loads only when planned (model_specs/lazy_import.py).

The dispatch tables key on these names without importing the family modules; those modules
re-export them under their old names.
"""

from __future__ import annotations

STEP5_FAMILIES = frozenset({"step5", "step5_vl"})  # step5_layers.py
STEP3P7_FAMILIES = ("step3p5", "step3p7")  # step3p7_model.py
DOMYN_EDGE_FAMILIES = ("domynedge", "domyn_edge")  # the fork's DomynEdgeConfig.model_type; vLLM's module name
