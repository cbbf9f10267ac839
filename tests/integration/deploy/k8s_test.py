#!/usr/bin/env python3
"""Validates deploy/k8s offline (no API server): `kubectl kustomize` renders the kustomization,
every built-in kind is checked against the Kubernetes API schema of the Python client's models
(unknown fields, wrong types, missing required fields), and the objects fit together: the Service
selects the Deployment's pods and targets the sidecar's port, the ServiceMonitor selects the
Service and scrapes /metrics with the sidecar's token Secret, the probes run `leader probe`
against the sidecar's --listen port (the kubelet cannot reach the pod's loopback).

    k8s_test.py DEPLOY_K8S_DIR        exit 77: skipped (no kubectl or python3-kubernetes)
"""
import os
import shutil
import subprocess
import sys

try:
    import yaml
    import kubernetes.client as kc
except ImportError:
    # Debian's python3-kubernetes is only visible to /usr/bin/python3.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("skip: python3 cannot import yaml and kubernetes (Debian: python3-yaml python3-kubernetes)")
    sys.exit(77)

directory = sys.argv[1]
kubectl = shutil.which("kubectl")
if kubectl is None:
    print("skip: kubectl not installed (Debian: kubernetes-client)")
    sys.exit(77)
failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


rendered = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True)
if rendered.returncode != 0:
    sys.exit("FAIL: kubectl kustomize %s: %s" % (directory, rendered.stderr))
docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)

# Built-in kinds and their models in the Python client (the API's OpenAPI schema).
MODELS = {("v1", "ServiceAccount"): "V1ServiceAccount", ("v1", "Service"): "V1Service",
          ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
          ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
          ("apps/v1", "Deployment"): "V1Deployment", ("batch/v1", "CronJob"): "V1CronJob"}
PRIMITIVES = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float),
              "object": (object,), "datetime": (str,)}


def check_schema(value, type_name, path):
    if type_name.startswith("list["):
        if not isinstance(value, list):
            return fail("%s: expected a list" % path)
        for i, v in enumerate(value):
            check_schema(v, type_name[5:-1], "%s[%d]" % (path, i))
    elif type_name.startswith("dict("):
        if not isinstance(value, dict):
            return fail("%s: expected a map" % path)
        for k, v in value.items():
            check_schema(v, type_name[type_name.index(",") + 1:-1].strip(), "%s.%s" % (path, k))
    elif type_name in PRIMITIVES:
        if not isinstance(value, PRIMITIVES[type_name]) or (
                type_name == "int" and isinstance(value, bool)):
            fail("%s: %r is not a %s" % (path, value, type_name))
    else:
        model = getattr(kc, type_name)
        if not isinstance(value, dict):
            return fail("%s: expected an object (%s)" % (path, type_name))
        fields = {json_name: name for name, json_name in model.attribute_map.items()}
        for k, v in value.items():
            if k not in fields:
                fail("%s: %s has no field %r" % (path, type_name, k))
            else:
                check_schema(v, model.openapi_types[fields[k]], "%s.%s" % (path, k))


client = kc.ApiClient()
for d in docs:
    name = "%s/%s" % (d["kind"], d.get("metadata", {}).get("name"))
    model = MODELS.get((d.get("apiVersion"), d["kind"]))
    if model is None:
        continue
    check_schema(d, model, name)
    try:  # the models' constructors refuse missing required fields
        client._ApiClient__deserialize(d, model)
    except (ValueError, TypeError) as e:
        fail("%s: %s" % (name, e))

for kind in ("ServiceAccount", "Role", "RoleBinding", "Deployment", "CronJob", "Service",
             "ServiceMonitor"):
    if kind not in by_kind:
        fail("kubectl kustomize %s renders no %s" % (directory, kind))
if failures:
    sys.exit("%d problem(s) in deploy/k8s" % len(failures))


def subset(small, big):
    return all(big.get(k) == v for k, v in small.items())


