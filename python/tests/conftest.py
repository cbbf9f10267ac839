"""Stores for the tests: SQLite in a temporary file, and the real Redis and PostgreSQL of
scripts/start-all-servers.sh (LEADER_TEST_REDIS / LEADER_TEST_POSTGRES override the URIs; a
server that does not answer skips its cases)."""

import os
import uuid

import pytest

import leader

REDIS = os.environ.get("LEADER_TEST_REDIS", "redis://127.0.0.1:16379/0?prefix=py-test:")
POSTGRES = os.environ.get(
    "LEADER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:15432/leader_test"
)


_answers = {}


def _reachable(uri):
    if uri not in _answers:
        _answers[uri] = _probe(uri)
    return _answers[uri]


def _probe(uri):
    try:
        with leader.Elector(uri, wait=0, lease=10.0, call_timeout=5.0) as e:
            with e.lead("py-test-probe"):
                pass
        return True
    except (leader.Unavailable, leader.DeadlineExceeded):
        return False


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def store_uri(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/leader.db"
    uri = REDIS if request.param == "redis" else POSTGRES
    if not _reachable(uri):
        pytest.skip(f"{request.param} at {uri} does not answer")
    return uri


@pytest.fixture(params=["sqlite", "redis"])
def async_uri(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/leader.db"
    if not _reachable(REDIS):
        pytest.skip(f"redis at {REDIS} does not answer")
    return REDIS


@pytest.fixture
def lock():
    return f"py-{uuid.uuid4().hex[:12]}"
