"""Family-specific code loaded only when a model of that family is planned (issue 34: cold start).

Dispatch tables name a family's function "hkv.module:attribute" instead of importing it; `resolve`
imports the module on first use and keeps the attribute (functools.cache: one import per name per
process). `loaded_instance` answers an isinstance question about a class of such a module without
importing it: no instance of a class exists before its module has been imported, so a module not
in sys.modules means False.
"""

from __future__ import annotations

import functools
import importlib
import sys


@functools.cache
def resolve(ref: str) -> object:
    """The attribute `ref` ("package.module:attribute", or "...:Class.attribute") names, its module
    imported on first use."""
    module, _, path = ref.partition(":")
    found: object = importlib.import_module(module)
    for attribute in path.split("."):
        found = getattr(found, attribute)
    return found


def loaded_instance(obj: object, ref: str) -> bool:
    """isinstance(obj, the class `ref` names), without importing that class's module."""
    module, _, name = ref.partition(":")
    loaded = sys.modules.get(module)
    if loaded is None:
        return False
    cls = getattr(loaded, name)
    assert isinstance(cls, type), ref
    return isinstance(obj, cls)
