"""A small Python client of the `leader serve` sidecar (docs/serve.md), standard library only.

    from leader_client import Sidecar
    with Sidecar("http://127.0.0.1:9464").lease("nightly-report", ttl="30s") as lease:
        if lease is None:
            ...  # another replica holds it
        else:
            run(lease.fencing_token, stop=lease.lost)

While the `with` block runs, a thread renews the lease every third of its granted ttl; when a
renewal is refused (409 lease_lost) or the lease's deadline passes without a confirmed renewal,
`lease.lost` is set and the job must stop. Leaving the block releases the lease.
"""
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request


class SidecarError(Exception):
    """A reply other than the one expected: carries the HTTP status and the sidecar's error code."""

    def __init__(self, status, code, reason):
        super().__init__(f"{status} {code}: {reason}")
        self.status, self.code = status, code


class Lease:
    def __init__(self, reply):
        self.lease_id = reply["lease_id"]
        self.fencing_token = reply["fencing_token"]
        self.ttl_s = reply["granted_ttl_ms"] / 1000
        self.deadline = time.monotonic() + reply["expires_in_ms"] / 1000
        self.lost = threading.Event()


class Sidecar:
    def __init__(self, base_url, token=None, timeout=5):
        self.base_url, self.token, self.timeout = base_url.rstrip("/"), token, timeout

    def call(self, method, path, body=None):
        request = urllib.request.Request(
            self.base_url + path, method=method,
            data=None if body is None else json.dumps(body).encode())
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as e:
            error = json.load(e)
            raise SidecarError(e.code, error.get("error"), error.get("reason")) from None

    @contextlib.contextmanager
    def lease(self, lock, ttl="30s", wait="0s", node_id=None):
        body = {"ttl": ttl, "wait": wait}
        if node_id:
            body["node_id"] = node_id
        try:
            lease = Lease(self.call("POST", f"/v1/locks/{lock}/acquire", body))
        except SidecarError as e:
            if e.code != "held_elsewhere":
                raise
            yield None
            return
        done = threading.Event()

        def renew():
            while not done.wait(lease.ttl_s / 3):
                sent = time.monotonic()
                try:
                    reply = self.call("POST", f"/v1/locks/{lock}/renew", {"lease_id": lease.lease_id})
                    lease.deadline = sent + reply["expires_in_ms"] / 1000
                except SidecarError as e:
                    if e.code == "lease_lost":
                        lease.lost.set()
                        return
                except OSError:
                    pass  # the sidecar is unreachable: keep trying until the deadline
                if time.monotonic() >= lease.deadline:
                    lease.lost.set()
                    return

        renewer = threading.Thread(target=renew, daemon=True)
        renewer.start()
        try:
            yield lease
        finally:
            done.set()
            renewer.join()
            with contextlib.suppress(SidecarError, OSError):
                self.call("POST", f"/v1/locks/{lock}/release", {"lease_id": lease.lease_id})
