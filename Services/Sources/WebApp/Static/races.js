// SwiftKart's race page: the schedule (ListRaces), then one race followed live over the
// server-streaming WatchRace: a map drawn from the karts' own positions, a leaderboard, and a
// connection indicator. The stream is retried with backoff when it fails; it ends for good
// when the race is over.
import { apiBase, backoffDelay, createClient, sleep } from "./connect.js";

const SERVICE = "SwiftKartService";
const EVENT_TYPES = ["RACE_EVENT_TYPE_KART_LOCATIONS", "RACE_EVENT_TYPE_STANDINGS"];
// Errors that another attempt cannot fix.
const FINAL_CODES = new Set(["not_found", "invalid_argument", "unimplemented", "unauthenticated", "permission_denied"]);
// The track is never sent: it is traced from where the karts have been. A lap's worth of
// points draws it; older points only cost memory and drawing time.
const TRAIL_LIMIT = 4000;

const client = createClient({ baseUrl: apiBase() });
const $ = (id) => document.getElementById(id);

let current = null; // {race, controller} of the race being watched
const karts = new Map(); // kart number → {number, latitude, longitude, recordedAt}
let trail = []; // [latitude, longitude] ring buffer
let trailNext = 0;
let locationUpdates = 0;
let drawPending = false;

function setStatus(state, detail = "") {
  $("status").dataset.state = state;
  $("status").textContent = state;
  $("status-detail").textContent = detail;
}

// A table row from cells that are Nodes, plain text, or {text, num} (numbers, right-aligned).
function row(cells, attributes = {}) {
  const tr = document.createElement("tr");
  for (const [name, value] of Object.entries(attributes)) tr.setAttribute(name, value);
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.append(cell);
    else {
      td.textContent = cell.text ?? cell;
      if (cell.num) td.className = "num";
    }
    tr.append(td);
  }
  return tr;
}

// ---- Schedule ------------------------------------------------------------------------------

async function loadSchedule() {
  let races = [];
  try {
    races = (await client.unary(SERVICE, "ListRaces", { limit: 100 })).races || [];
  } catch (error) {
    $("schedule-error").hidden = false;
    $("schedule-error").textContent = `Could not load the schedule: ${error.message}`;
  }
  const rows = races.map((race) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Watch";
    button.addEventListener("click", () => watch(race));
    const start = race.startTime ? new Date(race.startTime).toLocaleString() : "";
    return row([race.name || "", race.championship || "", race.location || "", start, { text: race.laps || 0, num: true }, button],
               { "data-race": race.name || "" });
  });
  $("schedule").replaceChildren(...rows);
  return races;
}

// ---- Following a race ----------------------------------------------------------------------

function watch(race) {
  if (current) current.controller.abort();
  current = { race, controller: new AbortController() };
  const url = new URL(location.href);
  url.searchParams.set("race", race.name);
  history.replaceState(null, "", url);
  for (const tr of $("schedule").children) tr.classList.toggle("selected", tr.dataset.race === race.name);
  $("live").hidden = false;
  $("race-name").textContent = race.name;
  $("race-where").textContent = race.location ? `— ${race.location}${race.laps ? `, ${race.laps} laps` : ""}` : "";
  $("watch-again").hidden = true;
  karts.clear();
  trail = [];
  trailNext = 0;
  locationUpdates = 0;
  $("leaderboard").replaceChildren();
  draw(); // clears the last race's map
  follow(current.race, current.controller.signal);
}

