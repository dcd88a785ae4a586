// SPDX-License-Identifier: GPL-2.0
/*
 * node drive.js MODE ARGS...: opens a file in Debian's headless Chromium
 * and prints what a person would see as one JSON object on stdout.
 *   page FILE.html PNG [TID]  spanperf report --html's page: errors, lanes, spans by accessible
 *                       name, one span (of TID) clicked on the canvas, a range dragged on the ruler
 *   page-static FILE    the same page only looked at: errors, lanes, spans, notes
 *   speedscope FILE SYM the real speedscope (npm bundle from file://) with FILE loaded:
 *                       errors, its thread list, its sandwich search for SYM
 *   svg FILE.svg SYM    report --flamegraph's (or diff's) SVG: errors, each frame drawn (tooltip,
 *                       rendered fill, width), what its search for SYM matched
 *   why FILE.html NAME  the page's span names: NAME clicked, and its why-slow panel as shown: the
 *                       groups' figures, the functions and wakers, the slow flame graph's frames
 *   load FILE.html      the page's load time, from navigation until it has drawn (bench)
 *   speedscope-load F   speedscope's import of F, from choosing the file until it says it is done
 * Console errors and uncaught exceptions are what a user would see break: all are returned.
 */
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
	'--disable-sync', '--no-first-run'];

async function open(browser, url, out) {
	const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
	out.errors = [];
	out.console = [];
	page.on('pageerror', e => out.errors.push('pageerror: ' + e.message));
	page.on('console', m => {
		if (m.type() === 'error') out.errors.push('console: ' + m.text());
		else out.console.push(m.text());
	});
	page.on('dialog', d => d.dismiss());
	// Nothing may leave the machine: any request but file:// and data: is noted and refused.
	out.requests = [];
	await page.route('**/*', r => {
		const u = r.request().url();
		if (u.startsWith('file:') || u.startsWith('data:')) return r.continue();
		out.requests.push(u);
		return r.abort();
	});
	const t0 = out.t_start = Date.now();
	await page.goto(url);
	out.load_ms = Date.now() - t0;
	return page;
}

async function drivePage(page, out, png, still) {
	await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
	out.ready = await page.evaluate(() => window.spanperfReady);
	out.pwned = await page.evaluate(() => window.__pwned === undefined ? null : String(window.__pwned));
	out.notes = await page.textContent('#notes');
	out.meta = await page.textContent('#meta');
	out.lanes = await page.$$eval('#a11y-lanes li', ls => ls.map(l => ({ tid: +l.dataset.tid, text: l.textContent })));
	// Every span's accessible name, as the table the page keeps in step with the view gives it.
	await page.waitForTimeout(300);
	out.spans = await page.$$eval('#a11y-spans button', bs => bs.map(b => ({
		label: b.getAttribute('aria-label'), tid: +b.dataset.tid, start_ns: b.dataset.startNs, i: +b.dataset.span })));
	out.caption = await page.textContent('#a11y-caption');
	out.titles = await page.evaluate(() => [document.title, document.getElementById('title').textContent]);
	if (still)
		return;
	// The longest span (of thread tid, if given) clicked on the canvas where it is drawn.
	const pick = await page.evaluate(tid => {
		var best = -1, bd = -1, bs = document.querySelectorAll('#a11y-spans button');
		for (var b of bs) {
			if (tid && +b.dataset.tid !== tid) continue;
			var loc = window.spanperfLocate(+b.dataset.span);
			if (loc && b.textContent.length && +b.dataset.span >= 0) {
				var w = b.getAttribute('aria-label').match(/ ([0-9.]+) (ns|µs|ms|s) on /);
				var ns = w ? parseFloat(w[1]) * { 'ns': 1, 'µs': 1e3, 'ms': 1e6, 's': 1e9 }[w[2]] : 0;
				if (ns > bd) { bd = ns; best = +b.dataset.span; }
			}
		}
		return best;
	}, +(process.argv[5] || 0));
	if (pick >= 0) {
		const loc = await page.evaluate(i => window.spanperfLocate(i), pick);
		await page.mouse.click(loc.x, loc.y);
		await page.waitForSelector('#span-panel:not([hidden])', { timeout: 30000 });
		out.clicked = await page.evaluate(() => {
			var p = document.getElementById('span-panel');
			var wall = {};
			for (var tr of p.querySelectorAll('#sp-wall tr')) wall[tr.dataset.key] = tr.querySelector('td').dataset.ns;
			return {
				span: +p.dataset.span,
				start_ns: document.querySelector('#a11y-spans button[data-span="' + p.dataset.span + '"]').dataset.startNs,
				title: document.getElementById('sp-title').textContent,
				samples: document.getElementById('sp-samples').textContent,
				top: Array.prototype.map.call(p.querySelectorAll('#sp-top li'), l => [l.dataset.sym, +l.dataset.samples]),
				wall: wall,
				flame: Array.prototype.map.call(p.querySelectorAll('#sp-flame .fn'), d => [d.dataset.name, +d.dataset.samples]),
			};
		});
	}
	// A range of all threads: dragged along the time ruler, from the left of the lanes to the right end.
	await page.$eval('#tl', c => c.scrollIntoView());
	const box = await page.$eval('#tl', c => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width]; });
	await page.mouse.move(box[0] + 205, box[1] + 8);
	await page.mouse.down();
	await page.mouse.move(box[0] + (205 + box[2]) / 2, box[1] + 8, { steps: 4 });
	await page.mouse.move(box[0] + box[2] - 2, box[1] + 8, { steps: 4 });
	await page.mouse.up();
	await page.waitForSelector('#sel-panel:not([hidden])', { timeout: 30000 });
	out.selection = await page.evaluate(() => ({
		title: document.getElementById('sel-title').textContent,
		flame: Array.prototype.map.call(document.querySelectorAll('#sel-flame .fn'), d => [d.dataset.name, +d.dataset.samples]),
	}));
	// Its search, as a person types it.
	await page.fill('#sel-flame input[type=search]', 'burn');
	out.selection.matched = await page.textContent('#sel-flame [role=status]:last-child');
	if (png) await page.screenshot({ path: png, fullPage: true });
}

