/*
 * rq dashboard: the bulk actions (routes/bulk.ts), as progressive enhancement.
 * - A progress page (`[data-bulk-job]`, the job's .json URL) polls that URL once a
 *   second while the job runs, updating its counts, and reloads itself when the job
 *   has ended, for the server's summary.
 * - A `[data-check-all]` checkbox checks or unchecks every row's `ids` checkbox.
 */
(function () {
  'use strict';

  function text(id, value) {
    var el = document.getElementById(id);
    if (el) el.textContent = String(value);
  }

  function follow(box) {
    var url = box.getAttribute('data-bulk-job');
    function poll() {
      fetch(url, { credentials: 'same-origin' })
        .then(function (res) {
          return res.ok ? res.json() : null;
        })
        .then(function (job) {
          if (job === null) return;
          var handled = job.done + job.skipped + job.failed;
          text('bulk-done', job.done);
          text('bulk-skipped', job.skipped);
          text('bulk-failed', job.failed);
          text('bulk-state', 'Running: ' + handled + ' of ' + job.total + ' handled.');
          var bar = document.getElementById('bulk-bar');
          if (bar) bar.value = handled;
          if (job.finished) window.location.reload();
          else window.setTimeout(poll, 1000);
        })
        .catch(function () {
          window.setTimeout(poll, 2000);
        });
    }
    if (box.getAttribute('data-finished') !== '1') window.setTimeout(poll, 500);
  }

  document.querySelectorAll('[data-bulk-job]').forEach(follow);

  document.addEventListener('change', function (event) {
    var all = event.target;
    if (!all.hasAttribute || !all.hasAttribute('data-check-all')) return;
    document.querySelectorAll('input[name="ids"][form="bulk-form"]').forEach(function (box) {
      box.checked = all.checked;
    });
  });
})();