async function follow(race, signal) {
  let failures = 0;
  setStatus("connecting");
  while (!signal.aborted) {
    try {
      const messages = client.stream(SERVICE, "WatchRace", { raceName: race.name, eventTypes: EVENT_TYPES }, { signal });
      for await (const message of messages) {
        if (signal.aborted) return;
        failures = 0;
        if ($("status").dataset.state !== "live") setStatus("live");
        if (message.locations) applyLocations(message.locations);
        if (message.standings) applyStandings(message.standings, race);
      }
      if (signal.aborted) return;
      setStatus("finished", "the race is over");
      $("watch-again").hidden = false;
      return;
    } catch (error) {
      if (signal.aborted) return;
      if (FINAL_CODES.has(error.code)) {
        // Both servers serve every page; only swiftkart-server has the races.
        setStatus("failed", error.code === "unimplemented" ? "this server has no races: open races.html on swiftkart-server" : error.message);
        return;
      }
      // A server restart or a dropped connection: follow again (the race picks up where
      // the server's simulation is, so nothing needs resuming).
      const delay = backoffDelay(failures++, { baseMs: 250, capMs: 5000 });
      setStatus("retrying", `${error.message}; again in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay, signal);
      if (!signal.aborted) setStatus("retrying", "reconnecting…");
    }
  }
}

function applyLocations(locations) {
  for (const kart of locations.karts || []) {
    const entry = { number: kart.number ?? 0, latitude: kart.latitude ?? 0, longitude: kart.longitude ?? 0,
                    recordedAt: kart.recordedAt || "" };
    karts.set(entry.number, entry);
    if (trail.length < TRAIL_LIMIT) trail.push([entry.latitude, entry.longitude]);
    else trail[trailNext] = [entry.latitude, entry.longitude];
    trailNext = (trailNext + 1) % TRAIL_LIMIT;
  }
  locationUpdates += 1;
  const state = { updates: locationUpdates, karts: [...karts.values()].sort((a, b) => a.number - b.number) };
  $("kart-state").textContent = JSON.stringify(state);
  // Locations come at 10 Hz; drawing waits for the next frame so a busy tab skips frames
  // instead of queueing them.
  if (!drawPending) {
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; draw(); });
  }
}

function seconds(duration) {
  // proto3 JSON Durations are strings like "1.500s"; absent means zero (the leader).
  const value = parseFloat(duration || "0");
  return Number.isFinite(value) ? value : 0;
}

function applyStandings(standings, race) {
  const entries = (standings.entries || []).map((entry, index) => ({
    kart: entry.kartNumber ?? 0, position: entry.position || index + 1, lap: entry.lap ?? 0, gap: seconds(entry.gapToLeader),
  })).sort((a, b) => a.position - b.position);
  const drivers = race.drivers || [];
  $("leaderboard").replaceChildren(...entries.map((entry) => row([
    { text: entry.position, num: true }, { text: entry.kart, num: true }, drivers[entry.kart - 1] || `Kart ${entry.kart}`,
    { text: entry.lap, num: true }, { text: entry.position === 1 ? "leader" : `+${entry.gap.toFixed(1)} s`, num: true },
  ], { "data-kart": entry.kart, "data-position": entry.position, "data-lap": entry.lap, "data-gap": entry.gap })));
}

// ---- Drawing -------------------------------------------------------------------------------

function draw() {
  const canvas = $("track");
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== width || canvas.height !== height) Object.assign(canvas, { width, height });
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, width, height);
  const points = trail.concat([...karts.values()].map((kart) => [kart.latitude, kart.longitude]));
  if (points.length === 0) return;

  // An equirectangular projection around the points' middle: at a kart track's size the
  // earth is flat, but a degree of longitude is shorter than one of latitude by cos(latitude).
  let [minLat, maxLat, minLon, maxLon] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const [lat, lon] of points) {
    minLat = Math.min(minLat, lat); maxLat = Math.max(maxLat, lat);
    minLon = Math.min(minLon, lon); maxLon = Math.max(maxLon, lon);
  }
  const squash = Math.cos(((minLat + maxLat) / 2) * Math.PI / 180);
  const spanX = Math.max((maxLon - minLon) * squash, 1e-6);
  const spanY = Math.max(maxLat - minLat, 1e-6);
  const margin = 24 * ratio;
  const scale = Math.min((width - 2 * margin) / spanX, (height - 2 * margin) / spanY);
  const offsetX = (width - spanX * scale) / 2;
  const offsetY = (height - spanY * scale) / 2;
  const project = (lat, lon) => [offsetX + (lon - minLon) * squash * scale, height - offsetY - (lat - minLat) * scale];

  context.fillStyle = "rgba(60, 70, 80, 0.25)";
  for (const [lat, lon] of trail) {
    const [x, y] = project(lat, lon);
    context.fillRect(x - ratio, y - ratio, 2 * ratio, 2 * ratio);
  }
  const radius = 9 * ratio;
  context.font = `bold ${10 * ratio}px system-ui, sans-serif`;
  context.textAlign = "center";
  context.textBaseline = "middle";
  for (const kart of karts.values()) {
    const [x, y] = project(kart.latitude, kart.longitude);
    context.beginPath();
    context.arc(x, y, radius, 0, 2 * Math.PI);
    context.fillStyle = `hsl(${(kart.number * 47) % 360} 70% 45%)`;
    context.fill();
    context.fillStyle = "#fff";
    context.fillText(String(kart.number), x, y);
  }
}

// ---- Start ---------------------------------------------------------------------------------

$("watch-again").addEventListener("click", () => current && watch(current.race));
window.addEventListener("resize", draw);

const races = await loadSchedule();
const wanted = new URLSearchParams(location.search).get("race");
if (wanted) {
  // A race named in the URL is followed even if the schedule could not be read: the
  // server is the judge of whether it exists.
  watch(races.find((race) => race.name === wanted) || { name: wanted });
}
