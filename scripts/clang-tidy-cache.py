#!/usr/bin/env python3
"""The clang-tidy results cache of scripts/ci-lint.sh (docs/lint.md, "The cache").

A unit (a source file of compile_commands.json, with all its compile commands) is clean-cached
when its key is a line of the cache file (.ci/clang-tidy-clean.txt). The key is a SHA-256 of:
  - the clang-tidy binary: `clang-tidy --version` without its "Host CPU" line, and the Debian
    versions of the packages that make it (its binary, libraries and clang's own headers);
  - the arguments ci-lint.sh gives it (header filter, warnings as errors), checkout-independent;
  - every .clang-tidy from the unit's folder up to the checkout's root (path and content);
  - each compile command of the unit, normalized: the checkout and the build dir replaced by
    placeholders, -o and -g* dropped, the -O flags reduced to the optimization class they give
    the preprocessor (-O0, -O for -O1/-O2/-O3, -Os/-Oz, -Ofast kept);
  - the path and content of every file the unit reads: the dependencies the build recorded
    (`ninja -t deps`, the compiler's own list) plus the files clang read that the build did not
    list ("extras", found from clang-tidy's -H output at the run that found the unit clean and
    kept on the unit's cache line), clang's own headers excepted (the package versions cover them).
So a key changes, and the unit is checked again, whenever anything the analysis reads changes;
a stale cache costs time, never a finding. A unit without recorded dependencies (not built yet, a
build dir that is not Ninja) is always checked, unless its cache line lists every file clang read
(the tests/package units, which the build does not compile: all their files are extras).

  plan   BUILD_DIR CACHE ARGS  -> prints "check <file>" or "cached <file>" per unit
  record BUILD_DIR CACHE ARGS RESULTS OUT -> writes OUT, the cache after this run
RESULTS holds, per checked unit N (the index in the plan's check list): N.file, N.start (ns,
before clang-tidy started), N.rc, N.out (stdout), N.err (stderr with -H's include lines).
A unit is recorded clean only when clang-tidy exited 0 with no finding and no file it read was
modified after its check started (other people edit the tree while lint runs).
"""

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
HEADER = """\
# clang-tidy results cache (scripts/ci-lint.sh, docs/lint.md "The cache"): one line per translation
# unit found clean, "<key> <unit> [<file read that the build's dependencies do not list>...]".
# Refresh (after a build): LINT_TIDY_EXCLUDE= scripts/ci-lint.sh --refresh-cache. A unit whose key
# is not here is checked again, so a stale line costs time, never a finding.
"""


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def tool_fingerprint():
    version = run(["clang-tidy", "--version"]).stdout
    lines = [l.strip() for l in version.splitlines() if l.strip() and "Host CPU" not in l]
    major = re.search(r"version (\d+)", version)
    if major and run(["sh", "-c", "command -v dpkg-query"]).returncode == 0:
        m = major.group(1)
        pkgs = [f"clang-tidy-{m}", f"libclang-cpp{m}", f"libllvm{m}", f"libclang-common-{m}-dev"]
        q = run(["dpkg-query", "-W", "-f=${Package} ${Version}\\n"] + pkgs)
        lines += sorted(q.stdout.split("\n"))
    return "\n".join(lines), (f"/usr/lib/llvm-{major.group(1)}/" if major else None)


class Paths:
    def __init__(self, build_dir):
        self.build = os.path.realpath(build_dir)

    def norm(self, path, base=None):
        """A path as the key sees it: the checkout and the build dir as placeholders."""
        p = os.path.normpath(os.path.join(base or self.build, path))
        for real, name in ((self.build, "${BUILD}"), (ROOT, "${ROOT}")):
            if p == real or p.startswith(real + "/"):
                return name + p[len(real):]
        return p

    def real(self, normed):
        return normed.replace("${BUILD}", self.build).replace("${ROOT}", ROOT)

    def text(self, s):
        for real, name in ((self.build, "${BUILD}"), (ROOT, "${ROOT}")):
            s = s.replace(real, name).replace(ere(real), name)  # also as the header filter has it
        return s


