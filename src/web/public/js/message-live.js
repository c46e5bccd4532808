/*
 * The message page, live (GET /q/:name/:msg_id). live-tail.js reads the page's event
 * stream and passes on its news as events on `section#live-tail`: `tail:state` (the
 * state), `tail:status` (the status text) and `tail:end` (the final state). When one
 * differs from what the banner shows, the new text shows there at once, and the page is
 * fetched again (one fetch at a time; news that comes during one fetches once more after
 * it) to take from it what the
 * server renders: the banner, the buttons (Destroy only while the message runs), the
 * timeline, the fields table and the JSON. While the message runs, the banner counts the
 * time since its run started (`data-started` on `#msg-banner`, epoch ms).
 */
(function () {
  'use strict';
  var section = document.getElementById('live-tail');
  if (!section || !window.fetch || !window.DOMParser) return;
  var fetching = false;
  var again = false;

  function two(n) {
    return (n < 10 ? '0' : '') + n;
  }

  function elapsed(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' m ' + two(s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + two(Math.floor(s / 60) % 60) + ' m';
  }

  function tick() {
    var banner = document.getElementById('msg-banner');
    var out = document.getElementById('msg-elapsed');
    if (!banner || !out) return;
    var started = Number(banner.getAttribute('data-started'));
    out.textContent = started > 0 ? 'running for ' + elapsed(Date.now() - started) : '';
  }

  function swap(fresh, selector) {
    var old = document.querySelector(selector);
    var next = fresh.querySelector(selector);
    if (old && next) old.replaceWith(document.importNode(next, true));
  }

  function refresh() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    fetch(window.location.pathname, { headers: { Accept: 'text/html' }, credentials: 'same-origin' })
      .then(function (res) {
        return res.ok ? res.text() : undefined;
      })
      .then(function (html) {
        if (html === undefined) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html');
        ['#msg-banner', '#msg-actions', '#msg-life', 'table.msg-summary', 'pre.msg-json'].forEach(function (s) {
          swap(fresh, s);
        });
        tick();
      })
      .catch(function () {
        // The next news (or a reload) tries again.
      })
      .then(function () {
        fetching = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  /** Show `text` in element `id`; when it is news, fetch the page again. */
  function news(id, text) {
    var el = document.getElementById(id);
    if (!el || !text || el.textContent === text) return;
    el.textContent = text;
    refresh();
  }

  function onState(e) {
    news('msg-state', e.detail);
  }
  section.addEventListener('tail:state', onState);
  section.addEventListener('tail:end', onState);
  // The status comes as `<state> - <text>`; the banner shows the text.
  section.addEventListener('tail:status', function (e) {
    var state = document.getElementById('msg-state');
    var prefix = state ? state.textContent + ' - ' : '';
    news('msg-status', e.detail.indexOf(prefix) === 0 ? e.detail.slice(prefix.length) : e.detail);
  });
  tick();
  window.setInterval(tick, 1000);
})();
