// Live refresh: every 2 s the page's own URL is fetched again and the main
// element replaced, unless the user is busy with a form. Nothing else.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main) { return; }
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  });
  if (main.querySelector("[data-stream]")) { return; } // a live page (events.js): never replaced
  var every = parseInt(main.getAttribute("data-refresh"), 10) || 2000;
  function refresh() {
    if (document.hidden || (document.activeElement && document.activeElement.form)) {
      return setTimeout(refresh, every);
    }
    var url = new URL(window.location.href);
    url.searchParams.delete("done");
    fetch(url.toString(), { credentials: "same-origin", headers: { "X-Baton-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var next = doc.getElementById("main");
          if (next) { main.innerHTML = next.innerHTML; }
        }
      })
      .catch(function () {})
      .then(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
