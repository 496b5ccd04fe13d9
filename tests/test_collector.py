"""The collector settings ``chatgate serve`` applies before serving."""

import gc

from chatgate.collector import FULL_COLLECTION_EVERY, tune_for_serving


def test_serving_freezes_startup_objects_and_makes_full_collections_rarer() -> None:
    before = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (before[0], before[1], FULL_COLLECTION_EVERY)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
