// The mocra dashboard: pick a job, follow its snapshot stream, steer it (pause, resume, stop, replay).

import { ApiError, apiKey, getJson, jobPath, postJson, readEvents } from "./api.js";
import { LineChart } from "./chart.js";
import { RateTracker, WINDOW_SECONDS } from "./rates.js";
import { fillTable } from "./render.js";
import { clearView, deadNow, showSnapshot } from "./view.js";

const JOBS_EVERY_MS = 5000;
const STREAM_INTERVAL_S = 1;

const $ = (id) => document.getElementById(id);
const rates = new RateTracker();
const charts = [
  new LineChart($("throughput-chart"), $("throughput-legend"), [
    { key: "pages", label: "pages/s", color: "--pages" },
    { key: "items", label: "items/s", color: "--items" },
  ], WINDOW_SECONDS),
  new LineChart($("errors-chart"), $("errors-legend"), [
    { key: "errors", label: "errors/s", color: "--errors" },
    { key: "retries", label: "retries/s", color: "--retries" },
    { key: "dead", label: "dead letters/s", color: "--dead" },
  ], WINDOW_SECONDS),
];

let job = "";
let stream = null; // the AbortController of the current stream
let snapshot = null;
let deadSeen = -1;
let pending = null; // a write waiting for the API key

// ---- messages ------------------------------------------------------------------------------------------------

function say(text, kind = "info") {
  const el = $("message");
  el.textContent = text;
  el.dataset.kind = kind;
  el.hidden = !text;
}

function live(on) {
  const el = $("live");
  el.textContent = on ? "live" : "offline";
  el.dataset.kind = on ? "live" : "offline";
  el.title = on ? "live stream: connected" : "live stream: not connected";
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

// ---- the job picker ------------------------------------------------------------------------------------------

function jobFromHash() {
  const match = /(?:^#|&)job=([^&]*)/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : "";
}

async function loadJobs() {
  let jobs;
  try {
    jobs = await getJson("api/v1/jobs");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      say(`Reading this node needs the API key (${error.message}): type it above and press Use key.`, "error");
    } else {
      say(`Cannot list the jobs: ${error.message}`, "error");
    }
    return;
  }
  const select = $("job");
  const names = jobs.map((j) => j.job);
  const wanted = [job, jobFromHash()].find((name) => name && names.includes(name));
  const running = jobs.find((j) => j.state === "active" || j.state === "ready");
  const chosen = wanted ?? running?.job ?? names[0] ?? "";
  select.replaceChildren(
    ...(jobs.length
      ? jobs.map((j) => new Option(`${j.job} (${j.state})`, j.job, false, j.job === chosen))
      : [new Option("(no jobs yet)", "")]),
  );
  select.disabled = !jobs.length;
  if (!jobs.length) say("No job on this node yet: the page follows the first one that starts.");
  else if ($("message").textContent.startsWith("No job")) say("");
  if (chosen !== job || (chosen && !stream)) choose(chosen);
}

function choose(name) {
  job = name;
  stream?.abort();
  stream = null;
  snapshot = null;
  deadSeen = -1;
  rates.reset();
  clearView();
  for (const chart of charts) chart.update([], 0);
  updateButtons();
  if (!name) return;
  history.replaceState(null, "", `#job=${encodeURIComponent(name)}`);
  follow(name);
}

// ---- the snapshot stream -------------------------------------------------------------------------------------

async function follow(name) {
  const controller = new AbortController();
  stream = controller;
  const { signal } = controller;
  let delay = 1000;
  while (!signal.aborted) {
    try {
      await readEvents(`${jobPath(name, "events")}?interval=${STREAM_INTERVAL_S}`, signal, (event, data) => {
        if (event !== "snapshot" || signal.aborted) return;
        live(true);
        delay = 1000;
        onSnapshot(JSON.parse(data));
      });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError) {
        say(`The stream of ${name} was refused: ${error.message}`, "error");
        if (error.status === 401 || error.status === 404) {
          if (stream === controller) stream = null; // the key form (401) or the next job list (404) goes on
          return;
        }
      }
    }
    live(false);
    await sleep(delay, signal);
    delay = Math.min(delay * 2, 10000);
  }
}

function onSnapshot(next) {
  snapshot = next;
  const time = next.time || Date.now() / 1000;
  const latest = rates.add(time, next.stats ?? {});
  showSnapshot(next, latest);
  for (const chart of charts) chart.update(rates.points, time);
  updateButtons();
  updateTopics(Object.keys(next.queues ?? {}));
  const dead = deadNow(next);
  if (dead !== deadSeen) {
    deadSeen = dead;
    loadDeadLetters();
  }
}

