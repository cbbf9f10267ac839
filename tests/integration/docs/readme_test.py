#!/usr/bin/env python3
"""Checks what README.md and the docs claim about the tree: the README opens with the two commands
(CI runs the second), its synopsis names every subcommand `leader --help` lists, the stores tested
only against a double say so, every example directory has a README and a row in the README's
table, and every relative link of README.md, docs/*.md and the examples' READMEs resolves.

    readme_test.py SOURCE_DIR LEADER_BINARY
"""
import glob
import os
import re
import subprocess
import sys

root, leader = sys.argv[1], sys.argv[2]
failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def read(path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


readme = read("README.md")

# The first code block holds the two commands, as they are (CI and new users type them).
first = re.search(r"^```\w*\n(.*?)^```", readme, re.S | re.M)
commands = [l for l in (first.group(1) if first else "").splitlines()
            if l.strip() and not l.lstrip().startswith("#")]
expected = ["scripts/install-deps.sh --cli && scripts/build.sh --cli && scripts/demo.sh",
            "scripts/test.sh"]
if commands != expected:
    fail("README's first code block is not the two commands %s: %s" % (expected, commands))

# Every subcommand of `leader --help` in the synopsis (a code block line starting `leader NAME`).
help_text = subprocess.run([leader, "--help"], capture_output=True, text=True).stdout
section = help_text.split("Subcommands:", 1)[1] if "Subcommands:" in help_text else ""
subcommands = re.findall(r"^  (\w+)\s", section, re.M)
if not subcommands:
    fail("no subcommands found in `leader --help`:\n" + help_text)
blocks = "\n".join(re.findall(r"^```\w*\n(.*?)^```", readme, re.S | re.M))
for name in subcommands:
    if not re.search(r"^leader %s\b" % name, blocks, re.M):
        fail("README's synopsis does not name `leader %s` (listed by leader --help)" % name)

# The stores tested only against a double say so in their row of the store table.
for store in ("MongoDB", "Consul", "Kubernetes Lease"):
    row = re.search(r"^\| %s \|.*$" % re.escape(store), readme, re.M)
    if not row or "tested against a double, not against a real server" not in row.group(0):
        fail("README's %s row does not say it is tested against a double, not a real server"
             % store)

# Every example has a README and a row in the README's examples table.
for d in sorted(glob.glob(os.path.join(root, "examples", "*", ""))):
    name = os.path.basename(os.path.dirname(d))
    if not os.path.exists(os.path.join(d, "README.md")):
        fail("examples/%s has no README.md" % name)
    if "](examples/%s)" % name not in readme:
        fail("examples/%s is not in README's examples table" % name)

# Relative links resolve (code blocks aside).
docs = ["README.md"] + sorted(os.path.relpath(p, root) for p in
                              glob.glob(os.path.join(root, "docs", "*.md")) +
                              glob.glob(os.path.join(root, "examples", "*", "README.md")))
for doc in docs:
    text = re.sub(r"^```.*?^```", "", read(doc), flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path = os.path.normpath(os.path.join(root, os.path.dirname(doc), target))
        if not os.path.exists(path):
            fail("%s links to %s, which does not exist" % (doc, target))

if failures:
    sys.exit(1)
print("ok: README opens with the two commands, names %d subcommands (%s), says which stores are "
      "tested against a double; %d examples have a README and a row; links of %d documents resolve"
      % (len(subcommands), " ".join(subcommands),
         len(glob.glob(os.path.join(root, "examples", "*", ""))), len(docs)))
