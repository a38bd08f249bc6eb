# One image for every role of the arena: dashboard, worker, house bots.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

# bubblewrap: the sandbox of uploaded bots (arena/sandbox).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first so code changes do not reinstall them.
COPY pyproject.toml README.md ./
COPY sdk ./sdk
COPY arena ./arena
COPY dashboard ./dashboard
COPY bots ./bots
COPY protos ./protos
RUN pip install '.[arena,dashboard]' && useradd --create-home tonk
USER tonk

EXPOSE 8000 50051
# The gateway's port for bots that connect out (tonk gateway).
EXPOSE 50061
# DashboardWorker: gunicorn's threaded worker, answering its own errors under /api in JSON.
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "2",
     "--worker-class", "dashboard.gunicorn_worker.DashboardWorker", "dashboard.wsgi:app"]