def ere(text):  # a POSIX ERE literal, as ci-lint.sh writes the checkout in its header filter
    return "".join("[" + c + "]" if c in ".[]()*+?{}|^$" else c for c in text)


def opt_class(flag):
    level = flag[2:]
    return "-O" if level in ("", "1", "2", "3") else flag  # -O0, -Os, -Oz, -Ofast, -Og kept


def normalize_command(entry, paths):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, opt, skip = [], None, False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
        elif a.startswith("-o") and len(a) > 2:
            pass
        elif a.startswith("-g"):
            pass
        elif re.fullmatch(r"-O\w*", a):
            opt = opt_class(a)
        else:
            out.append(paths.text(a))
    if opt:
        out.append(opt)
    return " ".join(shlex.quote(a) for a in out)


def output_of(entry):
    if "output" in entry:
        return entry["output"]
    args = entry.get("arguments") or shlex.split(entry["command"])
    for i, a in enumerate(args):
        if a == "-o" and i + 1 < len(args):
            return args[i + 1]
    return None


def preprocessed_deps(entry):
    """The dependencies of an object the build did not make (CI does not build the benchmarks):
    the compiler's own list, as its -MD would have written it at the build (-M: the same list,
    system headers included), from the unit's compile command without compiling. None when the
    compiler fails (then the unit has no key and is checked)."""
    args = list(entry.get("arguments") or shlex.split(entry["command"]))
    cmd, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MT", "-MF", "-MQ"):
            skip = True
        elif a in ("-c", "-MD", "-MMD"):
            pass
        else:
            cmd.append(a)
    res = subprocess.run(cmd + ["-M"], cwd=entry["directory"], capture_output=True, text=True)
    if res.returncode != 0:
        return None
    rule = res.stdout.replace("\\\n", " ")
    _, _, listed = rule.partition(": ")
    return [p.replace("\\ ", " ") for p in re.split(r"(?<!\\) +", listed.strip()) if p]


def ninja_deps(build_dir):
    """{object path as ninja names it: [dependency paths]} (empty without a Ninja build)."""
    if not os.path.exists(os.path.join(build_dir, ".ninja_deps")):
        return {}
    res = run(["ninja", "-C", build_dir, "-t", "deps"])
    deps, current = {}, None
    for line in res.stdout.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            m = re.match(r"(.*): #deps \d+, deps mtime \d+ \((\w+)\)", line)
            current = None
            if m and m.group(2) == "VALID":
                current = deps.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line.strip())
    return deps


class Keys:
    def __init__(self, build_dir, tidy_args):
        self.paths = Paths(build_dir)
        self.tool, self.tool_dir = tool_fingerprint()
        self.args = self.paths.text(tidy_args)
        self.file_hashes = {}
        db = json.load(open(os.environ.get("LINT_TIDY_DB") or
                            os.path.join(build_dir, "compile_commands.json")))
        self.deps = ninja_deps(build_dir)
        self.units = {}  # real path -> [entries], in the database's order
        for e in db:
            path = os.path.normpath(os.path.join(e["directory"], e["file"]))
            self.units.setdefault(path, []).append(e)

    def file_hash(self, normed):
        if normed not in self.file_hashes:
            try:
                with open(self.paths.real(normed), "rb") as f:
                    data = f.read()
                if normed.startswith("${BUILD}/"):  # generated (a unity batch names the sources)
                    data = self.paths.text(data.decode(errors="replace")).encode()
                self.file_hashes[normed] = hashlib.sha256(data).hexdigest()
            except OSError:
                self.file_hashes[normed] = "missing"
        return self.file_hashes[normed]

    def configs(self, unit):
        d, found = os.path.dirname(unit), []
        while d == ROOT or d.startswith(ROOT + "/"):
            if os.path.isfile(os.path.join(d, ".clang-tidy")):
                found.append(os.path.join(d, ".clang-tidy"))
            d = os.path.dirname(d)
        return [self.paths.norm(p) for p in found]

    def recorded_deps(self, unit):
        """The build's dependencies of every object of the unit (normalized), or None."""
        result = set()
        for e in self.units[unit]:
            out = output_of(e)
            if out is None:
                return None
            obj = os.path.relpath(os.path.join(e["directory"], out), self.paths.build)
            listed = self.deps.get(obj, self.deps.get(out))
            if not listed and os.environ.get("LINT_PREPROCESS_DEPS") == "1":
                listed = preprocessed_deps(e)
            if not listed:
                return None
            result.update(self.paths.norm(p, e["directory"]) for p in listed)
        return result

    def key(self, unit, extras):
        deps = self.recorded_deps(unit)
        if deps is None:  # not built here: only what clang read at the clean run, if recorded
            if not extras:
                return None
            deps = set()
        files = sorted(deps | set(extras) | {self.paths.norm(unit)} | set(self.configs(unit)))
        h = hashlib.sha256()
        h.update(("tool\n" + self.tool + "\nargs " + self.args + "\n").encode())
        for e in sorted(normalize_command(e, self.paths) for e in self.units[unit]):
            h.update(("cmd " + e + "\n").encode())
        for f in files:
            h.update(("file " + f + " " + self.file_hash(f) + "\n").encode())
        return h.hexdigest()


