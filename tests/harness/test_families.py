"""The registry of families (`cs336_harness/families.py`) and the table made from it."""

from cs336_harness.families import FAMILIES, markdown_table


def test_every_family_says_what_its_cases_catch():
    assert [f.name for f in FAMILIES if not f.catches.strip()] == []


def test_the_table_has_one_row_per_family_in_the_registry_order():
    rows = markdown_table().splitlines()[2:]
    assert [row.split("|")[1].strip(" `") for row in rows] == [f.name for f in FAMILIES]


def test_built_from_names_registered_families_and_is_closed():
    """Each family's `built_from` lists every family it is built from, through another too
    (what a block's attention is built from, the block is), never itself: the diagnosis
    finds the first wrong component among them, and runs them first."""
    by_name = {f.name: f for f in FAMILIES}
    for family in FAMILIES:
        parts = set(family.built_from)
        assert parts <= by_name.keys() and family.name not in parts, family.name
        for part in parts:
            assert set(by_name[part].built_from) <= parts, (family.name, part)
