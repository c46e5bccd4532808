/*
 * The tail viewer's line counter: `Lines <top>-<bottom> of <n>` for
 * the part of `pre#tail-output` in view. live-tail.js does the streaming and tells how
 * many lines it has (`tail:lines`); the output does not wrap here, so the height of a
 * line turns the scroll position into line numbers.
 */
(function () {
  'use strict';
  var section = document.getElementById('live-tail');
  var out = document.getElementById('tail-output');
  var top = document.getElementById('tail-top');
  var bottom = document.getElementById('tail-bottom');
  var count = document.getElementById('tail-count');
  if (!section || !out || !top || !bottom || !count) return;
  var first = 0;
  var total = 0;

  /** The height of a line as drawn (the browser rounds it, so CSS's value drifts over many lines). */
  function lineHeight(style, shown) {
    var height = out.scrollHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    var notes = out.querySelectorAll('.tail-note');
    for (var i = 0; i < notes.length; i++) height -= notes[i].offsetHeight;
    return shown > 0 && height > 0 ? height / shown : parseFloat(style.lineHeight) || 16;
  }

  function update() {
    var style = getComputedStyle(out);
    var shown = total - first;
    var line = lineHeight(style, shown);
    var scrolled = out.scrollTop - parseFloat(style.paddingTop);
    var from = Math.min(shown, Math.max(0, Math.floor(scrolled / line)) + 1);
    var to = Math.min(shown, Math.floor((scrolled + out.clientHeight) / line));
    top.textContent = String(shown === 0 ? 0 : first + from);
    bottom.textContent = String(first + to);
    count.textContent = String(total);
  }

  section.addEventListener('tail:lines', function (e) {
    first = e.detail.first;
    total = e.detail.count;
    update();
  });
  out.addEventListener('scroll', update);
  window.addEventListener('resize', update);
})();
