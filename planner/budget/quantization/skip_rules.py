"""How each format's skip list matches a module name (a checkpoint module path without ".weight").

vLLM's rules, by format: AWQ / bitsandbytes / gpt-oss list module names matched as substrings;
compressed-tensors `ignore` entries are exact names or `re:` regular expressions (re.match);
ModelOpt `exclude_modules` are shell-style wildcards; GPTQ `dynamic` keys starting with "-:" are
regular expressions of modules left unquantized. vLLM fuses q/k/v and gate/up, so an entry naming
one member names the fused module too: matching here is per member, which gives the same bytes.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable


def substring_match(module: str, names: Iterable[str]) -> bool:
    return any(name and name in module for name in names)


def ignore_match(module: str, entries: Iterable[str]) -> bool:
    """compressed-tensors: an exact name, a "re:" pattern, or (for fused names) a suffix match."""
    for entry in entries:
        if entry.startswith("re:"):
            if re.match(entry[3:], module):
                return True
        elif module == entry or module.endswith("." + entry):
            return True
    return False


def wildcard_match(module: str, patterns: Iterable[str]) -> bool:
    """ModelOpt: shell wildcards ("model.layers.*.mlp.gate"), or a module path and everything under it."""
    return any(fnmatch.fnmatchcase(module, p) or module == p or module.startswith(p + ".") for p in patterns)


def regex_match(module: str, patterns: Iterable[str]) -> bool:
    return any(re.match(p, module) for p in patterns)
