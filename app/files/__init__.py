"""User files: the checks on what a message attaches, uploads kept in the store, and references to them.

``check_files`` (``checks.py``) refuses a file whose URL scheme is not allowed or whose inline bytes are
too many. ``FileStore`` (``store.py``) is the ``files`` table, per owner and agent; ``resolve_references``
(``references.py``) checks and canonicalises the references a request's messages make, and
``FileInliner`` gives a model call the bytes. The HTTP routes are in app/web/files.py. See docs/files.md.
"""

from chatgate.files.checks import check_files
from chatgate.files.references import (
    REFERENCE_PREFIX,
    UPLOAD_PROVIDER,
    FileInliner,
    file_path,
    inline_plan,
    is_file_id,
    referenced_file,
    resolve_references,
)
from chatgate.files.store import FileRecord, FileStore, StoredFile

__all__ = [
    "REFERENCE_PREFIX",
    "UPLOAD_PROVIDER",
    "FileInliner",
    "FileRecord",
    "FileStore",
    "StoredFile",
    "check_files",
    "file_path",
    "inline_plan",
    "is_file_id",
    "referenced_file",
    "resolve_references",
]
