"""docs/families.md (written by families_doc.py) says for each family what FAMILIES says: planned
families in the planned table, refused ones in the refused table with the table's phrase."""

from __future__ import annotations

import re
from pathlib import Path

from test_family_coverage import FAMILIES, PLANS

DOC = Path(__file__).resolve().parents[2] / "docs" / "families.md"


def doc_sections() -> tuple[set[str], dict[str, str]]:
    text = DOC.read_text()
    planned_part, refused_part = text.split("## Refused", 1)
    planned: set[str] = set()
    for row in re.findall(r"^\| [^|]+ \| ([^|]+) \|$", planned_part.split("## Planned", 1)[1], re.MULTILINE):
        planned.update(name.strip().rstrip("*") for name in row.split(","))
    planned.discard("families")
    refused = {m.group(1): m.group(2) for m in re.finditer(r"^\| (\S+) \| (?:yes|no) \| (.+) \|$", refused_part,
                                                          re.MULTILINE)}
    return planned, refused


def test_doc_lists_every_family_where_the_table_does() -> None:
    planned, refused = doc_sections()
    assert planned == {name for name, (_, outcome) in FAMILIES.items() if outcome == PLANS}
    assert set(refused) == {name for name, (_, outcome) in FAMILIES.items() if outcome != PLANS}
    for name, line in refused.items():
        assert FAMILIES[name][1] in line, f"{name}: docs/families.md gives another reason; regenerate it"


def test_doc_marks_the_families_vllm_serves() -> None:
    served_in_doc = set(re.findall(r"([a-z0-9_.-]+)\*", DOC.read_text()))
    served_in_doc |= {m for m in re.findall(r"^\| (\S+) \| yes \|", DOC.read_text(), re.MULTILINE)}
    assert served_in_doc == {name for name, (served, _) in FAMILIES.items() if served}
