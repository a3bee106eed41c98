"""The registry of families (`cs336_harness/families.py`) and the table made from it."""

from cs336_harness.families import FAMILIES, markdown_table


def test_every_family_says_what_its_cases_catch():
    assert [f.name for f in FAMILIES if not f.catches.strip()] == []


def test_the_table_has_one_row_per_family_in_the_registry_order():
    rows = markdown_table().splitlines()[2:]
    assert [row.split("|")[1].strip(" `") for row in rows] == [f.name for f in FAMILIES]
