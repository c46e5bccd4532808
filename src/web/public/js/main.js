/*
 * rq dashboard: progressive enhancement of the queue pages (they work without it).
 * - A region with `data-live="<seconds>"` is refreshed in place from the same URL while
 *   its `data-live-toggle` checkbox is on, the tab is visible, no form in the region
 *   has focus, and no row in it is checked for a bulk action. The server renders everything; this only swaps the region's HTML.
 * - A submit button with `data-confirm="<question>"` asks before its form is sent.
 */
(function () {
  'use strict';

  function refresh(region) {
    var focused = document.activeElement;
    if (document.hidden || (focused && region.contains(focused) && focused.tagName !== 'A')) return Promise.resolve();
    // Checked rows of a bulk action would be lost.
    if (region.querySelector('input[name="ids"]:checked')) return Promise.resolve();
    return fetch(window.location.href, { credentials: 'same-origin' })
      .then(function (res) {
        return res.ok ? res.text() : null;
      })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById(region.id);
        if (fresh) region.innerHTML = fresh.innerHTML;
      })
      .catch(function () {
        /* the next round tries again */
      });
  }

  function live(region) {
    var seconds = Number(region.getAttribute('data-live')) || 5;
    var toggle = document.querySelector('[data-live-toggle]');
    if (toggle) {
      var label = toggle.closest('.js-only');
      if (label) label.classList.remove('hidden');
    }
    function tick() {
      var on = !toggle || toggle.checked;
      (on ? refresh(region) : Promise.resolve()).then(function () {
        window.setTimeout(tick, seconds * 1000);
      });
    }
    window.setTimeout(tick, seconds * 1000);
  }

  document.addEventListener('submit', function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });

  document.querySelectorAll('[data-live][id]').forEach(live);
})();