async function driveSpeedscope(page, out, file, sym) {
	// Loaded when speedscope says its import is done (console.timeEnd('import')), or failed.
	const imported = page.waitForEvent('console', { predicate: m => /^import: |Failed to load/.test(m.text()),
		timeout: 120000 });
	await page.setInputFiles('input#file', file);
	await imported;
	out.failed = await page.evaluate(() => document.body.textContent.includes('Something went wrong'));
	if (out.failed)
		return;
	// The thread list: the profile selector's table, opened as a person would, from the title.
	const title = page.locator('text=/\\(\\d+\\/\\d+\\)/').first();
	const want = process.argv[5];
	const shows = w => page.waitForFunction(w => Array.from(document.querySelectorAll('span'))
		.some(s => /\(\d+\/\d+\)/.test(s.textContent) && s.textContent.startsWith(w + ' (tid ')), w,
		{ timeout: 5000 }).then(() => true, () => false);
	// The thread named argv[5], chosen from the list by its name (again if a busy machine lost the click).
	for (let tries = 0; tries < 3; tries++) {
		await title.click();
		const filter = page.locator('input[placeholder="Filter..."]');
		await filter.waitFor({ state: 'visible' });
		if (!out.threads)
			out.threads = await page.$$eval('tr[title]', ts => ts.map(t => t.getAttribute('title')));
		if (!want) {
			await page.keyboard.press('Escape');
			break;
		}
		await filter.fill(want);
		await page.locator('tr[title^="' + want.replace(/"/g, '') + ' (tid "]').first().click();
		if (await shows(want))
			break;
	}
	out.active = await page.locator('text=/\\(\\d+\\/\\d+\\)/').first().locator('..').textContent().catch(() => '');
	await page.getByText('Sandwich').click();
	await page.waitForFunction(() => document.body.textContent.includes('Symbol Name'));
	const box = page.locator('input:not([placeholder="Filter..."]):not([type=file])').first();
	for (let tries = 0; tries < 3; tries++) {
		await page.keyboard.press('Control+f');
		if (await box.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false))
			break;
	}
	await box.fill(sym);
	// Until the table has followed the search: every row names it, or none matched.
	await page.waitForFunction(q => {
		if (document.body.textContent.includes('No symbol names match')) return true;
		var rows = Array.from(document.querySelectorAll('table tr'), r => r.textContent);
		var h = rows.findIndex(r => r.includes('Symbol Name'));
		return h >= 0 && rows.length > h + 1 && rows.slice(h + 1).every(r => r.includes(q));
	}, sym, { timeout: 20000 }).catch(() => {});
	// The sandwich view's rows of functions, after its header: not the thread list's.
	out.found = await page.$$eval('table tr', ts => {
		var rows = ts.map(t => t.textContent), h = rows.findIndex(r => r.includes('Symbol Name'));
		return h < 0 ? [] : rows.slice(h + 1);
	});
	out.no_match = await page.evaluate(() => document.body.textContent.includes('No symbol names match'));
}

