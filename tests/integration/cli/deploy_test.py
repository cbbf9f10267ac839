#!/usr/bin/env python3
"""Checks deploy/: every systemd unit passes `systemd-analyze verify` (with /usr/bin/leader
pointing at the binary under test), every YAML document parses and has the shape the docs promise,
and every leader command line in them uses options that `leader <command> --help` lists (a
command this binary does not have, e.g. `serve` before it is built, is reported and skipped).

    deploy_test.py DEPLOY_DIR LEADER_BINARY
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("FAIL: python3 cannot import yaml (Debian: python3-yaml)")

deploy, leader = sys.argv[1], os.path.abspath(sys.argv[2])
failures = []
helps = {}


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def options_of(command):
    """The --options `leader COMMAND --help` lists, or None when the binary lacks COMMAND."""
    if command not in helps:
        p = subprocess.run([leader, command, "--help"], capture_output=True, text=True)
        helps[command] = set(re.findall(r"--[a-z][a-z-]+", p.stdout)) if p.returncode == 0 else None
    return helps[command]


def check_command_line(argv, where):
    """argv starts after the binary: COMMAND [options...] [-- ...]."""
    if not argv:
        return fail(where + ": leader without a command")
    command, rest = argv[0], argv[1:]
    if "--" in rest:
        rest = rest[: rest.index("--")]
    known = options_of(command)
    if known is None:
        print("skip: %s uses 'leader %s', which this binary does not have" % (where, command))
        return
    for word in rest:
        option = word.split("=", 1)[0]
        if option.startswith("--") and option not in known:
            fail("%s: 'leader %s' has no option %s" % (where, command, option))


units = sorted(glob.glob(os.path.join(deploy, "**", "*.service"), recursive=True) +
               glob.glob(os.path.join(deploy, "**", "*.timer"), recursive=True))
if not units:
    fail("no systemd units under " + deploy)
verify = shutil.which("systemd-analyze")
with tempfile.TemporaryDirectory() as tmp:
    for unit in units:
        text = open(unit).read()
        for line in text.splitlines():
            if line.startswith("ExecStart="):
                argv = shlex.split(line[len("ExecStart="):])
                if argv[0] == "/usr/bin/leader":
                    check_command_line(argv[1:], os.path.basename(unit))
        shutil.copy(unit, tmp)
        with open(os.path.join(tmp, os.path.basename(unit)), "w") as f:
            f.write(text.replace("/usr/bin/leader", leader))
    if verify is None:
        print("skip: systemd-analyze not installed (Debian: systemd); units not verified")
    else:
        for unit in units:
            name = os.path.basename(unit)
            p = subprocess.run([verify, "verify", "--man=no", os.path.join(tmp, name)],
                               capture_output=True, text=True, cwd=tmp)
            complaints = [l for l in (p.stdout + p.stderr).splitlines() if name.split(".")[0] in l]
            if p.returncode != 0 or complaints:
                fail("systemd-analyze verify %s: rc %d\n%s" % (name, p.returncode,
                                                               p.stdout + p.stderr))

documents = {}
for path in sorted(glob.glob(os.path.join(deploy, "**", "*.yaml"), recursive=True)):
    if os.sep + "prometheus" + os.sep in path:  # rule files, checked by promtool (tests/metrics)
        continue
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    except yaml.YAMLError as e:
        fail("%s does not parse: %s" % (path, e))
        continue
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
            fail("%s: a document without kind/apiVersion" % path)
            continue
        documents.setdefault(d["kind"], []).append(d)

role_rules = [r for role in documents.get("Role", []) for r in role.get("rules", [])]
lease_verbs = {v for r in role_rules if "leases" in r.get("resources", [])
               and "coordination.k8s.io" in r.get("apiGroups", []) for v in r.get("verbs", [])}
if not {"get", "list", "watch", "create", "update"} <= lease_verbs:
    fail("the Role does not grant get/list/watch/create/update on coordination.k8s.io leases"
         " (watch: observers, src/stores/k8s/README.md): %s" % sorted(lease_verbs))
accounts = {a["metadata"]["name"] for a in documents.get("ServiceAccount", [])}
bound = {b["roleRef"]["name"] for b in documents.get("RoleBinding", [])}
if not bound:
    fail("no RoleBinding")

deployments = documents.get("Deployment", [])
if not deployments:
    fail("no Deployment")
for d in deployments:
    spec = d["spec"]["template"]["spec"]
    if spec.get("serviceAccountName") not in accounts:
        fail("Deployment %s runs as %s, not a ServiceAccount of rbac.yaml %s"
             % (d["metadata"]["name"], spec.get("serviceAccountName"), sorted(accounts)))
    sidecars = [c for c in spec["containers"] if (c.get("args") or [""])[0] == "serve"]
    if len(sidecars) != 1:
        fail("Deployment %s has no `leader serve` sidecar" % d["metadata"]["name"])
    for c in sidecars:
        args = c["args"]
        if "--campaign" not in args:
            fail("the sidecar does not campaign (--campaign)")
        listen = args[args.index("--listen") + 1] if "--listen" in args else ""
        if not listen.startswith("127.0.0.1:") and not (
                "--allow-remote" in args and "--token-file" in args):
            fail("the sidecar listens on %r, not loopback, without --allow-remote --token-file"
                 % listen)
        # The kubelet probes from the node, not the pod's loopback: exec `leader probe`.
        probes = [c.get(p, {}).get("exec", {}).get("command", []) for p in ("readinessProbe",
                                                                            "livenessProbe")]
        if [p[:2] for p in probes] != [["leader", "probe"]] * 2 or "--ready" not in probes[0]:
            fail("sidecar probes are %s, not leader probe --ready / leader probe" % probes)
        for p in probes:
            if p[:1] == ["leader"]:
                check_command_line(p[1:], "Deployment sidecar probe")
        check_command_line(args, "Deployment sidecar")
for job in documents.get("CronJob", []):
    for c in job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]:
        argv = c.get("command", [])
        if argv and argv[0] == "leader":
            check_command_line(argv[1:], "CronJob " + job["metadata"]["name"])

if failures:
    sys.exit("%d problem(s) in deploy/" % len(failures))
print("deploy: %d units, %s YAML documents: ok" % (len(units),
                                                   sum(len(v) for v in documents.values())))
