"""Uploads: files kept in the store per owner and agent, and the references to them messages carry.

``FileStore`` is the ``files`` table; ``resolve_references`` checks and canonicalises the references a
request's messages make, and ``FileInliner`` gives a model call the bytes. The HTTP routes are in
app/web/files.py. See docs/files.md.
"""

from chatgate.files_store.references import (
    REFERENCE_PREFIX,
    UPLOAD_PROVIDER,
    FileInliner,
    file_path,
    inline_plan,
    is_file_id,
    referenced_file,
    resolve_references,
)
from chatgate.files_store.store import FileRecord, FileStore, StoredFile

__all__ = [
    "REFERENCE_PREFIX",
    "UPLOAD_PROVIDER",
    "FileInliner",
    "FileRecord",
    "FileStore",
    "StoredFile",
    "file_path",
    "inline_plan",
    "is_file_id",
    "referenced_file",
    "resolve_references",
]
