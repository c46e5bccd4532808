/*
 * The live log tail (message page and tail viewer). It reads the Server-Sent Events of
 * `section#live-tail[data-events]` and appends each chunk to `pre#tail-output`. The
 * server has already escaped the text and turned its ANSI colours into spans, so a chunk
 * goes in as HTML as it comes. While `input#tail-follow` is checked the output keeps
 * scrolled to the bottom. On `end` the EventSource is closed (it would reconnect forever
 * otherwise) and the final state shows in `#tail-state` when the page has one. A stream
 * the server closes without `end` (idle) is reconnected by the EventSource itself.
 *
 * At most MAX_LINES lines stay in the page; older chunks are dropped from the top. Each
 * change is announced as a `tail:lines` event on the section ({first, count}: lines
 * dropped, lines received) for the tail viewer's line counter. The stream's news of the
 * message goes to the section too, for the message page (message-live.js): `tail:state`
 * (the state), `tail:status` (the status text) and `tail:end` (the final state).
 */
(function () {
  'use strict';
  var MAX_LINES = 20000;
  var section = document.getElementById('live-tail');
  var out = document.getElementById('tail-output');
  if (!section || !out || !window.EventSource) return;
  var follow = document.getElementById('tail-follow');
  var stateEl = document.getElementById('tail-state');
  var kept = 0;
  var dropped = 0;

  function showState(text) {
    if (stateEl) stateEl.textContent = text;
  }

  function announce(name, detail) {
    section.dispatchEvent(new CustomEvent(name, { detail: detail }));
  }

  function countLines(text) {
    var n = 0;
    for (var i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
    return n;
  }

  function append(node, lines) {
    node.setAttribute('data-lines', String(lines));
    out.appendChild(node);
    kept += lines;
    while (kept > MAX_LINES && out.firstChild !== node) {
      var old = Number(out.firstChild.getAttribute('data-lines')) || 0;
      out.removeChild(out.firstChild);
      kept -= old;
      dropped += old;
    }
    if (!follow || follow.checked) out.scrollTop = out.scrollHeight;
    announce('tail:lines', { first: dropped, count: dropped + kept });
  }

  function note(text) {
    var p = document.createElement('span');
    p.className = 'tail-note';
    p.textContent = text;
    append(p, 0);
  }

  var source = new EventSource(section.getAttribute('data-events'));
  source.onmessage = function (e) {
    var chunk = document.createElement('span');
    chunk.innerHTML = JSON.parse(e.data);
    append(chunk, countLines(chunk.textContent));
  };
  source.addEventListener('skipped', function (e) {
    note('… ' + Number(e.data).toLocaleString() + ' earlier bytes not shown: open the raw log for all of it.');
  });
  source.addEventListener('state', function (e) {
    showState(e.data);
    announce('tail:state', e.data);
  });
  source.addEventListener('status', function (e) {
    announce('tail:status', JSON.parse(e.data));
  });
  source.addEventListener('end', function (e) {
    source.close();
    showState(e.data);
    section.classList.add('tail-ended');
    announce('tail:end', e.data);
  });
  // CLOSED: the server refused (e.g. 503, too many live tails); CONNECTING: it closed an idle stream or the network went.
  source.onerror = function () {
    showState(source.readyState === EventSource.CLOSED ? 'live tail unavailable: reload to try again' : 'reconnecting…');
  };
})();
