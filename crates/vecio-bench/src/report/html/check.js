
(function () {
  var figs = document.querySelectorAll('figure.plot');
  var bad = [];
  for (var i = 0; i < figs.length; i++) {
    var svg = figs[i].querySelector('svg');
    var box = svg ? svg.getBoundingClientRect() : null;
    var shapes = svg ? svg.querySelectorAll('rect,path,polyline,line,circle').length : 0;
    if (!svg || !(box.width > 0 && box.height > 0) || shapes === 0) { bad.push(figs[i].id); }
  }
  var out = document.getElementById('report-check');
  out.textContent = bad.length === 0 ? 'plots-ok ' + figs.length : 'plots-bad ' + bad.join(' ');
  out.setAttribute('data-status', bad.length === 0 ? 'ok' : 'bad');
  var verdict = document.getElementById('verdict');
  if (verdict) {
    out.setAttribute('data-verdict-bottom', Math.ceil(verdict.getBoundingClientRect().bottom));
  }
})();
