// Job events: the table with data-stream fills from the server-sent
// events of its URL, newest first, every value set as text.
(function () {
  "use strict";
  var table = document.querySelector("table[data-stream]");
  if (!table) { return; }
  var body = table.tBodies[0];
  var status = document.getElementById("job-events-status");
  var base = table.getAttribute("data-base") || "";
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) { td.className = cls; }
    tr.appendChild(td);
    return td;
  }
  var src = new EventSource(table.getAttribute("data-stream"));
  src.onopen = function () {
    table.setAttribute("data-open", "1");
    status.textContent = "Live.";
  };
  src.onerror = function () {
    table.removeAttribute("data-open");
    status.textContent = "Disconnected; reconnecting…";
  };
  src.onmessage = function (e) {
    var ev;
    try { ev = JSON.parse(e.data); } catch (err) { return; }
    var tr = document.createElement("tr");
    tr.className = "ev-" + String(ev.state).replace(/[^a-z]/g, "");
    tr.setAttribute("data-id", String(ev.id));
    cell(tr, new Date(ev.at).toLocaleTimeString());
    var id = cell(tr, "", "n id");
    var a = document.createElement("a");
    a.href = base + "/queues/" + encodeURIComponent(ev.queue) + "/messages/" + encodeURIComponent(String(ev.id));
    a.textContent = String(ev.id);
    id.appendChild(a);
    cell(tr, ev.queue, "queue");
    cell(tr, ev.kind || "", "kind");
    cell(tr, ev.state, "state");
    cell(tr, String(ev.attempt), "n");
    cell(tr, ev.error || "", "err");
    body.insertBefore(tr, body.firstChild);
    while (body.rows.length > 500) { body.deleteRow(body.rows.length - 1); }
  };
})();
