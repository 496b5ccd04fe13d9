"""The process-wide settings ``chatgate serve`` applies before serving."""

import gc
import resource

from chatgate.serve.process import FULL_COLLECTION_EVERY, prepare_for_serving


def test_serving_freezes_startup_objects_rarefies_full_collections_and_opens_the_file_limit() -> None:
    threshold, files = gc.get_threshold(), resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, files[1]), files[1]))
    try:
        prepare_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (threshold[0], threshold[1], FULL_COLLECTION_EVERY)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (files[1], files[1])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        resource.setrlimit(resource.RLIMIT_NOFILE, files)
