/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The page of spanperf report --html.  The recording is the JSON in
 * #spanperf-data (report_html.c lays it out); every name in it came from
 * a recorded process, so it only ever reaches the page as textContent,
 * an attribute value or canvas text, never as markup.
 */
(function () {
	'use strict';
	var t0 = performance.now();
	var D = JSON.parse(document.getElementById('spanperf-data').textContent);
	var S = D.s, M = D.meta, F = D.f;
	/* Times are ns from the first event; t0, on the recording's clock, is a string: it can pass 2^53. */
	function absNs(rel) { return (BigInt(M.t0) + BigInt(Math.round(rel))).toString(); }
	var LABEL_W = 200, RULER_H = 22, PROC_H = 16, TICK_H = 12, ROW_H = 14, GAP = 4;

	function $(id) { return document.getElementById(id); }
	function el(tag, text, cls) {
		var e = document.createElement(tag);
		if (text !== undefined && text !== null) e.textContent = String(text);
		if (cls) e.className = cls;
		return e;
	}
	/* "12.3 ms": one decimal, the unit chosen by size. */
	function fmtDur(ns) {
		if (ns < 1e3) return Math.round(ns) + ' ns';
		if (ns < 1e6) return (ns / 1e3).toFixed(1) + ' \u00b5s';
		if (ns < 1e9) return (ns / 1e6).toFixed(1) + ' ms';
		return (ns / 1e9).toFixed(2) + ' s';
	}
	function fmtMs(ns) { return (ns / 1e6).toFixed(3) + ' ms'; }
	function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : '-'; }
	function fname(f) { return S[F[3 * f]]; }
	function fdso(f) { return S[F[3 * f + 1]]; }
	function hue(s) {
		var h = 0;
		for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
		return Math.abs(h) % 360;
	}

	/* ---- the data, decoded ---- */
	var threads = D.th.map(function (t, i) {
		var n = t.t.length, times = new Float64Array(n), acc = 0;
		for (var k = 0; k < n; k++) { acc += t.t[k]; times[k] = acc; }
		var no = t.o.length / 3, off = new Float64Array(no * 2), offk = new Uint32Array(no);
		for (k = 0; k < no; k++) { off[2 * k] = t.o[3 * k]; off[2 * k + 1] = t.o[3 * k] + t.o[3 * k + 1]; offk[k] = t.o[3 * k + 2]; }
		return { i: i, tid: t.tid, pid: t.pid, name: S[t.n], samples: t.ns, times: times, stacks: Uint32Array.from(t.k),
			off: off, offStacks: offk, spans: [], depth: 0, maxDur: 0, y: 0, h: 0 };
	});
	var spans = D.sp.map(function (r, i) {
		var top = [];
		for (var k = 0; k < r[8].length; k += 2) top.push({ sym: S[r[8][k]], samples: r[8][k + 1] });
		var s = { i: i, th: threads[r[0]], start: r[1], dur: r[2], end: r[1] + r[2], name: S[r[3]], source: S[r[4]],
			samples: r[5], unfinished: !!(r[6] & 1), idsRecorded: !!(r[6] & 2), counters: r[7], top: top,
			wall: D.w[r[9]], spanId: r[10], traceId: r[11], depth: 0 };
		s.color = 'hsl(' + (hue(s.source + ':' + s.name)) + ',62%,' + (s.source === 'external' ? '72%' : '66%') + ')';
		s.label = 'span ' + s.name + ' ' + fmtDur(s.dur) + ' on thread ' + s.th.name;
		s.th.spans.push(s);
		return s;
	});
	/*
	 * Rows: each span takes the first row free at its start, so nested spans
	 * stack under their parent and spans that overlap without nesting (async
	 * work, external spans) still get a row each; past MAX_ROWS they share the last.
	 */
	var MAX_ROWS = 24;
	threads.forEach(function (t) {
		var rows = [];
		t.spans.forEach(function (s) {
			var d = 0;
			while (d < rows.length && rows[d] > s.start) d++;
			if (d >= MAX_ROWS) d = MAX_ROWS - 1;
			rows[d] = Math.max(rows[d] || 0, s.end);
			s.depth = d;
			if (d + 1 > t.depth) t.depth = d + 1;
			if (s.dur > t.maxDur) t.maxDur = s.dur;
		});
		t.busy = t.samples + t.spans.length;
	});
	/* Processes, busiest first, each with its threads busiest first. */
	var procs = {}, plist = [];
	threads.forEach(function (t) {
		var p = procs[t.pid];
		if (!p) { p = procs[t.pid] = { pid: t.pid, threads: [], busy: 0, name: null }; plist.push(p); }
		p.threads.push(t);
		p.busy += t.busy;
		if (t.tid === t.pid) p.name = t.name;
	});
	plist.forEach(function (p) {
		if (p.name === null) p.name = p.threads[0].name;
		p.threads.sort(function (a, b) { return b.busy - a.busy || a.tid - b.tid; });
	});
	plist.sort(function (a, b) { return b.busy - a.busy || a.pid - b.pid; });
	var lanes = [], totalH = RULER_H;
	plist.forEach(function (p) {
		p.y = totalH;
		totalH += PROC_H;
		p.threads.forEach(function (t) {
			t.y = totalH;
			t.h = TICK_H + t.depth * ROW_H + GAP;
			totalH += t.h;
			lanes.push(t);
		});
	});

	/* ---- summary ---- */
	function fact(dl, k, v) {
		var d = el('div');
		d.appendChild(el('dt', k));
		d.appendChild(el('dd', v));
		dl.appendChild(d);
	}
	document.title = 'spanperf: ' + M.file;
	$('title').textContent = 'spanperf ' + M.file;
	var meta = $('meta');
	fact(meta, 'host', M.host);
	fact(meta, 'kernel', M.kernel + ' ' + M.arch);
	fact(meta, 'CPUs', M.cpus + (M.cpu ? ' \u00d7 ' + M.cpu : ''));
	fact(meta, 'command', M.cmdline);
	fact(meta, 'event', (M.event || 'none') + (M.freq ? ' at ' + M.freq + ' Hz' : ''));
	fact(meta, 'samples', String(M.samples));
	if (M.off_samples) fact(meta, 'off-CPU blocks', String(M.off_samples));
	fact(meta, 'spans', String(M.spans));
	fact(meta, 'lost', M.lost + ' samples');
	fact(meta, 'length', fmtDur(M.dur));
	fact(meta, 'threads', String(threads.length));
	var notes = [];
	if (M.every > 1)
		notes.push('Thinned: 1 sample in ' + M.every + ' of each thread is shown (' + M.samples +
			' recorded); ticks, flame graphs and the top table are of the kept samples, a span\'s sample count of all.');
	if (M.spans_shown < M.spans)
		notes.push('Thinned: the ' + M.spans_shown + ' longest of ' + M.spans + ' spans are shown.');
	if (M.lost) notes.push(M.lost + ' samples were lost while recording.');
	if (!M.samples && !M.spans) notes.push('This recording holds no samples and no spans.');
	else if (!M.samples) notes.push('This recording holds no samples: spans only.');
	else if (!M.spans) notes.push('This recording holds no spans (record them with --span or --otel).');
	$('notes').textContent = notes.join(' ');

	/* Self and total samples per function, over every kept sample. */
	(function () {
		var per = new Uint32Array(D.k.length), self = {}, total = {}, n = 0;
		threads.forEach(function (t) { for (var k = 0; k < t.stacks.length; k++) per[t.stacks[k]]++; n += t.stacks.length; });
		for (var s = 0; s < D.k.length; s++) {
			if (!per[s]) continue;
			var st = D.k[s], seen = {};
			if (st.length) self[st[0]] = (self[st[0]] || 0) + per[s];
			for (var j = 0; j < st.length; j++) {
				if (seen[st[j]]) continue;
				seen[st[j]] = 1;
				total[st[j]] = (total[st[j]] || 0) + per[s];
			}
		}
		var rows = Object.keys(total).map(Number).sort(function (a, b) { return (self[b] || 0) - (self[a] || 0) || total[b] - total[a]; });
		var tb = $('top-table').tBodies[0];
		rows.slice(0, 30).forEach(function (f) {
			var tr = el('tr');
			tr.appendChild(el('td', pct(self[f] || 0, n)));
			tr.appendChild(el('td', pct(total[f], n)));
			tr.appendChild(el('td', fname(f)));
			tr.appendChild(el('td', fdso(f)));
			tb.appendChild(tr);
		});
		if (!rows.length) {
			var tr = el('tr'), td = el('td', 'No samples.');
			td.colSpan = 4;
			tr.appendChild(td);
			tb.appendChild(tr);
		}
	})();

	/* ---- flame graphs: the samples of a set of (thread, range), click to zoom, search ---- */
	function lowerBound(a, x) {
		var lo = 0, hi = a.length;
		while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
		return lo;
	}
	/* Samples of t inside [from, to], both ends in, as the span join counts them. */
	function samplesIn(t, from, to, fn) {
		var k = lowerBound(t.times, from);
		for (; k < t.times.length && t.times[k] <= to; k++) fn(t.stacks[k]);
	}
	/* merged: the parts' stacks under one root, not a frame per thread. */
	function buildTree(parts, merged) {
		var root = { name: 'all', n: 0, kids: {}, list: null };
		var byThread = parts.length > 1 && !merged;
		parts.forEach(function (p) {
			var per = {};
			samplesIn(p.t, p.from, p.to, function (s) { per[s] = (per[s] || 0) + 1; });
			Object.keys(per).forEach(function (s) {
				var c = per[s], st = D.k[s], node = root;
				root.n += c;
				if (byThread) node = child(node, p.t.name + ' (tid ' + p.t.tid + ')', c);
				for (var j = st.length - 1; j >= 0; j--) node = child(node, fname(st[j]), c, fdso(st[j]));
			});
		});
		return root;
	}
	function child(node, name, c, dso) {
		var k = node.kids[name];
		if (!k) k = node.kids[name] = { name: name, dso: dso || '', n: 0, kids: {}, list: null };
		k.n += c;
		return k;
	}
	function kidsOf(n) {
		if (!n.list) n.list = Object.keys(n.kids).map(function (k) { return n.kids[k]; }).sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
		return n.list;
	}
	function Flame(box, title) {
		this.box = box;
		box.textContent = '';
		var bar = el('div', null, 'fbar');
		this.summary = el('span', '');
		this.summary.setAttribute('role', 'status');
		var reset = el('button', 'Reset zoom');
		reset.type = 'button';
		this.search = el('input');
		this.search.type = 'search';
		this.search.placeholder = 'search functions';
		this.search.setAttribute('aria-label', 'Search the flame graph of ' + title);
		this.matched = el('span', '');
		this.matched.setAttribute('role', 'status');
		bar.appendChild(this.summary);
		bar.appendChild(reset);
		bar.appendChild(this.search);
		bar.appendChild(this.matched);
		box.appendChild(bar);
		/* Deep stacks scroll: the root stays in view at the bottom. */
		this.scroll = el('div', null, 'fscroll');
		this.graph = el('div', null, 'fbox');
		this.graph.setAttribute('role', 'tree');
		this.graph.setAttribute('aria-label', 'Flame graph of ' + title);
		this.scroll.appendChild(this.graph);
		box.appendChild(this.scroll);
		var self = this;
		reset.onclick = function () { self.zoom = self.root; self.draw(); };
		this.search.oninput = function () { self.draw(); };
	}
	/* ref: another tree (the rest's spans), against whose shares each frame is coloured. */
	Flame.prototype.set = function (root, ref) {
		this.root = this.zoom = root;
		this.ref = ref || null;
		this.draw();
	};
	/* The frame's change of share against ref (>0: grew), as the SVG of spanperf diff colours it. */
	function diffColor(delta, max) {
		var v = 255 - Math.round(200 * Math.min(1, Math.abs(delta) / (max || 1)));
		return delta > 0 ? 'rgb(255,' + v + ',' + v + ')' : 'rgb(' + v + ',' + v + ',255)';
	}
	Flame.prototype.draw = function () {
		var g = this.graph, root = this.root, z = this.zoom, q = this.search.value.toLowerCase(), self = this;
		g.textContent = '';
		if (!root || !root.n) { g.appendChild(el('p', 'No samples here.')); this.summary.textContent = ''; this.matched.textContent = ''; return; }
		this.summary.textContent = root.n + ' samples' + (z !== root ? ', zoomed to ' + z.name + ' (' + z.n + ')' : '');
		var path = [], found = false;
		(function up(n) {
			if (n === z) { found = true; return true; }
			var ks = kidsOf(n);
			for (var i = 0; i < ks.length; i++) { path.push(ks[i]); if (up(ks[i])) return true; path.pop(); }
			return false;
		})(root);
		var rows = [], maxDepth = 0, matchN = 0, W = g.clientWidth || 800;
		/* The zoomed node's ancestors span the whole width above it. */
		var chain = [root].concat(found ? path : []);
		/* With a reference tree, each row knows its frame there (the same path of names), or null. */
		var ref = this.ref, refAt = ref;
		chain.forEach(function (n, d) {
			if (d) refAt = refAt && refAt.kids[n.name] || null;
			rows.push({ n: n, d: d, x: 0, w: 1, r: refAt });
		});
		var base = chain.length - 1;
		(function walk(n, d, x, w, rn) {
			var ks = kidsOf(n), xx = x;
			ks.forEach(function (k) {
				var kw = w * k.n / n.n, rk = rn && rn.kids[k.name] || null;
				if (kw * W >= 0.5) { rows.push({ n: k, d: d + 1, x: xx, w: kw, r: rk }); walk(k, d + 1, xx, kw, rk); }
				xx += kw;
			});
		})(z, base, 0, 1, refAt);
		var maxDelta = 0;
		rows.forEach(function (r) {
			r.delta = ref ? r.n.n / root.n - (r.r && ref.n ? r.r.n / ref.n : 0) : 0;
			if (r.d && Math.abs(r.delta) > maxDelta) maxDelta = Math.abs(r.delta);
		});
		/* The share of samples under a matching frame, counting each sample once. */
		if (q) (function m(n) {
			if (n.name.toLowerCase().indexOf(q) >= 0) { matchN += n.n; return; }
			kidsOf(n).forEach(m);
		})(z);
		rows.forEach(function (r) { if (r.d > maxDepth) maxDepth = r.d; });
		g.style.height = ((maxDepth + 1) * 16) + 'px';
		rows.forEach(function (r) {
			var d = el('div', r.n.name, 'fn');
			d.style.left = (r.x * 100) + '%';
			d.style.width = (r.w * 100) + '%';
			d.style.top = ((maxDepth - r.d) * 16) + 'px';
			d.style.background = ref ? diffColor(r.delta, maxDelta) :
				'hsl(' + (20 + hue(r.n.name) % 40) + ',85%,' + (58 + hue(r.n.dso + r.n.name) % 20) + '%)';
			var label = r.n.name + ' ' + r.n.n + ' samples, ' + pct(r.n.n, root.n);
			if (ref) {
				label += ' (the rest: ' + pct(r.r ? r.r.n : 0, ref.n) + ', ' + (r.delta >= 0 ? '+' : '') + (100 * r.delta).toFixed(1) + ' points)';
				d.dataset.delta = r.delta;
			}
			d.title = label + (r.n.dso ? ' in ' + r.n.dso : '');
			d.setAttribute('role', 'treeitem');
			d.setAttribute('aria-label', label);
			d.dataset.name = r.n.name;
			d.dataset.samples = r.n.n;
			d.tabIndex = 0;
			if (q && r.n.name.toLowerCase().indexOf(q) >= 0) d.classList.add('match');
			d.onclick = d.onkeydown = function (ev) {
				if (ev.type === 'keydown' && ev.key !== 'Enter') return;
				self.zoom = r.n === self.zoom ? self.root : r.n;
				self.draw();
			};
			g.appendChild(d);
		});
		this.matched.textContent = q ? 'matched ' + pct(matchN, z.n) : '';
		this.scroll.scrollTop = this.scroll.scrollHeight;
	};

	/* ---- the timeline ---- */
	var canvas = $('tl'), box = $('tl-box'), scroller = $('tl-scroll'), ctx = canvas.getContext('2d');
	var span0 = Math.max(M.dur, 1);
	var view = { from: 0, to: span0 * 1.002, y: 0 }, sel = null, hoverSpan = null, query = '';
	var W = 0, H = 0, dpr = window.devicePixelRatio || 1;
	$('tl-spacer').style.height = totalH + 'px';

	function resize() {
		W = canvas.clientWidth;
		H = canvas.clientHeight;
		canvas.width = Math.round(W * dpr);
		canvas.height = Math.round(H * dpr);
		draw();
	}
	function xOf(t) { return LABEL_W + (t - view.from) / (view.to - view.from) * (W - LABEL_W); }
	function tOf(x) { return view.from + (x - LABEL_W) / (W - LABEL_W) * (view.to - view.from); }
	function matches(s) { return !query || s.name.toLowerCase().indexOf(query) >= 0 || s.th.name.toLowerCase().indexOf(query) >= 0; }

	function drawRuler() {
		ctx.fillStyle = '#f6f8fa';
		ctx.fillRect(0, 0, W, RULER_H);
		ctx.fillStyle = '#57606a';
		ctx.font = '11px system-ui, sans-serif';
		var span = view.to - view.from, step = Math.pow(10, Math.floor(Math.log10(span / 8)));
		if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
		for (var t = Math.ceil(view.from / step) * step; t <= view.to; t += step) {
			var x = xOf(t);
			ctx.fillRect(x, RULER_H - 6, 1, 6);
			ctx.fillText(fmtDur(t), x + 3, 12);
		}
		ctx.fillText('time from start', 6, 12);
	}
	function drawLane(t, y) {
		var x0 = LABEL_W, pw = W - LABEL_W, nsPerPx = (view.to - view.from) / pw;
		/* Off-CPU blocks: where the thread waited, grey. */
		ctx.fillStyle = '#b8c4d6';
		for (var k = 0; k < t.off.length; k += 2) {
			if (t.off[k + 1] < view.from || t.off[k] > view.to) continue;
			var a = Math.max(xOf(t.off[k]), x0), b = Math.min(xOf(t.off[k + 1]), W);
			ctx.fillRect(a, y + 2, Math.max(b - a, 1), TICK_H - 4);
		}
		/* Samples per pixel, as a share of what one fully busy CPU would give. */
		if (t.times.length) {
			var full = M.freq ? nsPerPx * M.freq / 1e9 / M.every : 1, bins = new Uint32Array(Math.ceil(pw) + 1);
			var i = lowerBound(t.times, view.from), n = t.times.length;
			for (; i < n && t.times[i] <= view.to; i++) bins[((t.times[i] - view.from) / nsPerPx) | 0]++;
			ctx.fillStyle = '#d1480b';
			for (var px = 0; px < bins.length; px++) {
				if (!bins[px]) continue;
				var h = Math.max(2, Math.min(1, bins[px] / Math.max(full, 1e-9)) * TICK_H);
				ctx.fillRect(x0 + px, y + TICK_H - h, 1, h);
			}
		}
		/* Spans, nested, skipping those that land on an already drawn pixel of their row. */
		if (!t.spans.length) return;
		var lastPx = [], sp = t.spans, lo = 0, hi = sp.length, from = view.from - t.maxDur;
		while (lo < hi) { var m = (lo + hi) >> 1; if (sp[m].start < from) lo = m + 1; else hi = m; }
		ctx.font = '11px system-ui, sans-serif';
		for (var j = lo; j < sp.length && sp[j].start <= view.to; j++) {
			var s = sp[j];
			if (s.end < view.from) continue;
			var sx = Math.max(xOf(s.start), x0), ex = Math.min(xOf(s.end), W), sy = y + TICK_H + s.depth * ROW_H;
			if (sy > H) break;
			var wpx = Math.max(ex - sx, 1);
			if (wpx < 2 && lastPx[s.depth] === (sx | 0)) continue;
			lastPx[s.depth] = sx | 0;
			ctx.globalAlpha = matches(s) ? 1 : 0.25;
			ctx.fillStyle = s.color;
			ctx.fillRect(sx, sy, wpx, ROW_H - 1);
			if (s === hoverSpan) { ctx.strokeStyle = '#000'; ctx.strokeRect(sx + 0.5, sy + 0.5, wpx - 1, ROW_H - 2); }
			if (wpx > 30) {
				ctx.fillStyle = '#111';
				ctx.save();
				ctx.beginPath();
				ctx.rect(sx, sy, wpx, ROW_H);
				ctx.clip();
				ctx.fillText(s.name + ' ' + fmtDur(s.dur), sx + 2, sy + 10);
				ctx.restore();
			}
		}
		ctx.globalAlpha = 1;
	}
	var drawPending = 0;
	/* Input comes faster than frames: draw once per frame. */
	function draw() {
		if (!drawPending) drawPending = requestAnimationFrame(drawNow);
	}
	function drawNow() {
		drawPending = 0;
		/* A window too narrow (or not laid out yet) has no room for the lanes. */
		if (W - LABEL_W < 20 || H < RULER_H) return;
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		ctx.clearRect(0, 0, W, H);
		ctx.save();
		ctx.translate(0, -view.y);
		plist.forEach(function (p) {
			if (p.y - view.y > H || p.y + PROC_H - view.y < 0) return;
			ctx.fillStyle = '#eaeef2';
			ctx.fillRect(0, p.y, W, PROC_H);
			ctx.fillStyle = '#24292f';
			ctx.font = 'bold 11px system-ui, sans-serif';
			ctx.fillText(p.name + ' (pid ' + p.pid + ')', 4, p.y + 12);
		});
		lanes.forEach(function (t) {
			if (t.y - view.y > H || t.y + t.h - view.y < RULER_H) return;
			ctx.save();
			ctx.beginPath();
			ctx.rect(LABEL_W, t.y, W - LABEL_W, t.h);
			ctx.clip();
			drawLane(t, t.y);
			ctx.restore();
			ctx.fillStyle = query && t.name.toLowerCase().indexOf(query) >= 0 ? '#e040fb' : '#24292f';
			ctx.font = '11px system-ui, sans-serif';
			ctx.save();
			ctx.beginPath();
			ctx.rect(0, t.y, LABEL_W - 4, t.h);
			ctx.clip();
			ctx.fillText(t.name + ' ' + t.tid, 12, t.y + 11);
			ctx.restore();
			ctx.fillStyle = '#eaeef2';
			ctx.fillRect(0, t.y + t.h - 1, W, 1);
		});
		if (sel) {
			ctx.fillStyle = 'rgba(9,105,218,0.15)';
			var a = xOf(sel.from), b = xOf(sel.to);
			if (sel.t) ctx.fillRect(a, sel.t.y, b - a, sel.t.h);
			else ctx.fillRect(a, view.y + RULER_H, b - a, H);
		}
		ctx.restore();
		drawRuler();
		if (sel) {
			ctx.fillStyle = 'rgba(9,105,218,0.35)';
			ctx.fillRect(xOf(sel.from), 0, xOf(sel.to) - xOf(sel.from), RULER_H);
		}
		$('view-status').textContent = 'view ' + fmtDur(view.from) + ' to ' + fmtDur(view.to);
		scheduleA11y();
	}

	function laneAt(y) {
		var yy = y + view.y;
		for (var i = 0; i < lanes.length; i++) if (yy >= lanes[i].y && yy < lanes[i].y + lanes[i].h) return lanes[i];
		return null;
	}
	function spanAt(x, y) {
		var t = laneAt(y);
		if (!t || x < LABEL_W) return null;
		var d = Math.floor((y + view.y - t.y - TICK_H) / ROW_H);
		if (d < 0 || d >= t.depth) return null;
		var tm = tOf(x), slack = 2 * (view.to - view.from) / (W - LABEL_W), best = null;
		t.spans.forEach(function (s) {
			if (s.depth === d && s.start - slack <= tm && tm <= s.end + slack && (!best || s.dur < best.dur)) best = s;
		});
		return best;
	}

	/* Wheel zooms around the pointer (shift-wheel scrolls the lanes); drag pans; shift-drag or the ruler selects. */
	canvas.addEventListener('wheel', function (ev) {
		ev.preventDefault();
		var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left;
		if (ev.shiftKey) { scroller.scrollTop += ev.deltaY || ev.deltaX; return; }
		if (x < LABEL_W) { scroller.scrollTop += ev.deltaY; return; }
		var t = tOf(x), f = Math.exp(ev.deltaY * 0.0015), span = (view.to - view.from) * f;
		span = Math.min(Math.max(span, 1000), span0 * 1.002);
		view.from = t - (t - view.from) / (view.to - view.from) * span;
		view.to = view.from + span;
		clampView();
		draw();
	}, { passive: false });
	function clampView() {
		var span = view.to - view.from;
		if (view.from < 0) view.from = 0;
		if (view.from + span > span0 * 1.002) view.from = Math.max(0, span0 * 1.002 - span);
		view.to = view.from + span;
	}
	scroller.addEventListener('scroll', function () { view.y = scroller.scrollTop; draw(); });
	var drag = null;
	canvas.addEventListener('mousedown', function (ev) {
		var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
		var mode = y < RULER_H ? 'select-all' : ev.shiftKey ? 'select' : 'pan';
		drag = { x: x, y: y, from: view.from, to: view.to, mode: mode, t: mode === 'select' ? laneAt(y) : null, moved: false };
		canvas.classList.add('dragging');
		ev.preventDefault();
	});
	window.addEventListener('mousemove', function (ev) {
		var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
		if (!drag) {
			var s = spanAt(x, y);
			if (s !== hoverSpan) { hoverSpan = s; canvas.title = s ? s.label : ''; draw(); }
			return;
		}
		if (Math.abs(x - drag.x) > 3) drag.moved = true;
		if (!drag.moved) return;
		if (drag.mode === 'pan') {
			var dt = (x - drag.x) / (W - LABEL_W) * (drag.to - drag.from);
			view.from = drag.from - dt;
			view.to = drag.to - dt;
			clampView();
		} else {
			var a = tOf(Math.max(Math.min(drag.x, x), LABEL_W)), b = tOf(Math.max(drag.x, x));
			sel = { from: a, to: b, t: drag.t };
		}
		draw();
	});
	window.addEventListener('mouseup', function (ev) {
		if (!drag) return;
		var r = canvas.getBoundingClientRect(), d = drag;
		drag = null;
		canvas.classList.remove('dragging');
		if (!d.moved) {
			var s = spanAt(ev.clientX - r.left, ev.clientY - r.top);
			if (s) showSpan(s);
			return;
		}
		if (d.mode !== 'pan' && sel) showSelection(sel);
	});
	$('zoom-reset').onclick = function () { view.from = 0; view.to = span0 * 1.002; draw(); };
	$('select-view').onclick = function () { sel = { from: view.from, to: view.to, t: null }; draw(); showSelection(sel); };
	$('search').addEventListener('input', function () {
		query = this.value.toLowerCase();
		var n = query ? spans.filter(matches).length : 0;
		$('search-status').textContent = query ? n + ' of ' + spans.length + ' spans match' : '';
		draw();
		[spanFlame, selFlame, whyFlame, whyRestFlame].forEach(function (f) { if (f) { f.search.value = query; f.draw(); } });
	});
	window.addEventListener('resize', resize);

	/* ---- the accessible twin of the canvas: lanes, and the spans in view ---- */
	var a11yTimer = 0, A11Y_MAX = 2000;
	(function () {
		var ul = $('a11y-lanes');
		lanes.forEach(function (t) {
			var p = procs[t.pid], li = el('li', 'thread ' + t.name + ' (tid ' + t.tid + ') of process ' + p.name + ' (pid ' + p.pid +
				'): ' + t.samples + ' samples, ' + t.spans.length + ' spans');
			li.dataset.tid = t.tid;
			ul.appendChild(li);
		});
	})();
	function scheduleA11y() {
		if (a11yTimer) return;
		a11yTimer = setTimeout(syncA11y, 250);
	}
	function syncA11y() {
		a11yTimer = 0;
		var tb = $('a11y-spans').tBodies[0], n = 0, shown = 0;
		tb.textContent = '';
		var frag = document.createDocumentFragment();
		for (var i = 0; i < spans.length; i++) {
			var s = spans[i];
			if (s.end < view.from || s.start > view.to) continue;
			n++;
			if (shown >= A11Y_MAX) continue;
			shown++;
			var tr = el('tr'), td = el('td'), b = el('button', s.label);
			b.type = 'button';
			b.setAttribute('aria-label', s.label);
			b.dataset.span = s.i;
			b.dataset.tid = s.th.tid;
			b.dataset.startNs = absNs(s.start);
			b.onclick = showSpanOf;
			td.appendChild(b);
			tr.appendChild(td);
			frag.appendChild(tr);
		}
		tb.appendChild(frag);
		$('a11y-caption').textContent = n > shown ? 'The first ' + shown + ' of ' + n + ' spans in view; zoom in for the rest' :
			n + ' spans in view';
	}
	function showSpanOf() { showSpan(spans[+this.dataset.span]); }

	/* ---- the span panel ---- */
	var spanFlame = null, selFlame = null;
	var WALL = [['on_cpu_ns', 'on CPU', '#d1480b'], ['runq_ns', 'run queue', '#bf8700'], ['sleep_ns', 'sleep', '#8fa3c2'],
		['blocked_ns', 'blocked', '#5a6f94'], ['off_cpu_ns', 'off CPU', '#b8c4d6']];
	function showSpan(s) {
		var panel = $('span-panel');
		panel.hidden = false;
		panel.dataset.span = s.i;
		$('sp-title').textContent = s.label;
		var dl = $('sp-facts');
		dl.textContent = '';
		function f(k, v, id) { dl.appendChild(el('dt', k)); var dd = el('dd', v); if (id) dd.id = id; dl.appendChild(dd); }
		f('name', s.name, 'sp-name');
		f('source', s.source);
		f('span id', s.spanId + (s.idsRecorded ? '' : ' (made up by spanperf, as --format otlp-json writes it)'));
		if (s.traceId) f('trace id', s.traceId);
		f('thread', s.th.name + ' (tid ' + s.th.tid + ', pid ' + s.th.pid + ')', 'sp-thread');
		f('start', fmtMs(s.start) + ' from the recording\'s start (' + absNs(s.start) + ' ns)');
		f('duration', fmtMs(s.dur) + (s.unfinished ? ', unfinished (its thread exited inside it)' : ''), 'sp-duration');
		f('samples', String(s.samples), 'sp-samples');
		/* The wall split: the JSON row's own fields, whichever the recording has. */
		var tb = $('sp-wall').tBodies[0], bar = $('sp-wallbar');
		tb.textContent = '';
		bar.textContent = '';
		WALL.forEach(function (w) {
			if (!(w[0] in s.wall)) return;
			var v = s.wall[w[0]], tr = el('tr');
			tr.dataset.key = w[0];
			tr.appendChild(el('th', w[1]));
			var td = el('td', v === null ? 'not recorded' : fmtMs(v), 'num');
			td.dataset.ns = v === null ? '' : String(v);
			tr.appendChild(td);
			tr.appendChild(el('td', v === null ? '' : pct(v, s.dur), 'num'));
			tb.appendChild(tr);
			/* The bar: off CPU only where the recording does not split it into sleep and blocked. */
			var split = 'sleep_ns' in s.wall || 'blocked_ns' in s.wall;
			if (v && (w[0] !== 'off_cpu_ns' || !split)) {
				var seg = el('div');
				seg.style.width = Math.min(100, 100 * v / s.dur) + '%';
				seg.style.background = w[2];
				seg.title = w[1] + ' ' + fmtMs(v);
				bar.appendChild(seg);
			}
		});
		var ct = $('sp-counters').tBodies[0];
		ct.textContent = '';
		M.counters.forEach(function (c, k) {
			if (k >= s.counters.length) return;
			var name = S[c], v = s.counters[k], tr = el('tr');
			tr.appendChild(el('th', name));
			tr.appendChild(el('td', name === 'task-clock' || name === 'cpu-clock' ? fmtMs(v) : String(v), 'num'));
			ct.appendChild(tr);
		});
		if (!s.counters.length) ct.appendChild(el('tr')).appendChild(el('td', 'none recorded'));
		var ol = $('sp-top');
		ol.textContent = '';
		s.top.forEach(function (t) {
			var li = el('li', t.sym + ' ' + t.samples + ' samples (' + pct(t.samples, s.samples) + ')');
			li.dataset.sym = t.sym;
			li.dataset.samples = t.samples;
			ol.appendChild(li);
		});
		if (!s.top.length) ol.appendChild(el('li', 'no samples inside'));
		var bl = $('sp-blocked');
		bl.textContent = '';
		var tops = s.wall.off_cpu_top || [];
		if (s.wall.off_cpu_ns === null || s.wall.off_cpu_ns === undefined)
			bl.appendChild(el('p', 'Off-CPU time was not recorded (record with --off-cpu).'));
		else if (!tops.length) bl.appendChild(el('p', 'It never blocked.'));
		tops.forEach(function (b) {
			bl.appendChild(el('div', fmtMs(b.ns) + (b.waker ? ', woken by ' + b.waker : '') + ':'));
			bl.appendChild(el('div', (b.stack || []).join('\n'), 'stack'));
			if (b.waker_stack) bl.appendChild(el('div', 'waker: ' + b.waker_stack.join('\n'), 'stack'));
		});
		if (!spanFlame) spanFlame = new Flame($('sp-flame'), 'the span');
		spanFlame.search.value = query;
		spanFlame.set(buildTree([{ t: s.th, from: s.start, to: s.end }]));
		panel.scrollIntoView({ block: 'nearest' });
	}
	function showSelection(r) {
		var panel = $('sel-panel'), parts = r.t ? [r.t] : lanes;
		panel.hidden = false;
		$('sel-title').textContent = 'Selection: ' + fmtDur(r.to - r.from) + ' from ' + fmtDur(r.from) + ' on ' +
			(r.t ? 'thread ' + r.t.name + ' (tid ' + r.t.tid + ')' : 'all threads');
		if (!selFlame) selFlame = new Flame($('sel-flame'), 'the selection');
		selFlame.search.value = query;
		selFlame.set(buildTree(parts.map(function (t) { return { t: t, from: r.from, to: r.to }; })));
		panel.scrollIntoView({ block: 'nearest' });
	}
	Array.prototype.forEach.call(document.querySelectorAll('.panel .close'), function (b) {
		b.onclick = function () { b.closest('.panel').hidden = true; };
	});

	/*
	 * ---- why slow: each span name's slowest tenth against the rest, as
	 * report --spans --why-slow splits them (slowest first, at least one on
	 * each side); the page compares the spans it keeps ----
	 */
	var WHY_PCT = 10, whyFlame = null, whyRestFlame = null, whyNames = [], whyBy = {};
	spans.forEach(function (s) {
		if (s.unfinished) return;
		var g = whyBy[s.name];
		if (!g) { g = whyBy[s.name] = { name: s.name, spans: [] }; whyNames.push(g); }
		g.spans.push(s);
	});
	whyNames.forEach(function (g) {
		var n = g.spans.length, k = Math.max(1, Math.ceil(n * WHY_PCT / 100 - 1e-9));
		g.spans.sort(function (a, b) { return b.dur - a.dur || a.start - b.start; });
		if (k >= n && n > 1) k = n - 1;
		g.slow = g.spans.slice(0, k);
		g.rest = g.spans.slice(k);
	});
	/* The median of spans sorted slowest first: the middle one, the faster of two. */
	function p50Of(list) { return list.length ? list[list.length >> 1].dur : 0; }
	function meanOf(list, key) {
		var sum = 0, n = 0;
		list.forEach(function (s) { var v = key === 'dur' ? s.dur : s.wall[key]; if (v !== null && v !== undefined) { sum += v; n++; } });
		return n ? sum / n : null;
	}
	(function () {
		var tb = $('why-names').tBodies[0];
		whyNames.forEach(function (g) {
			var tr = el('tr'), td = el('td'), b = el('button', g.name);
			b.type = 'button';
			b.dataset.name = g.name;
			b.setAttribute('aria-label', 'Why are the slowest ' + WHY_PCT + '% of ' + g.name + ' slow?');
			b.onclick = function () { showWhy(g); };
			td.appendChild(b);
			tr.appendChild(td);
			tr.appendChild(el('td', String(g.spans.length), 'num'));
			tr.appendChild(el('td', fmtDur(p50Of(g.spans)), 'num'));
			tr.appendChild(el('td', fmtDur(g.slow[g.slow.length - 1].dur), 'num'));
			tb.appendChild(tr);
		});
		if (!whyNames.length) $('why-section').hidden = true;
	})();
	/* Each leaf function's samples in a group's spans, and their sum. */
	function leaves(list) {
		var per = {}, n = 0;
		list.forEach(function (s) {
			samplesIn(s.th, s.start, s.end, function (k) { var st = D.k[k]; if (st.length) { per[fname(st[0])] = (per[fname(st[0])] || 0) + 1; n++; } });
		});
		return { per: per, n: n };
	}
	/* Who ended each group's waits: by comm, as --why-slow, with the stack of the longest wait it ended. */
	function wakersOf(list) {
		var per = {};
		list.forEach(function (s) {
			(s.wall.woken_by || []).forEach(function (w) {
				var a = per[w.comm];
				if (!a) a = per[w.comm] = { comm: w.comm, stack: w.stack || [], ns: 0, best: -1 };
				if (w.ns > a.best) { a.best = w.ns; a.stack = w.stack || []; }
				a.ns += w.ns;
			});
		});
		return per;
	}
	function showWhy(g) {
		var panel = $('why-panel'), nSlow = g.slow.length, nRest = g.rest.length;
		panel.hidden = false;
		panel.dataset.name = g.name;
		$('why-title').textContent = 'Why slow: ' + g.name + ': the slowest ' + WHY_PCT + '% (' + nSlow + ' spans) against the rest (' + nRest + ')';
		var tb = $('why-groups').tBodies[0];
		tb.textContent = '';
		[['count', null], ['p50', 'p50'], ['mean', 'dur'], ['on CPU', 'on_cpu_ns'], ['run queue', 'runq_ns'], ['asleep', 'sleep_ns'],
		 ['blocked', 'blocked_ns']].forEach(function (row) {
			var tr = el('tr');
			tr.dataset.key = row[1] || 'count';
			tr.appendChild(el('th', row[0]));
			[g.slow, g.rest].forEach(function (list) {
				var v = row[1] === null ? list.length : row[1] === 'p50' ? p50Of(list) : meanOf(list, row[1]);
				var td = el('td', row[1] === null ? String(v) : v === null ? '-' : fmtMs(v), 'num');
				td.dataset.value = v === null ? '' : String(v);
				tr.appendChild(td);
			});
			tb.appendChild(tr);
		});
		/* What a function explains: its samples per slow span less per span of the rest, in CPU time. */
		var ls = leaves(g.slow), lr = leaves(g.rest), each = M.freq ? 1e9 / M.freq * M.every : 0;
		var funcs = Object.keys(ls.per).map(function (f) {
			return { f: f, ex: ls.per[f] / nSlow - (nRest ? (lr.per[f] || 0) / nRest : 0), slow: ls.per[f], rest: lr.per[f] || 0 };
		}).filter(function (x) { return x.ex > 0; }).sort(function (a, b) { return b.ex - a.ex || (a.f < b.f ? -1 : 1); }).slice(0, 10);
		var ft = $('why-funcs').tBodies[0];
		ft.textContent = '';
		funcs.forEach(function (x) {
			var tr = el('tr');
			tr.dataset.sym = x.f;
			tr.appendChild(el('td', each ? fmtMs(x.ex * each) : x.ex.toFixed(1) + ' samples', 'num'));
			tr.appendChild(el('td', pct(x.slow, ls.n), 'num'));
			tr.appendChild(el('td', pct(x.rest, lr.n), 'num'));
			tr.appendChild(el('td', x.f));
			ft.appendChild(tr);
		});
		if (!funcs.length) ft.appendChild(el('tr')).appendChild(el('td', 'none: no function has more samples per slow span'));
		var ws = wakersOf(g.slow), wr = wakersOf(g.rest);
		var wakers = Object.keys(ws).map(function (k) {
			return { w: ws[k], ex: ws[k].ns / nSlow - (nRest && wr[k] ? wr[k].ns / nRest : 0) };
		}).filter(function (x) { return x.ex > 0; }).sort(function (a, b) { return b.ex - a.ex; }).slice(0, 5);
		var wt = $('why-wakers').tBodies[0];
		wt.textContent = '';
		wakers.forEach(function (x) {
			var tr = el('tr');
			tr.dataset.comm = x.w.comm;
			tr.appendChild(el('td', fmtMs(x.ex), 'num'));
			tr.appendChild(el('td', x.w.comm));
			tr.appendChild(el('td', x.w.stack.join('\n')));
			wt.appendChild(tr);
		});
		if (!wakers.length) wt.appendChild(el('tr')).appendChild(el('td', 'none named (record with --off-cpu)'));
		var parts = function (list) { return list.map(function (s) { return { t: s.th, from: s.start, to: s.end }; }); };
		/* One thread's frames under one root: the spans' threads are not the question here. */
		var rest = buildTree(parts(g.rest), true), slow = buildTree(parts(g.slow), true);
		if (!whyFlame) whyFlame = new Flame($('why-flame'), 'the slow spans');
		if (!whyRestFlame) whyRestFlame = new Flame($('why-rest-flame'), 'the rest');
		whyFlame.search.value = whyRestFlame.search.value = query;
		whyFlame.set(slow, rest);
		whyRestFlame.set(rest);
		panel.scrollIntoView({ block: 'nearest' });
	}

	/*
	 * Where span i's bar is on the screen (its lane scrolled into view), for
	 * tests that click it as a person would; null when it is too narrow to hit.
	 */
	window.spanperfLocate = function (i) {
		var s = spans[i];
		if (!s) return null;
		var want = s.th.y + TICK_H + s.depth * ROW_H - RULER_H - 4;
		if (want < view.y || want + ROW_H > view.y + H - RULER_H) { scroller.scrollTop = want; view.y = scroller.scrollTop; drawNow(); }
		var a = Math.max(xOf(s.start), LABEL_W), b = Math.min(xOf(s.end), W);
		if (b - a < 1) return null;
		var r = canvas.getBoundingClientRect();
		return { x: r.left + (a + b) / 2, y: r.top + s.th.y + TICK_H + s.depth * ROW_H + ROW_H / 2 - view.y };
	};
	resize();
	drawNow();
	syncA11y();
	/* For tests and benchmarks: when the page was ready, in ms from the script's start. */
	window.spanperfTime = function (fn, n) { var t = performance.now(); for (var i = 0; i < n; i++) fn === 'draw' ? drawNow() : syncA11y(); return (performance.now() - t) / n; };
	window.spanperfReady = { ms: performance.now() - t0, spans: spans.length, threads: threads.length };
	document.body.dataset.ready = '1';
})();
