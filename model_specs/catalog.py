"""The bundled catalog of model configs (model_specs/catalog/<short-name>.json) and name lookup.

An entry answers to, case-insensitively: its file stem ("gemma-3-27b-it"), the stem without a
trailing "-it" / "-instruct" ("gemma-3-27b"), its HF id (`_model_id`, "google/gemma-3-27b-it") and
the repo part of that id ("gemma-3-27b-it"). An alias two entries would share is dropped rather
than resolved arbitrarily.

Nothing is read at import: the entries and the alias table are built on first use, once per
process (functools.cache), and handed out read-only (a tuple of frozen entries, a mapping proxy).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hkv.model_specs.errors import SpecNotFoundError
from hkv.model_specs.json_file import read_json_object

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"
_SHORT_SUFFIXES = ("-it", "-instruct")


@dataclass(frozen=True)
class CatalogEntry:
    name: str  # file stem: the short name
    model_id: str  # HF id from `_model_id`, "" when absent
    path: Path

    def load_config(self) -> dict[str, Any]:
        return read_json_object(self.path)

    def candidate_aliases(self) -> tuple[str, ...]:
        aliases = [self.name]
        aliases += [self.name[: -len(s)] for s in _SHORT_SUFFIXES if self.name.endswith(s)]
        if self.model_id:
            aliases += [self.model_id, self.model_id.split("/")[-1]]
        return tuple(dict.fromkeys(a.lower() for a in aliases))


@cache
def catalog_entries() -> tuple[CatalogEntry, ...]:
    """Every catalog entry, sorted by name."""
    entries = []
    for path in sorted(CATALOG_DIR.glob("*.json")):
        model_id = str(read_json_object(path).get("_model_id") or "")
        entries.append(CatalogEntry(path.stem, model_id, path))
    return tuple(entries)


def catalog_names() -> tuple[str, ...]:
    return tuple(e.name for e in catalog_entries())


@cache
def _alias_table() -> Mapping[str, CatalogEntry]:
    owners = Counter(alias for e in catalog_entries() for alias in e.candidate_aliases())
    return MappingProxyType({alias: e for e in catalog_entries() for alias in e.candidate_aliases()
                             if owners[alias] == 1})


def lookup_catalog(query: str) -> CatalogEntry | None:
    """The entry `query` names (see module doc), or None."""
    return _alias_table().get(query.strip().lower())


def find_catalog_entry(query: str) -> CatalogEntry:
    """Like lookup_catalog, but a miss raises SpecNotFoundError listing close matches."""
    entry = lookup_catalog(query)
    if entry is None:
        raise SpecNotFoundError(f"{query!r} is not in the catalog; {close_matches_hint(query)}")
    return entry


def close_matches_hint(query: str) -> str:
    """'did you mean: a, b?' from difflib over names and aliases, else a pointer to the full list."""
    table = _alias_table()
    matches = difflib.get_close_matches(query.strip().lower(), list(table), n=5, cutoff=0.5)
    names = list(dict.fromkeys(table[m].name for m in matches))
    if names:
        return f"did you mean: {', '.join(names)}?"
    return f"known names: {', '.join(catalog_names())}"