// ---- control -------------------------------------------------------------------------------------------------

function updateButtons() {
  const over = !snapshot || snapshot.state === "stopped" || snapshot.state === "failed";
  const control = snapshot?.control;
  $("pause").disabled = over || control !== "running";
  $("resume").disabled = over || control !== "paused";
  $("stop").disabled = over || control === "stopping";
}

async function write(label, path, body, done) {
  if (!apiKey.get()) {
    pending = { label, path, body, done };
    say(`${label} needs the API key: type it in the API key field and press Use key.`, "error");
    $("key").focus();
    return;
  }
  try {
    done(await postJson(path, body));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      pending = { label, path, body, done };
      say(`${label}: the API key was refused (401: ${error.message}). Type the right key.`, "error");
      $("key").focus();
    } else if (error instanceof ApiError && error.status === 403) {
      say(`${label} is not allowed (403: ${error.message}).`, "error");
    } else {
      say(`${label} failed: ${error.message}`, "error");
    }
  }
}

function control(action, label) {
  const name = job;
  write(label, jobPath(name, action), {}, (answer) => {
    if (snapshot && name === job) {
      snapshot.control = answer.control;
      $("control").textContent = answer.control;
      $("control").dataset.kind = answer.control;
      updateButtons();
    }
    say(`${label}: ${name} is ${answer.control}.`);
  });
}

// ---- dead letters --------------------------------------------------------------------------------------------

function updateTopics(topics) {
  const select = $("dlq-topic");
  const have = [...select.options].map((o) => o.value).slice(1);
  if (have.join() === [...topics].sort().join()) return;
  const chosen = select.value;
  select.replaceChildren(
    new Option("all stages", ""),
    ...[...topics].sort().map((t) => new Option(t, t, false, t === chosen)),
  );
}

async function loadDeadLetters() {
  if (!job) return;
  const name = job;
  const query = new URLSearchParams({ limit: "100" });
  if ($("dlq-topic").value) query.set("topic", $("dlq-topic").value);
  let letters;
  try {
    letters = await getJson(`${jobPath(name, "dlq")}?${query}`);
  } catch (error) {
    say(`Cannot read the dead letters: ${error.message}`, "error");
    return;
  }
  if (name !== job) return;
  fillTable(
    "dlq",
    letters.map((f) => [
      f.topic,
      { text: f.url, className: "url", title: f.url },
      f.attempt,
      { text: f.reason, className: "reason", title: f.reason },
      { text: f.id, className: "mono" },
    ]),
    "no dead letters",
  );
  $("dlq-replay").disabled = letters.length === 0;
}

function replay() {
  const topic = $("dlq-topic").value;
  const name = job;
  write("Replay", jobPath(name, "dlq/replay"), topic ? { topics: [topic] } : {}, (answer) => {
    say(`Replay: ${answer.replayed} dead letter(s) of ${name} went back to their queues.`);
    loadDeadLetters();
  });
}

// ---- wiring --------------------------------------------------------------------------------------------------

function wire() {
  $("job").addEventListener("change", (event) => choose(event.target.value));
  $("pause").addEventListener("click", () => control("pause", "Pause"));
  $("resume").addEventListener("click", () => control("resume", "Resume"));
  $("stop").addEventListener("click", () => {
    if (confirm(`Stop ${job}? Every worker drains and its run ends.`)) control("stop", "Stop");
  });
  $("dlq-refresh").addEventListener("click", loadDeadLetters);
  $("dlq-topic").addEventListener("change", loadDeadLetters);
  $("dlq-replay").addEventListener("click", replay);
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    apiKey.set(key);
    $("key").value = "";
    $("key").placeholder = key ? "key set for this tab" : "needed to steer the job";
    say(key ? "API key set for this tab." : "");
    const waiting = pending;
    pending = null;
    if (waiting && key) write(waiting.label, waiting.path, waiting.body, waiting.done);
    if (!stream && job) follow(job);
    if (!job) loadJobs();
  });
  $("key-forget").addEventListener("click", () => {
    apiKey.set("");
    $("key").placeholder = "needed to steer the job";
    say("API key forgotten.");
  });
  if (apiKey.get()) $("key").placeholder = "key set for this tab";
}

wire();
clearView();
updateButtons();
loadJobs();
setInterval(loadJobs, JOBS_EVERY_MS);
