// SPDX-License-Identifier: BSD-2-Clause
// ferry's status page: polls /api/status and /api/history every 2 s,
// updates the figures and tables the server wrote, and draws the charts
// of the last 15 minutes as inline SVG. No library, nothing from elsewhere.
'use strict';
(function () {
  const POLL_MS = 2000, SPAN_S = 900;
  const $ = (id) => document.getElementById(id);
  let hist = [], last = 0;

  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"']/g, (c) =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }
  function bytes(v) {
    const u = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
    let i = 0;
    while (v >= 1000 && i < u.length - 1) { v /= 1000; i++; }
    return (i ? v.toFixed(1) : Math.round(v)) + ' ' + u[i];
  }
  function num(v) { return v >= 100 ? Math.round(v).toString() : (+v).toFixed(v >= 10 ? 1 : 2).replace(/\.?0+$/, '') || '0'; }

  async function getJSON(url) {
    const r = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
    if (r.status === 401) { location.href = '/status'; throw new Error('signed out'); }
    if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
    return r.json();
  }

  function rows(id, html, none) {
    const t = $(id);
    if (!t) return;
    if (!html.length && none) html = ['<tr><td colspan="9" class="none">' + none + '</td></tr>'];
    t.tBodies[0].innerHTML = html.join('');
  }
  function bcells(x) {
    return '<td class="n">' + x.sessions + '</td><td class="n">' + bytes(x.bytes_up) +
      '</td><td class="n">' + bytes(x.bytes_down) + '</td>';
  }

  function update(st) {
    const l = st.live;
    $('f-sessions').textContent = l.sessions;
    $('f-setups').textContent = num(l.setups_per_s);
    $('f-up').textContent = bytes(l.bytes_up_per_s) + '/s';
    $('f-down').textContent = bytes(l.bytes_down_per_s) + '/s';
    $('f-auth').textContent = l.auth_ok + ' / ' + (l.auth_denied + l.auth_throttled + l.auth_busy);
    $('f-udp').textContent = l.udp_associations;
    $('f-tunnels').textContent = l.tunnel_connections;
    $('f-edge').textContent = l.edge_routes;
    rows('t-clients', st.top_clients.map((c) => '<tr><td>' + esc(c.client) + '</td>' + bcells(c) + '</tr>'));
    // "all time": the per-user accounting's totals, when ferry has them.
    rows('t-users', st.top_users.map((u) => '<tr><td>' + esc(u.user) + '</td>' + bcells(u) +
      (u.totals ? '<td class="n">' + bytes(u.totals.bytes_up + u.totals.bytes_down) + '</td>' : '') +
      '</tr>'));
    rows('t-rules', st.rules.map((r) => '<tr><td>' + esc(r.rule) + '</td><td>' + r.action +
      '</td><td class="n">' + r.hits + '</td></tr>'));
    rows('t-errors', st.errors.map((e) => '<tr><td class="nw">' +
      new Date(e.time * 1000).toISOString().replace('T', ' ').slice(0, 19) +
      '</td><td class="lvl-' + e.level + '">' + e.level + '</td><td>' + esc(e.message) + '</td></tr>'),
      'none since the start');
    rows('t-sessions', st.sessions.map((s) => '<tr><td class="n">' + s.id + '</td><td>' +
      esc(s.client) + '</td><td>' + esc(s.user) + '</td><td>' + esc(s.protocol) + '</td><td>' +
      esc(s.destination) + '</td><td>' + esc(s.outbound) + '</td><td class="n">' + bytes(s.bytes_up) +
      '</td><td class="n">' + bytes(s.bytes_down) + '</td><td class="n">' + Math.round(s.age_s) +
      '</td><td class="n">' + Math.round(s.idle_s) + '</td><td><form method="post" action="/api/sessions/' +
      s.id + '/close?back=1"><button class="close" type="submit">close</button></form></td></tr>'));
    $('s-count').textContent = st.sessions.length + ' shown of ' + st.total + ', the largest first';
    $('updated').textContent = 'updated ' + new Date(st.time * 1000).toLocaleTimeString();
  }

  // A "nice" axis maximum and step for values up to max.
  function scale(max) {
    if (!(max > 0)) max = 1;
    const p = Math.pow(10, Math.floor(Math.log10(max)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => max / s <= 4) || 10 * p;
    return { top: Math.ceil(max / step) * step, step: step };
  }

  const H = 170, L = 70, R = 12, T = 22, B = 22;
  function chart(id, title, unit, fmt, series) {
    const box = $(id);
    // Drawn at the box's own width, so that text keeps its size.
    const W = Math.max(320, Math.round(box.clientWidth - 18));
    const now = hist.length ? hist[hist.length - 1][0] : Math.floor(Date.now() / 1000);
    let max = 0;
    for (const s of series) for (const p of hist) max = Math.max(max, p[s.col]);
    const sc = scale(max);
    const x = (t) => L + (W - L - R) * (1 - (now - t) / SPAN_S);
    const y = (v) => T + (H - T - B) * (1 - v / sc.top);
    let g = '<text x="4" y="12" class="unit">' + esc(unit) + '</text>';
    for (let v = 0; v <= sc.top + sc.step / 2; v += sc.step) {
      g += '<line class="gridline" x1="' + L + '" x2="' + (W - R) + '" y1="' + y(v) + '" y2="' + y(v) + '"/>' +
        '<text x="' + (L - 4) + '" y="' + (y(v) + 3) + '" text-anchor="end">' + esc(fmt(v)) + '</text>';
    }
    for (let m = 15; m >= 0; m -= 5) {
      const xx = x(now - m * 60);
      const anchor = m === 15 ? 'start' : m ? 'middle' : 'end';
      g += '<line class="axis" x1="' + xx + '" x2="' + xx + '" y1="' + (H - B) + '" y2="' + (H - B + 4) + '"/>' +
        '<text x="' + xx + '" y="' + (H - 6) + '" text-anchor="' + anchor + '">' +
        (m ? '\u2212' + m + ' min' : 'now') + '</text>';
    }
    g += '<line class="axis" x1="' + L + '" x2="' + L + '" y1="' + T + '" y2="' + (H - B) + '"/>' +
      '<line class="axis" x1="' + L + '" x2="' + (W - R) + '" y1="' + (H - B) + '" y2="' + (H - B) + '"/>';
    for (const s of series) {
      const pts = hist.filter((p) => now - p[0] <= SPAN_S).map((p) => x(p[0]).toFixed(1) + ',' + y(p[s.col]).toFixed(1));
      if (pts.length) g += '<polyline fill="none" stroke="' + s.color + '" stroke-width="1.5" points="' + pts.join(' ') + '"/>';
    }
    const legend = series.map((s) => '<i style="background:' + s.color + '"></i>' + esc(s.name)).join('');
    box.innerHTML = '<h3>' + esc(title) + ' <small>last 15 minutes</small> <span class="legend">' + legend + '</span></h3>' +
      '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(title) + '">' + g + '</svg>';
  }

  function charts() {
    // The four boxes first, so that each is measured at its final width.
    for (const id of ['c-bytes', 'c-sessions', 'c-setups', 'c-auth']) {
      if (!$(id)) {
        const box = document.createElement('div');
        box.className = 'chart';
        box.id = id;
        $('charts').appendChild(box);
      }
    }
    const css = getComputedStyle(document.documentElement);
    const c = (n) => css.getPropertyValue(n).trim();
    chart('c-bytes', 'Throughput', 'bytes/s', (v) => bytes(v) + '/s',
      [{ name: 'up', col: 3, color: c('--up') }, { name: 'down', col: 4, color: c('--down') }]);
    chart('c-sessions', 'Open', 'count', num,
      [{ name: 'sessions', col: 1, color: c('--down') }, { name: 'UDP associations', col: 7, color: c('--up') }]);
    chart('c-setups', 'Session setups', 'per second', num, [{ name: 'setups', col: 2, color: c('--down') }]);
    chart('c-auth', 'Logins', 'per second', num,
      [{ name: 'ok', col: 5, color: c('--ok') }, { name: 'failed', col: 6, color: c('--bad') }]);
  }

  async function poll() {
    try {
      const [st, h] = await Promise.all([getJSON('/api/status'), getJSON('/api/history?since=' + last)]);
      hist = hist.concat(h.samples).slice(-h.capacity);
      if (hist.length) last = hist[hist.length - 1][0];
      update(st);
      charts();
    } catch (e) {
      $('updated').textContent = 'update failed: ' + e.message;
    }
    setTimeout(poll, POLL_MS);
  }

  // Close buttons: the same form, sent without leaving the page.
  document.addEventListener('submit', async (ev) => {
    const f = ev.target;
    if (!f.action || f.action.indexOf('/api/sessions/') < 0) return;
    ev.preventDefault();
    const url = f.action.replace(/\?back=1$/, '');
    try {
      const r = await fetch(url, { method: 'POST', credentials: 'same-origin' });
      if (!r.ok) $('updated').textContent = 'close: HTTP ' + r.status;
    } catch (e) { $('updated').textContent = 'close failed: ' + e.message; }
  });

  poll();
})();