def option(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv else None


(deployment,) = by_kind["Deployment"]
pod = deployment["spec"]["template"]
(sidecar,) = [c for c in pod["spec"]["containers"] if (c.get("args") or [""])[0] == "serve"]
listen = option(sidecar["args"], "--listen")
listen_port = int(listen.rsplit(":", 1)[1])
ports = {p.get("name"): p["containerPort"] for p in sidecar.get("ports", [])}

# Probes: exec `leader probe` (ready: --ready) against the sidecar's port, within timeoutSeconds.
for probe, ready in (("readinessProbe", True), ("livenessProbe", False)):
    spec = sidecar.get(probe)
    if not spec or "exec" not in spec:
        fail("the sidecar's %s is not an exec probe: %s" % (probe, spec))
        continue
    argv = spec["exec"]["command"]
    if argv[:2] != ["leader", "probe"] or ("--ready" in argv) != ready:
        fail("%s runs %s, not leader probe%s" % (probe, argv, " --ready" if ready else ""))
    target = option(argv, "--listen") or "127.0.0.1:9464"
    if not target.startswith("127.0.0.1:") or int(target.rsplit(":", 1)[1]) != listen_port:
        fail("%s asks %s; the sidecar listens on %s" % (probe, target, listen))
    timeout = option(argv, "--timeout") or "3s"
    if not timeout.endswith("s") or float(timeout[:-1]) >= spec.get("timeoutSeconds", 1):
        fail("%s: --timeout %s is not under timeoutSeconds %s"
             % (probe, timeout, spec.get("timeoutSeconds", 1)))

# Listening beyond loopback needs --allow-remote and a token file from a Secret volume.
secrets = {v["name"]: v["secret"]["secretName"] for v in pod["spec"].get("volumes", [])
           if "secret" in v}
token_secret = None
if not listen.startswith("127.0.0.1:"):
    token_file = option(sidecar["args"], "--token-file")
    if "--allow-remote" not in sidecar["args"] or not token_file:
        fail("the sidecar listens on %s without --allow-remote --token-file" % listen)
    else:
        mounts = [m for m in sidecar.get("volumeMounts", [])
                  if token_file.startswith(m["mountPath"].rstrip("/") + "/") and m["name"] in secrets]
        if not mounts:
            fail("--token-file %s is not in a Secret volume of the sidecar" % token_file)
        else:
            token_secret = secrets[mounts[0]["name"]]

(service,) = by_kind["Service"]
if not subset(service["spec"]["selector"], pod["metadata"]["labels"]):
    fail("Service %s selects %s; the pods have %s" % (service["metadata"]["name"],
                                                      service["spec"]["selector"],
                                                      pod["metadata"]["labels"]))
for p in service["spec"]["ports"]:
    target = p.get("targetPort", p["port"])
    if ports.get(target, target) != listen_port:
        fail("Service port %s targets %s; the sidecar listens on %s" % (p.get("name"), target, listen))

(monitor,) = by_kind["ServiceMonitor"]
if monitor["apiVersion"] != "monitoring.coreos.com/v1":
    fail("ServiceMonitor apiVersion %s" % monitor["apiVersion"])
spec = monitor.get("spec", {})
if not subset(spec.get("selector", {}).get("matchLabels", {}), service["metadata"]["labels"]):
    fail("the ServiceMonitor selects %s; the Service has %s" % (spec.get("selector"),
                                                               service["metadata"]["labels"]))
service_ports = {p.get("name") for p in service["spec"]["ports"]}
if not spec.get("endpoints"):
    fail("the ServiceMonitor has no endpoints")
for e in spec.get("endpoints", []):
    unknown = set(e) - {"port", "path", "interval", "scheme", "bearerTokenSecret",
                        "scrapeTimeout", "honorLabels", "relabelings", "metricRelabelings"}
    if unknown:
        fail("ServiceMonitor endpoint fields not in monitoring.coreos.com/v1: %s" % unknown)
    if e.get("port") not in service_ports:
        fail("the ServiceMonitor scrapes port %s; the Service has %s" % (e.get("port"), service_ports))
    if e.get("path") != "/metrics":
        fail("the ServiceMonitor scrapes %s, not /metrics" % e.get("path"))
    if token_secret and e.get("bearerTokenSecret", {}).get("name") != token_secret:
        fail("the ServiceMonitor sends the token of %s; the sidecar reads %s"
             % (e.get("bearerTokenSecret"), token_secret))

if failures:
    sys.exit("%d problem(s) in deploy/k8s" % len(failures))
print("deploy/k8s: kubectl kustomize renders %d objects (%s); schema and cross-references ok"
      % (len(docs), ", ".join(sorted(by_kind))))
