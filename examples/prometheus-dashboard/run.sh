#!/usr/bin/env bash
# Demo: `leader serve` exports leader::metrics on /metrics; a real Prometheus scrapes it every
# second; the panels of the Grafana dashboard (deploy/grafana/leader.json) are evaluated through
# Prometheus' HTTP API with the dashboard's own expressions, while a shell client holds a lease
# through the sidecar.
#
# Uses $LEADER_STORE (default: a SQLite file in a temporary directory); `leader` from $PATH or the
# binary named by $LEADER; `prometheus` from $PATH. Both listen on free loopback ports.
# Run it:  bash examples/prometheus-dashboard/run.sh
set -euo pipefail
LEADER=${LEADER:-leader}
DASHBOARD=${DASHBOARD:-$(dirname "$0")/../../deploy/grafana/leader.json}
work=$(mktemp -d)
STORE=${LEADER_STORE:-sqlite://$work/leader.db}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
serve_port=$(free_port)
prom_port=$(free_port)
API=http://127.0.0.1:$serve_port

"$LEADER" serve --store "$STORE" --listen "127.0.0.1:$serve_port" --node-id sidecar-1 \
  2>"$work/serve.log" &
pids+=($!)
cat >"$work/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: leader-sidecar
    static_configs: [{targets: ["127.0.0.1:$serve_port"]}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fs "$API/healthz" >/dev/null && break; sleep 0.05; done

# A client takes a lease through the sidecar: the held gauge and the token gauge show it.
reply=$(curl -fsS -X POST -d '{"ttl": "30s", "node_id": "shell-client"}' \
  "$API/v1/locks/nightly-report/acquire")
token=$(sed 's/.*"fencing_token":\([0-9]*\).*/\1/' <<<"$reply")
echo "shell client holds nightly-report (fencing token $token)"

# Two panels of the dashboard, with its $job and $lock variables set to this job and every lock.
mapfile -t exprs < <(python3 - "$DASHBOARD" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for title in ("Leases held (all replicas)", "Fencing token per lock"):
    [expr] = [t["expr"] for p in d["panels"] if p.get("title") == title for t in p["targets"]]
    print(title + "\t" + expr.replace("$job", "leader-sidecar").replace("$lock", ".*"))
PY
)
for panel in "${exprs[@]}"; do
  title=${panel%%$'\t'*}
  value=
  for _ in $(seq 150); do  # until Prometheus has scraped the sidecar (every second)
    value=$(curl -fsS -G --data-urlencode "query=${panel#*$'\t'}" \
      "http://127.0.0.1:$prom_port/api/v1/query" 2>/dev/null |
      sed -n 's/.*"metric":{"lock":"nightly-report"},"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p')
    [ -n "$value" ] && break
    sleep 0.1
  done
  [ -n "$value" ] || { echo "no data for '$title' after 15 s" >&2; cat "$work/prometheus.log" >&2; exit 1; }
  echo "panel '$title': lock=nightly-report $value"
done
curl -fsS -X POST -d "{\"lease_id\": \"$(sed 's/.*"lease_id":"\([0-9a-f]*\)".*/\1/' <<<"$reply")\"}" \
  "$API/v1/locks/nightly-report/release" >/dev/null
echo "shell client released nightly-report"
