"""The ``chatgate`` command: ``serve`` and ``check-config``, worker processes, process-wide settings.

``cli.py`` (the command line), ``workers.py`` (``--workers N``: forked workers sharing one socket),
``process.py`` (what ``serve`` sets process-wide before serving) and ``server.py`` (``DrainingServer``:
uvicorn's server, draining on the first SIGTERM before it shuts down).
"""

__all__: list[str] = []  # the interface is the `chatgate` command (pyproject.toml: chatgate.serve.cli:main)
