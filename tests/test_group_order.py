"""--by orders a batch's rows by group, then input order, with one sort of packed keys
(cumtool.grouped._sort_by_group); it must equal numpy's stable argsort exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cumtool.grouped import _sort_by_group


@given(st.lists(st.integers(0, 40), max_size=300))
def test_rows_ordered_by_group_then_input_order(ids: list[int]) -> None:
    groups = np.array(ids, dtype=np.int64)
    order, sorted_groups = _sort_by_group(groups)
    want = np.argsort(groups, kind="stable")
    assert order.tolist() == want.tolist()
    assert sorted_groups.tolist() == groups[want].tolist()


@pytest.mark.parametrize("ids", [[2**61, 5, 2**61, 0], [2**62 + 1, 2**62]],
                         ids=["just-past-packing", "far-past-packing"])
def test_ids_too_large_to_pack_take_the_stable_argsort(ids: list[int]) -> None:
    groups = np.array(ids, dtype=np.int64)
    order, sorted_groups = _sort_by_group(groups)
    assert order.tolist() == np.argsort(groups, kind="stable").tolist()
    assert sorted_groups.tolist() == sorted(ids)
