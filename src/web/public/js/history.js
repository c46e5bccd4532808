/*
 * rq dashboard: the History page's charts (views/history.ejs). The page is a table of the
 * numbers; this draws four uPlot charts above it from the page's `.json` variant (the
 * URL in `data-src` of #history-charts): done and err per minute, messages waiting, and
 * the wait and run times' p50 and p95. Without uPlot (or JavaScript) the table stays.
 */
(function () {
  'use strict';

  var box = document.getElementById('history-charts');
  var uPlot = window.uPlot;
  if (!box || !uPlot) return;

  var CHARTS = [
    { id: 'chart-rate', title: 'done and err per minute', lines: [['done', '#2a7d2a', 'done', true], ['err', '#c0392b', 'err', true]] },
    { id: 'chart-waiting', title: 'messages waiting (most seen)', lines: [['waiting', '#2c6fbb', 'waiting', false]] },
    { id: 'chart-wait', title: 'wait time, seconds', lines: [['p50', '#8e44ad', 'wait_p50', false], ['p95', '#d35400', 'wait_p95', false]] },
    { id: 'chart-run', title: 'run time, seconds', lines: [['p50', '#16a085', 'run_p50', false], ['p95', '#b7950b', 'run_p95', false]] },
  ];

  function draw(s) {
    var perMinute = s.step / 60;
    var xs = s.points.map(function (p) {
      return p.t;
    });
    // Every box first, then each chart at its box's width once they share the rows.
    var boxes = CHARTS.map(function (c) {
      var el = document.createElement('div');
      el.id = c.id;
      el.className = 'history-chart';
      box.appendChild(el);
      return el;
    });
    CHARTS.forEach(function (c, i) {
      var data = [xs].concat(
        c.lines.map(function (l) {
          return s.points.map(function (p) {
            var v = p[l[2]];
            return v === null ? null : l[3] ? v / perMinute : v;
          });
        }),
      );
      var series = [{}].concat(
        c.lines.map(function (l) {
          // A time is there only for periods that had runs: each is a point, joined when they follow.
          return { label: l[0], stroke: l[1], width: 2, spanGaps: false, points: { show: !l[3] && l[2] !== 'waiting', size: 6 } };
        }),
      );
      var opts = {
        title: c.title,
        width: Math.max(280, boxes[i].clientWidth),
        height: 180,
        // The table's times are UTC; so are the charts'.
        tzDate: function (ts) {
          return uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');
        },
        series: series,
        scales: { y: { range: [0, null] } },
      };
      new uPlot(opts, data, boxes[i]);
    });
  }

  fetch(box.getAttribute('data-src'), { credentials: 'same-origin', headers: { Accept: 'application/json' } })
    .then(function (res) {
      return res.ok ? res.json() : null;
    })
    .then(function (s) {
      if (s) draw(s);
    });
})();