async function driveSvg(page, out, sym) {
	await page.waitForSelector('#frames', { timeout: 10000 });
	// Each frame drawn, before the search recolours them: its tooltip, its fill as rendered, its width.
	out.drawn = await page.$$eval('g.f', fs => fs.filter(f => f.style.display !== 'none').map(f => {
		const r = f.querySelector('rect');
		return { title: f.querySelector('title').textContent, fill: getComputedStyle(r).fill,
			width: r.getBoundingClientRect().width };
	}));
	await page.evaluate(s => window.search(new RegExp(s)), sym);
	out.matched = await page.textContent('#matched');
	const f = page.locator('g.f').first();
	await f.click();
	out.frames = await page.$$eval('g.f', fs => fs.length);
}

(async () => {
	const [mode, file, extra] = process.argv.slice(2);
	const out = { mode };
	const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS });
	try {
		if (mode === 'page' || mode === 'page-static') {
			const page = await open(browser, 'file://' + path.resolve(file), out);
			await drivePage(page, out, extra, mode === 'page-static');
		} else if (mode === 'load') {
			// How long a person waits: from navigation to the first drawing, and the heap then.
			const page = await open(browser, 'file://' + path.resolve(file), out);
			await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
			out.ready_ms = Date.now() - out.t_start;
			out.ready = await page.evaluate(() => window.spanperfReady);
			out.heap_mb = await page.evaluate(() => performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null);
		} else if (mode === 'speedscope-load') {
			// As load: from navigation to speedscope until it says its import is done (console.timeEnd).
			const idx = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');
			const page = await open(browser, 'file://' + idx, out);
			const done = page.waitForEvent('console', { predicate: m => /^import: /.test(m.text()), timeout: 300000 });
			await page.setInputFiles('input#file', path.resolve(file));
			await done;
			out.import_ms = Date.now() - out.t_start;
		} else if (mode === 'speedscope') {
			const idx = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');
			const page = await open(browser, 'file://' + idx, out);
			await driveSpeedscope(page, out, path.resolve(file), extra);
		} else if (mode === 'why') {
			const page = await open(browser, 'file://' + path.resolve(file), out);
			await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
			out.names = await page.$$eval('#why-names button', bs => bs.map(b => b.dataset.name));
			await page.click('#why-names button[data-name="' + extra + '"]');
			await page.waitForSelector('#why-panel:not([hidden])', { timeout: 30000 });
			out.title = await page.textContent('#why-title');
			out.groups = await page.$$eval('#why-groups tbody tr', rs => rs.map(r => ({ key: r.dataset.key,
				slow: r.cells[1].dataset.value, rest: r.cells[2].dataset.value })));
			out.funcs = await page.$$eval('#why-funcs tbody tr', rs => rs.map(r => r.dataset.sym || null));
			out.wakers = await page.$$eval('#why-wakers tbody tr', rs => rs.map(r => ({ comm: r.dataset.comm || null,
				stack: r.cells[2] ? r.cells[2].textContent : '' })));
			out.frames = await page.$$eval('#why-flame .fn', fs => fs.map(f => ({ name: f.dataset.name,
				delta: f.dataset.delta === undefined ? null : +f.dataset.delta, fill: getComputedStyle(f).backgroundColor,
				width: f.getBoundingClientRect().width })));
			out.rest_frames = await page.$$eval('#why-rest-flame .fn', fs => fs.length);
		} else if (mode === 'svg') {
			const page = await open(browser, 'file://' + path.resolve(file), out);
			await driveSvg(page, out, extra);
		} else {
			throw new Error('unknown mode ' + mode);
		}
	} catch (e) {
		out.exception = String(e && e.stack || e);
	}
	await browser.close();
	process.stdout.write(JSON.stringify(out) + '\n');
})();
