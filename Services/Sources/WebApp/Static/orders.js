// The order screen of the blog post: GetOrder for a snapshot, then WatchOrder from the
// snapshot's position; every update applied once, in order, and its update id remembered so
// that a lost stream resumes exactly where it stopped. OUT_OF_RANGE (our position fell out
// of the server's log) starts over from a fresh snapshot.
//   orders.html?order=ID[&token=alice-token][&api=http://host:port]
import { apiBase, backoffDelay, createClient, sleep } from "./connect.js";

const SERVICE = "orders.v1.OrderTracking";
// Errors another attempt cannot fix: stop and say so.
const FINAL_CODES = new Set(["unauthenticated", "permission_denied", "not_found", "invalid_argument", "unimplemented"]);
const STATUS_TEXT = {
  ORDER_STATUS_RECEIVED: "Received", ORDER_STATUS_PREPARING: "Preparing", ORDER_STATUS_OUT_FOR_DELIVERY: "Out for delivery",
  ORDER_STATUS_DELIVERED: "Delivered", ORDER_STATUS_CANCELED: "Canceled",
};
// Enum values may come as names (the JSON mapping's choice) or numbers (also valid input).
const STATUS_BY_NUMBER = [undefined, ...Object.keys(STATUS_TEXT)];
const COURIER_TRAIL = 50;
const APPLIED_KEPT = 1000;

const params = new URLSearchParams(location.search);
const orderId = params.get("order") || "";
const client = createClient({ baseUrl: apiBase(), headers: { authorization: `Bearer ${params.get("token") || "alice-token"}` } });
const $ = (id) => document.getElementById(id);

let lastUpdateId = ""; // the position to resume from: the last update applied
const applied = []; // update ids applied, oldest first (the last APPLIED_KEPT), for tests
const appliedSet = new Set();
let duplicates = 0; // updates received twice: the server promises none, so tests look here
let bootstraps = 0;
let courierTrail = [];

function setBanner(state, text) {
  $("banner").dataset.state = state;
  $("banner").textContent = text;
}

function publishTestState() {
  $("last-update-id").textContent = lastUpdateId;
  $("order-state").textContent = JSON.stringify({ lastUpdateId, applied, duplicates, bootstraps });
}

function statusText(status) {
  const name = typeof status === "number" ? STATUS_BY_NUMBER[status] : status;
  return STATUS_TEXT[name] || "—";
}

function timeText(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleTimeString() : "";
}

function timelineRow(event, updateId) {
  const li = document.createElement("li");
  li.dataset.updateId = updateId;
  if (event.id) li.dataset.eventId = event.id;
  const time = document.createElement("span");
  time.className = "time";
  time.textContent = timeText(event.occurredAt);
  const title = document.createElement("div");
  title.className = "title";
  title.textContent = event.title || "";
  li.append(time, title);
  if (event.subtitle) {
    const subtitle = document.createElement("div");
    subtitle.className = "muted";
    subtitle.textContent = event.subtitle;
    li.append(subtitle);
  }
  return li;
}

function showCourier(courier) {
  if (!courier) return;
  const latitude = courier.latitude ?? 0;
  const longitude = courier.longitude ?? 0;
  $("courier-text").textContent = `${latitude.toFixed(5)}, ${longitude.toFixed(5)}`;
  $("courier-text").dataset.latitude = latitude;
  $("courier-text").dataset.longitude = longitude;
  courierTrail = courierTrail.concat([[latitude, longitude]]).slice(-COURIER_TRAIL);
  drawCourier();
}

// A few dots of the courier's recent path, centred in the canvas and scaled to fit, at least
// about 200 m across (one position alone sits in the middle, not in a corner); longitude is
// scaled by the latitude's cosine so the path keeps its shape. A faint grid gives the scale.
function drawCourier() {
  const canvas = $("courier-map");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  if (courierTrail.length === 0) return;
  const lats = courierTrail.map(([lat]) => lat);
  const lons = courierTrail.map(([, lon]) => lon);
  const [minLat, maxLat, minLon, maxLon] = [Math.min(...lats), Math.max(...lats), Math.min(...lons), Math.max(...lons)];
  const [centerLat, centerLon] = [(minLat + maxLat) / 2, (minLon + maxLon) / 2];
  const lonScale = Math.cos((centerLat * Math.PI) / 180);
  const span = Math.max(maxLat - minLat, (maxLon - minLon) * lonScale, 0.002);
  const scale = (Math.min(canvas.width, canvas.height) - 24) / span;
  const x = (lon) => canvas.width / 2 + (lon - centerLon) * lonScale * scale;
  const y = (lat) => canvas.height / 2 - (lat - centerLat) * scale;
  context.strokeStyle = "rgba(60, 70, 80, 0.12)";
  context.lineWidth = 1;
  const step = (Math.min(canvas.width, canvas.height) - 24) / 4;
  for (let offset = -2 * step; offset <= 2 * step; offset += step) {
    context.beginPath();
    context.moveTo(canvas.width / 2 + offset, 0);
    context.lineTo(canvas.width / 2 + offset, canvas.height);
    context.moveTo(0, canvas.height / 2 + offset);
    context.lineTo(canvas.width, canvas.height / 2 + offset);
    context.stroke();
  }
  courierTrail.forEach(([lat, lon], index) => {
    const last = index === courierTrail.length - 1;
    context.fillStyle = last ? "#d2461e" : "rgba(60, 70, 80, 0.35)";
    context.beginPath();
    context.arc(x(lon), y(lat), last ? 6 : 3, 0, 2 * Math.PI);
    context.fill();
  });
}

