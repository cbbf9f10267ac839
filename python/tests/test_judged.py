"""Three replica processes (tests/replica.py) elect on one lock of a real store, judged by a
second client of that store: capi_judge (tests/integration/capi), named by $LEADER_JUDGE. It
passes when every replica led its terms, the tokens increase in the order the terms started, no
two terms overlap, and the server showed each term's token while it ran."""

import os
import subprocess
import sys

import pytest

JUDGE = os.environ.get("LEADER_JUDGE")


@pytest.mark.skipif(not JUDGE, reason="LEADER_JUDGE (the capi_judge program) is not set")
def test_three_processes_judged_by_a_second_client(store_uri, tmp_path):
    replica = tmp_path / "replica"
    script = os.path.join(os.path.dirname(__file__), "replica.py")
    replica.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    replica.chmod(0o755)
    uri = store_uri
    if uri.startswith("redis"):
        uri = uri.replace("prefix=py-test:", "prefix=py-judge:")
    run = subprocess.run([JUDGE, str(replica), uri], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
