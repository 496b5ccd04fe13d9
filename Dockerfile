# chatgate: one process, configured by $CHATGATE_CONFIG in a mounted config folder (see docs/deployment.md).
# The Python the tests run on (pyproject.toml's [tool.mypy] python_version; tests/test_deployment.py checks).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /srv/chatgate

COPY pyproject.toml README.md LICENSE ./
COPY app ./app
COPY adapters ./adapters
RUN pip install --no-cache-dir . && groupadd --system --gid 10001 chatgate \
    && useradd --system --uid 10001 --gid 10001 --no-create-home chatgate

USER chatgate
# The container binds 0.0.0.0, and chatgate refuses that without [[keys]] in the config unless this is true.
# Keep it false: add keys (docs/deployment.md#api-keys), or set it to true only behind your own authentication.
ENV CHATGATE_ALLOW_UNAUTHENTICATED=false
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["chatgate", "serve", "--host", "0.0.0.0", "--port", "8000"]
