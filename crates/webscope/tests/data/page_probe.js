// Measures a report page as the browser laid it out, and writes what it found into the DOM
// (JSON, in a pre element with the id "probe") for `chromium --dump-dom` to hand to the test (report_stored.rs).
//
// - scroll, inner: the page's width and the window's; the page must not be wider.
// - wide: elements whose right edge is beyond the window and that are not inside a box
//   that scrolls sideways (overflow-x auto or scroll).
// - unwrapped: tables not inside such a box.
// - charts: per <svg>, the marks (children of <g class="marks">) that leave the plot area
//   (data-plot-left/top/right/bottom), and a linear axis (data-x-step/data-y-step: the
//   distance between two ticks) whose last interval holds no mark: the axis runs a whole
//   tick step or more beyond its data.
(function () {
  var vw = window.innerWidth;
  var out = {
    inner: vw,
    scroll: document.documentElement.scrollWidth,
    wide: [],
    unwrapped: 0,
    charts: []
  };
  function scrolls(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  }
  var all = document.body.getElementsByTagName('*');
  for (var i = 0; i < all.length; i++) {
    var el = all[i];
    if (el.id === 'probe') continue;
    var right = el.getBoundingClientRect().right;
    if (right > vw + 0.5 && !scrolls(el) && out.wide.length < 20) {
      out.wide.push(el.tagName.toLowerCase() + ' ends at ' + Math.round(right) + ' px: ' +
        (el.textContent || '').slice(0, 50));
    }
  }
  var tables = document.getElementsByTagName('table');
  for (var t = 0; t < tables.length; t++) {
    if (!scrolls(tables[t])) out.unwrapped++;
  }
  var eps = 0.5; // coordinates are printed with one decimal
  var svgs = document.getElementsByTagName('svg');
  for (var s = 0; s < svgs.length; s++) {
    var svg = svgs[s];
    var chart = { title: svg.getAttribute('aria-label') || '', marks: 0, problems: [] };
    out.charts.push(chart);
    if (!svg.hasAttribute('data-plot-top')) {
      chart.problems.push('no data-plot-* attributes: its plot area is unknown');
      continue;
    }
    var num = function (name) { return parseFloat(svg.getAttribute(name)); };
    var L = num('data-plot-left'), T = num('data-plot-top');
    var R = num('data-plot-right'), B = num('data-plot-bottom');
    var top = Infinity, rightmost = -Infinity;
    var marks = svg.querySelectorAll('g.marks > *');
    chart.marks = marks.length;
    for (var m = 0; m < marks.length; m++) {
      var mark = marks[m], box;
      if (mark.tagName === 'circle') {
        // A marker's centre is its value; its radius may cross the edge.
        var cx = mark.cx.baseVal.value, cy = mark.cy.baseVal.value;
        box = { x: cx, y: cy, width: 0, height: 0 };
      } else {
        box = mark.getBBox();
        if (mark.tagName === 'path') {
          // An error bar: its x is the point's, its caps may cross the edge like a marker.
          box = { x: box.x + box.width / 2, y: box.y, width: 0, height: box.height };
        }
      }
      if (box.x < L - eps || box.x + box.width > R + eps ||
          box.y < T - eps || box.y + box.height > B + eps) {
        chart.problems.push(mark.tagName + ' outside the plot area: x ' + box.x.toFixed(1) +
          '..' + (box.x + box.width).toFixed(1) + ', y ' + box.y.toFixed(1) + '..' +
          (box.y + box.height).toFixed(1) + ' (plot ' + L + '..' + R + ', ' + T + '..' + B + ')');
      }
      // A bar of height 0 marks nothing above the axis.
      if (mark.tagName !== 'rect' || box.height > 0) top = Math.min(top, box.y);
      rightmost = Math.max(rightmost, box.x + box.width);
    }
    var ystep = num('data-y-step'), xstep = num('data-x-step');
    // Data that is all zero draws nothing above the axis: there is no top to fit.
    if (!isNaN(ystep) && top < B - eps && top - T >= ystep - eps) {
      chart.problems.push('the y axis runs ' + ((top - T) / ystep).toFixed(2) +
        ' tick steps beyond the highest mark');
    }
    if (!isNaN(xstep) && rightmost > L + eps && R - rightmost >= xstep - eps) {
      chart.problems.push('the x axis runs ' + ((R - rightmost) / xstep).toFixed(2) +
        ' tick steps beyond the rightmost mark');
    }
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
