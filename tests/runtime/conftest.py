import sys
from pathlib import Path

# The shared helpers (rt_layouts, rt_harness, live/tiny_models) sit here, beside the subpackage
# test folders that import them.
sys.path.insert(0, str(Path(__file__).parent))