// A snapshot replaces everything shown: the page starts over from the server's state.
function renderSnapshot(snapshot) {
  bootstraps += 1;
  $("order").hidden = false;
  $("order-status").textContent = statusText(snapshot.status);
  $("order-eta").textContent = snapshot.etaDisplay || "—";
  // The snapshot's timeline events carry no update ids: their rows are keyed "snapshot".
  $("timeline").replaceChildren(...(snapshot.timeline || []).map((event) => timelineRow(event, "snapshot")));
  courierTrail = [];
  if (snapshot.courier) showCourier(snapshot.courier);
  else $("courier-text").textContent = "not on the way yet";
  lastUpdateId = snapshot.latestUpdateId || "";
  publishTestState();
}

function applyUpdate(update) {
  const id = update.updateId || "";
  if (id && appliedSet.has(id)) {
    duplicates += 1; // applied already: showing it twice would be wrong, counting it is honest
    publishTestState();
    return;
  }
  if (update.statusChanged) $("order-status").textContent = statusText(update.statusChanged.status);
  if (update.etaChanged) $("order-eta").textContent = update.etaChanged.etaDisplay || "—";
  if (update.courierMoved) showCourier(update.courierMoved);
  if (update.timelineEvent) {
    const event = { occurredAt: update.occurredAt, ...update.timelineEvent };
    $("timeline").append(timelineRow(event, id));
  }
  if (id) {
    lastUpdateId = id;
    applied.push(id);
    appliedSet.add(id);
    if (applied.length > APPLIED_KEPT) appliedSet.delete(applied.shift());
  }
  publishTestState();
}

async function track(signal) {
  let failures = 0;
  let needSnapshot = true;
  let openedAt = 0;
  let snapshotRetaken = false; // OUT_OF_RANGE answered with a new snapshot, and nothing since
  setBanner("connecting", "Connecting…");
  while (!signal.aborted) {
    openedAt = 0;
    try {
      if (needSnapshot) {
        renderSnapshot(await client.unary(SERVICE, "GetOrder", { orderId }, { timeoutMs: 5000, signal }));
        needSnapshot = false;
      }
      const updates = client.stream(SERVICE, "WatchOrder", { orderId, sinceUpdateId: lastUpdateId }, {
        signal,
        onOpen: () => { openedAt = Date.now(); setBanner("live", "Live"); },
      });
      for await (const update of updates) {
        applyUpdate(update);
        failures = 0;
        snapshotRetaken = false;
      }
      // WatchOrder never ends on its own: an OK end means the server let go (shutting
      // down, draining). Resume like after any other loss.
      throw Object.assign(new Error("the server ended the stream"), { code: "unavailable" });
    } catch (error) {
      if (signal.aborted) return;
      // A stream that was up for a while is a fresh failure; one that fails as soon as it
      // opens keeps the backoff growing.
      if (openedAt && Date.now() - openedAt > 2000) {
        failures = 0;
        snapshotRetaken = false;
      }
      if (error.code === "out_of_range") {
        // Our position is older than the server keeps (or from another log): the updates
        // in between are gone, so only a new snapshot is correct. The server is up, so the
        // first time it is taken at once; a server that keeps saying so gets the backoff.
        needSnapshot = true;
        if (!snapshotRetaken) {
          snapshotRetaken = true;
          setBanner("retrying", "Catching up from a new snapshot");
          continue;
        }
      } else if (FINAL_CODES.has(error.code)) {
        // Both servers serve every page; only orders-server tracks orders.
        setBanner("failed", error.code === "unimplemented" ? "Stopped: this server has no orders: open orders.html on orders-server"
          : `Stopped: ${error.message}`);
        return;
      }
      const delay = backoffDelay(failures++, { baseMs: 200, capMs: 2000 });
      setBanner("retrying", `Reconnecting in ${(delay / 1000).toFixed(1)} s (${error.message})`);
      await sleep(delay, signal);
    }
  }
}

if (orderId) {
  $("order-id").textContent = orderId;
  document.title = `Order ${orderId}`;
  track(new AbortController().signal);
} else {
  // No order named: ask for one, keeping the other parameters (token, api).
  $("pick-order").hidden = false;
  setBanner("idle", "Which order?");
  $("pick-order").addEventListener("submit", (event) => {
    event.preventDefault();
    params.set("order", new FormData(event.target).get("order"));
    location.search = params.toString();
  });
  offerOrders();
}

// The orders this token may watch (ListOrders), each a link to its screen.
async function offerOrders() {
  let orders;
  try {
    orders = (await client.unary(SERVICE, "ListOrders", {}, { timeoutMs: 5000 })).orders || [];
  } catch (error) {
    setBanner("idle", `Which order? (the list is unavailable: ${error.message})`);
    return;
  }
  const list = $("order-choices");
  for (const order of orders) {
    const choice = new URLSearchParams(params);
    choice.set("order", order.orderId);
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `?${choice}`;
    link.textContent = order.orderId;
    item.append(link, ` — ${statusText(order.status)}${order.etaDisplay ? `, ${order.etaDisplay}` : ""}`);
    list.append(item);
  }
  $("order-list").hidden = orders.length === 0;
  setBanner("idle", orders.length === 0 ? "Which order? (none to watch yet)" : "Which order?");
}
