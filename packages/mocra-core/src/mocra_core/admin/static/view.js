// Showing one JobSnapshot: numbers, queues, domains, statuses and drops, workers, cluster.

import { bytes, count, duration, fillTable, rate, setText, total } from "./render.js";

const TOP_DOMAINS = 10;

function ago(now, then) {
  if (!then) return "-";
  return `${Math.max(0, now - then).toFixed(1)}s ago`;
}

function badge(id, text, kind) {
  const el = document.getElementById(id);
  el.textContent = text;
  el.dataset.kind = kind ?? text;
}

/** The job's dead letters now: the queues' dead counts (what a replay would put back). */
export function deadNow(snapshot) {
  return Object.values(snapshot.queues ?? {}).reduce((sum, q) => sum + (q.dead ?? 0), 0);
}

/** Fill the page from `snapshot` with `rates` (RateTracker.latest(), or null). */
export function showSnapshot(snapshot, rates) {
  const stats = snapshot.stats ?? {};
  const now = snapshot.time || Date.now() / 1000;
  badge("state", snapshot.state);
  badge("control", snapshot.control);
  setText("pages-rate", rates ? rate(rates.pages) : "-");
  setText("items-rate", rates ? rate(rates.items) : "-");
  setText("pages-total", count(stats.responses));
  setText("items-total", count(stats.items));
  setText("requests-total", count(stats.requests));
  setText("errors-total", count(stats.errors));
  setText("retries-total", count(stats.retries));
  setText("drops-total", count(total(stats.dropped)));
  setText("dead-total", count(deadNow(snapshot)));
  document.getElementById("dead-total").title = `${count(stats.dead_lettered)} dead-lettered so far`;
  setText("bytes-total", bytes(stats.bytes));
  setText("workers-total", count((snapshot.workers ?? []).length));
  setText("elapsed", duration(stats.elapsed));
  setText("updated", `at ${new Date(now * 1000).toLocaleTimeString()}`);

  const queues = Object.entries(snapshot.queues ?? {}).sort(([a], [b]) => a.localeCompare(b));
  fillTable(
    "queues",
    queues.map(([stage, q]) => [stage, q.pending ?? 0, { text: q.dead ?? 0, className: q.dead ? "num bad" : "num" }]),
    "no queues",
  );

  const domainCounts = Object.keys(stats.domains ?? {}).length ? stats.domains : (snapshot.run?.domains ?? {});
  const domains = Object.entries(domainCounts).sort((a, b) => b[1] - a[1]).slice(0, TOP_DOMAINS);
  const most = domains.length ? domains[0][1] : 1;
  fillTable("domains", domains.map(([domain, n]) => [domain, n, { bar: n / most }]), "no pages yet");

  const outcomes = [
    ...Object.entries(stats.status ?? {}).sort().map(([code, n]) => ["status", code, n]),
    ...Object.entries(stats.dropped ?? {}).sort((a, b) => b[1] - a[1]).map(([why, n]) => ["dropped", why, n]),
    ...Object.entries(stats.proxy_failures ?? {}).map(([proxy, n]) => ["proxy failure", proxy, n]),
  ];
  fillTable("outcomes", outcomes, "nothing yet");

  fillTable(
    "workers",
    (snapshot.workers ?? []).map((w) => [
      w.id,
      w.host,
      { text: String(w.pid), className: "num" },
      w.state,
      w.responses ?? 0,
      w.items ?? 0,
      { text: rate(w.pages_per_second), className: "num" },
      { text: ago(now, w.seen), className: "num" },
    ]),
    "no live worker",
  );

  const cluster = snapshot.cluster ?? [];
  document.getElementById("cluster-section").hidden = cluster.length === 0;
  fillTable(
    "cluster",
    cluster.map((n) => [
      n.id,
      n.role,
      n.term ?? 0,
      { text: ago(now, n.heartbeat), className: "num" },
      (n.partitions ?? []).join(", ") || "-",
    ]),
  );
}

/** Empty the page (no job, or another job is loading). */
export function clearView() {
  for (const id of ["pages-rate", "items-rate", "pages-total", "items-total", "requests-total", "errors-total",
    "retries-total", "drops-total", "dead-total", "bytes-total", "workers-total", "elapsed", "updated"]) {
    setText(id, id === "updated" ? "" : "-");
  }
  badge("state", "-", "none");
  badge("control", "-", "none");
  for (const id of ["queues", "domains", "outcomes", "workers", "cluster", "dlq"]) fillTable(id, [], "");
  document.getElementById("cluster-section").hidden = true;
}
