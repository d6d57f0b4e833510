// A chat room over a WebSocket, in the protocol of a Node.js `ws` chat server: every frame is
// JSON {id, nickname, text}; the page sends its own random id with each message, the room
// sends every message (ours included) back to everyone, and notices come from id "server".
//   chat.html[?room=NAME][&nick=NAME][&api=http://host:port]
import { apiBase, backoffDelay } from "./connect.js";

const params = new URLSearchParams(location.search);
const room = params.get("room") || "";
const MESSAGES_KEPT = 500; // a long-open page must not grow without bound

// Random per page load: it tells our own messages from others' with the same nickname.
const myId = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");
const $ = (id) => document.getElementById(id);

let socket = null;
let failures = 0;
let received = 0;

function setStatus(state, detail = "") {
  $("status").dataset.state = state;
  $("status").textContent = state;
  $("status-detail").textContent = detail;
  $("send").querySelector("button").disabled = state !== "live";
}

// The WebSocket lives where the API does: same host, ws for http, wss for https.
function socketURL() {
  const url = new URL(apiBase());
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = room ? `/rooms/${encodeURIComponent(room)}` : "/";
  url.search = "";
  return url.toString();
}

function showMessage(message) {
  const li = document.createElement("li");
  li.dataset.id = message.id;
  li.dataset.nickname = message.nickname;
  li.dataset.seq = String(++received);
  if (message.id === "server") li.classList.add("server");
  else if (message.id === myId) li.classList.add("mine");
  const nick = document.createElement("span");
  nick.className = "nick";
  nick.textContent = message.nickname;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = message.text;
  li.append(nick, text);
  const list = $("messages");
  // Follow the conversation only if the reader is already at the bottom.
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  list.append(li);
  while (list.children.length > MESSAGES_KEPT) list.firstElementChild.remove();
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function parse(data) {
  // Whatever arrives is shown as text only; a frame that is not our shape is dropped.
  try {
    const message = JSON.parse(data);
    if (message === null || typeof message !== "object") return null;
    return { id: String(message.id ?? ""), nickname: String(message.nickname ?? ""), text: String(message.text ?? "") };
  } catch {
    return null;
  }
}

function connect() {
  setStatus(failures === 0 ? "connecting" : "retrying", failures === 0 ? "" : "reconnecting…");
  const ws = new WebSocket(socketURL());
  socket = ws;
  let opened = false;
  ws.addEventListener("open", () => {
    opened = true;
    failures = 0;
    setStatus("live");
  });
  ws.addEventListener("message", (event) => {
    if (typeof event.data !== "string") return;
    const message = parse(event.data);
    if (message) showMessage(message);
  });
  // "close" follows "error" too, so reconnecting is decided here only.
  ws.addEventListener("close", (event) => {
    if (socket !== ws) return;
    socket = null;
    // A socket that had opened is a first failure; one that never opened adds up, so a
    // server that is down is asked less and less often (up to every 5 s).
    failures = opened ? 1 : failures + 1;
    const delay = backoffDelay(failures - 1, { baseMs: 250, capMs: 5000 });
    // A browser does not say why a handshake failed; a server without the chat (404) looks
    // like one that is down, so after a few tries the likely reasons are named.
    const why = failures >= 3 ? "cannot connect: is orders-server down, or is this another server?"
      : `closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`;
    setStatus("retrying", `${why}; again in ${(delay / 1000).toFixed(1)} s`);
    setTimeout(connect, delay);
  });
}

$("room-name").textContent = room || "lobby";
document.title = `Chat — ${room || "lobby"}`;
$("my-id").textContent = myId;
$("nickname").value = params.get("nick") || `guest-${myId.slice(0, 4)}`;
$("send").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = event.target.elements.text;
  const text = input.value.trim();
  const nickname = $("nickname").value.trim() || `guest-${myId.slice(0, 4)}`;
  if (!text || !socket || socket.readyState !== WebSocket.OPEN) return;
  socket.send(JSON.stringify({ id: myId, nickname, text }));
  input.value = "";
  input.focus();
});
connect();
