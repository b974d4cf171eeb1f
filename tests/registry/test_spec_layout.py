"""Every spec reads config before prose: its top-level keys in one order, the table's layout,
then ``experiment`` and ``tiers``, then the paper's numbers, claims and decisions
(docs/specs.md; issue 35)."""

from __future__ import annotations

import re

from pubench.registry import spec_paths

ORDER = ("id paper kind title caption version source metrics methods_in rows cols row_groups col_groups "
         "derived_cols curves experiment tiers reported claims regime decisions").split()


def test_every_spec_has_its_config_before_its_prose():
    for path in spec_paths():
        keys = re.findall(r"^([a-z_]+):", path.read_text(encoding="utf-8"), flags=re.M)
        assert keys == sorted(keys, key=ORDER.index), f"{path.name}: keys in the order {' '.join(ORDER)}"
