#include "serve_page.hpp"

namespace leader::cli {

// A bearer token (when the sidecar requires one) is read from the URL fragment
// (http://host:port/#token=...), which browsers never send to the server.
const char* status_page_html() {
  return R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>leader serve</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; background: #fafafa; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
h2 { font-size: 1.05em; margin: 1.5em 0 .4em; }
#meta { color: #666; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
th { background: #f0f0f3; font-weight: 600; }
.held { color: #0a7d28; font-weight: 600; }
.free { color: #777; }
.err { color: #b00020; font-weight: 600; }
.mono { font-family: ui-monospace, monospace; }
.holder { white-space: nowrap; }
</style>
</head>
<body>
<h1>leader serve</h1>
<div id="meta">loading...</div>
<div id="error" class="err"></div>
<h2>Locks</h2>
<table id="locks">
<thead><tr><th>lock</th><th>state</th><th>holders (node, slot, fencing token, expires in)</th>
<th>slots</th><th>here</th></tr></thead>
<tbody></tbody>
</table>
<h2>Recent history (this sidecar)</h2>
<table id="history">
<thead><tr><th>lock</th><th>node</th><th>fencing token</th><th>slot</th><th>started</th>
<th>ended</th><th>outcome</th></tr></thead>
<tbody></tbody>
</table>
<script>
"use strict";
const token = (location.hash.match(/token=([^&]+)/) || [])[1];
const headers = token ? { Authorization: "Bearer " + decodeURIComponent(token) } : {};
let fetchedAt = 0;
let locks = [];

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function seconds(ms) {
  return ms <= 0 ? "expired" : (ms / 1000).toFixed(1) + " s";
}

function renderLocks() {
  const body = document.querySelector("#locks tbody");
  body.replaceChildren();
  const elapsed = Date.now() - fetchedAt;
  for (const l of locks) {
    const row = document.createElement("tr");
    row.dataset.lock = l.lock;
    cell(row, l.lock, "mono");
    cell(row, l.held ? "held" : "free", l.held ? "held" : "free");
    const holders = cell(row, "");
    for (const h of l.holders) {
      const div = document.createElement("div");
      div.className = "holder";
      div.dataset.token = h.fencing_token;
      div.textContent = h.node_id + "  slot " + h.slot + "  token " + h.fencing_token +
        "  expires in " + seconds(h.expires_in_ms - elapsed);
      holders.appendChild(div);
    }
    cell(row, l.slots ? (l.slots - l.available) + " of " + l.slots + " held" : "");
    const here = [];
    if (l.campaign) here.push("campaign");
    if (l.sidecar_leases.length) here.push(l.sidecar_leases.length + " API lease(s)");
    cell(row, here.join(", "));
    body.appendChild(row);
  }
}

function renderHistory(records) {
  const body = document.querySelector("#history tbody");
  body.replaceChildren();
  for (const r of records.slice(-50).reverse()) {
    const row = document.createElement("tr");
    cell(row, r.lock, "mono");
    cell(row, r.node_id);
    cell(row, String(r.fencing_token));
    cell(row, String(r.slot));
    cell(row, r.started);
    cell(row, r.ended);
    cell(row, r.outcome + (r.error ? ": " + r.error : ""));
    body.appendChild(row);
  }
}

async function getJson(path) {
  const res = await fetch(path, { headers, cache: "no-store" });
  const body = await res.json();
  if (!res.ok) throw new Error(path + ": HTTP " + res.status + " " + (body.reason || ""));
  return body;
}

async function refresh() {
  try {
    const [l, h] = await Promise.all([getJson("/v1/locks"), getJson("/v1/history")]);
    locks = l.locks;
    fetchedAt = Date.now();
    document.getElementById("meta").textContent =
      "node " + l.node_id + " \u00b7 store " + l.store + " \u00b7 updated " + l.now;
    document.getElementById("error").textContent = "";
    renderLocks();
    renderHistory(h.records);
  } catch (e) {
    document.getElementById("error").textContent = String(e.message || e);
  }
}

refresh();
setInterval(refresh, 2000);
setInterval(renderLocks, 250);
</script>
</body>
</html>
)HTML";
}

}  // namespace leader::cli
