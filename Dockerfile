# shadowdiff: the shadow proxy (`shadowdiff serve`) by default; the same image runs
# `shadowdiff simulate`, `replay`, `report` and `review`.
#
#   docker build -t shadowdiff .
#   docker run -p 8080:8080 -e SHADOWDIFF_PRIMARY=http://bf16:8000 \
#       -e SHADOWDIFF_SHADOW=http://fp8:8000 -e SHADOWDIFF_SHADOW_MODEL=Qwen/Qwen3-8B-FP8 shadowdiff
#
# Every `serve` flag is also an environment variable: --shadow-model is
# SHADOWDIFF_SHADOW_MODEL (see docs/serve.md).

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY shadowdiff ./shadowdiff
COPY proxy ./proxy
COPY replay ./replay
# wheels of shadowdiff and its runtime dependencies only (no test extra)
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/shadowdiff --create-home shadowdiff
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels /wheels/shadowdiff-*.whl && rm -rf /wheels
USER 10001
WORKDIR /var/lib/shadowdiff
ENV PYTHONUNBUFFERED=1 \
    SHADOWDIFF_HOST=0.0.0.0 \
    SHADOWDIFF_PORT=8080 \
    SHADOWDIFF_STORE=/var/lib/shadowdiff/shadowdiff.sqlite \
    SHADOWDIFF_LOG_LEVEL=info
EXPOSE 8080
VOLUME ["/var/lib/shadowdiff"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SHADOWDIFF_PORT', '8080') + '/healthz', timeout=2)"]
CMD ["shadowdiff", "serve"]