def read_cache(path):
    """{normalized unit: (key, [extras])}"""
    cache = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) >= 2 and not line.startswith("#"):
                cache["${ROOT}/" + parts[1]] = (parts[0], parts[2:])
    return cache


def main():
    mode, build_dir, cache_path, tidy_args = sys.argv[1:5]
    units = sys.stdin.read().split()  # the selected units (real paths)
    keys = Keys(build_dir, tidy_args)
    cache = read_cache(cache_path)
    if mode == "plan":
        for u in units:
            key, extras = cache.get(keys.paths.norm(u), (None, []))
            hit = key is not None and keys.key(u, extras) == key
            print(("cached " if hit else "check ") + u)
        return
    results, out_path = sys.argv[5:7]
    checked, skipped = {}, []
    for name in os.listdir(results):
        if name.endswith(".file"):
            n = name[:-5]
            checked[open(os.path.join(results, name)).read().strip()] = n
    selected = {keys.paths.norm(u) for u in units}
    lines = [(nu, key, extras) for nu, (key, extras) in cache.items()  # other units: kept
             if nu not in selected and os.path.exists(keys.paths.real(nu))]
    for u in units:
        nu = keys.paths.norm(u)
        if u not in checked:  # a cache hit: keep its line
            if nu in cache:
                lines.append((nu, cache[nu][0], cache[nu][1]))
            continue
        base = os.path.join(results, checked[u])
        if not os.path.exists(base + ".rc"):  # not finished (an interrupted run)
            continue
        rc = open(base + ".rc").read().strip()
        out = open(base + ".out", errors="replace").read()
        if rc != "0" or re.search(r"(warning|error):", out):
            continue
        start = int(open(base + ".start").read())
        read = set()
        for line in open(base + ".err", errors="replace"):
            m = re.match(r"\.+ (\S.*)$", line.rstrip("\n"))
            if m:
                read.add(os.path.normpath(m.group(1)))
        deps = keys.recorded_deps(u)
        if deps is None:  # not built here (tests/package): every file clang read is an extra
            deps = set()
        extras = sorted(p for p in (keys.paths.norm(r) for r in read)
                        if p not in deps and not (keys.tool_dir and p.startswith(keys.tool_dir)))
        key = keys.key(u, extras)  # hashes the files first: a change after this point is seen below
        files = deps | set(extras) | {nu} | set(keys.configs(u))
        changed = [f for f in files
                   if os.path.exists(keys.paths.real(f)) and
                   os.stat(keys.paths.real(f)).st_mtime_ns >= start]
        if changed:
            skipped.append(f"{nu} ({changed[0]} changed during its check)")
            continue
        lines.append((nu, key, extras))
    with open(out_path, "w") as f:
        f.write(HEADER)
        for nu, key, extras in sorted(lines):
            f.write(" ".join([key, nu[len("${ROOT}/"):]] + extras) + "\n")
    for s in skipped:
        print("not cached: " + s)


if __name__ == "__main__":
    main()
