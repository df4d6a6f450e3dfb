# TreeLab web app (see docs/deploy.md).
#   docker build -t treelab .
#   docker run --rm -p 8501:8501 treelab          # then open http://localhost:8501
# Jobs run on an embedded Dask cluster inside the container (one worker process per core
# the container may use); set TREELAB_DASK_SCHEDULER=tcp://host:8786 to use a cluster.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NUMBA_CACHE_DIR=/home/treelab/numba-cache \
    PYTHONPATH=/app

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin treelab

# Debian's Chromium renders the PNG / SVG downloads of figures (kaleido, engine/images.py).
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Runtime packages only: requirements.txt holds what the app imports; the test and lint
# tools are in requirements-dev.txt, which stays out of the image.
COPY requirements.txt ./
RUN pip install -r requirements.txt

# The code is owned by root and read-only for the app's user.
COPY app.py ./
COPY .streamlit ./.streamlit
COPY assets ./assets
COPY engine ./engine
COPY pages ./pages

USER treelab
# Compile every numba kernel into the image's cache, so that a container starts warm (the
# cache is only valid on a CPU like the build machine's; elsewhere the app recompiles in
# the background at start-up, as on a cold start).
RUN python -m engine.warmup

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4); sys.exit(0 if r.read().strip() == b'ok' else 1)"]
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", \
     "--server.headless=true", "--browser.gatherUsageStats=false", \
     "--server.fileWatcherType=none"]
