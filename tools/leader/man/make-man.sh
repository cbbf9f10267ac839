#!/usr/bin/env bash
# Generates the leader(1) man page from the binary's own --help texts with help2man: the main
# --help and --version, plus one section per subcommand from `leader <command> --help`.
#   make-man.sh LEADER_BINARY OUTPUT.1
set -euo pipefail
leader=$1
out=$2
include=$(mktemp)
trap 'rm -f "$include"' EXIT
{
  echo "[COMMANDS]"
  # Every subcommand the binary has, in the order of its --help.
  for command in $("$leader" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }'); do
    "$leader" "$command" --help > /dev/null 2>&1 || continue
    echo ".SS \"leader $command\""
    echo ".nf"
    # roff: a leading dot or quote would start a request; backslashes are escapes.
    "$leader" "$command" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
  done
  cat << 'SECTIONS'
[FILES]
.TP
.I /var/lib/leader/leader.db
The per-host SQLite store used without \-\-store or $LEADER_STORE (when writable; else
$XDG_STATE_HOME/leader/leader.db).
[ENVIRONMENT]
.TP
.B LEADER_STORE
The store URI when \-\-store is not given.
.TP
.B LEADER_LOG_FORMAT
text or json, as \-\-log-format.
[SEE ALSO]
docs/cli.md in the leader sources; the deploy/ directory for systemd units and Kubernetes
manifests.
SECTIONS
} > "$include"
help2man --no-info --no-discard-stderr --section 1 \
  --name "run a command once across replicas, and inspect leader locks" \
  --include "$include" --output "$out" "$leader"
