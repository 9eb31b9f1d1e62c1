"use strict";
// Tests only (the app's unit tests, tests/integration/app_wordbadge2.rs): what written
// extensions do, run by node with the few browser and Chrome APIs they touch stubbed.
// stdin: JSON [{content, worker}, ...], the scripts of one start each; stdout: JSON
// [behaviour, ...]. A behaviour holds one field per thing a mutant may break, so that
// the app's starts all give the same behaviour and each mutant differs in one field:
//   words     the count the content script sends for TEXT
//   decoys    the selector list it queries for decoys, as a sorted set of simple
//             selectors (quotes and a leading `*` dropped): its meaning, not its spelling
//   watch     after the page changes, the delay of the recount it schedules (null: none)
//   recorded  the dataset keys of <html> set to the count sent once the worker answered
//   zero      the badge text the worker sets for a count of 0
//   badges    the (tab, text) it sets for a count of 5
//   color     the badge colour it sets on install (lower case)
//   foreign   whether it sets a badge for a message of another type
const vm = require("vm");

const TEXT = "One two\tthree\n\n well-known x-y  -  end.";

function tick() {
  return new Promise((resolve) => setImmediate(resolve));
}

function normalise(selector) {
  return [
    ...new Set(
      selector
        .split(",")
        .map((s) => s.trim().replace(/^\*/, "").replace(/["']/g, "")),
    ),
  ].sort();
}

async function content(src) {
  const selectors = [];
  const sent = [];
  const dataset = {};
  let observer = null;
  let observed = false;
  let delay = null;
  const ctx = {
    document: {
      body: {
        innerText: TEXT,
        querySelectorAll(s) {
          selectors.push(s);
          return [];
        },
      },
      documentElement: { dataset },
    },
    chrome: {
      runtime: {
        sendMessage(m) {
          sent.push(m);
          return Promise.resolve({ ok: true });
        },
      },
    },
    MutationObserver: class {
      constructor(callback) {
        observer = callback;
      }
      observe() {
        observed = true;
      }
    },
    setTimeout(f, ms) {
      delay = ms;
      return 1;
    },
    clearTimeout() {},
  };
  vm.runInNewContext(src, ctx);
  await tick();
  if (observer && observed) observer([]);
  const count = sent.length ? sent[0].count : null;
  const recorded = Object.keys(dataset)
    .sort()
    .map((k) => (dataset[k] === String(count) ? k : `${k}=${dataset[k]}`));
  return {
    words: count,
    type: sent.length ? sent[0].type : null,
    decoys: [...new Set(selectors.map((s) => JSON.stringify(normalise(s))))].map((s) => JSON.parse(s)),
    watch: delay,
    recorded,
  };
}

async function worker(src, type) {
  let installed = null;
  let onMessage = null;
  let color = null;
  const badges = [];
  const ctx = {
    chrome: {
      runtime: {
        onInstalled: { addListener: (f) => (installed = f) },
        onMessage: { addListener: (f) => (onMessage = f) },
      },
      action: {
        setBadgeBackgroundColor(o) {
          color = String(o.color).toLowerCase();
        },
        setBadgeText(o) {
          badges.push([o.tabId, o.text]);
          return Promise.resolve();
        },
      },
    },
  };
  vm.runInNewContext(src, ctx);
  if (installed) installed();
  const send = (m) => onMessage && onMessage(m, { tab: { id: 7 } }, () => {});
  send({ type, count: 0 });
  const zero = badges.length ? badges.pop()[1] : null;
  send({ type, count: 5 });
  const five = badges.splice(0);
  send({ type: `${type}x`, count: 3 });
  const foreign = badges.length > 0;
  await tick();
  return { zero, badges: five, color, foreign };
}

(async () => {
  const sets = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const out = [];
  for (const set of sets) {
    try {
      const c = await content(set.content);
      const w = await worker(set.worker, c.type);
      out.push({
        words: c.words,
        decoys: c.decoys.length === 1 ? c.decoys[0] : c.decoys,
        watch: c.watch,
        recorded: c.recorded,
        zero: w.zero,
        badges: w.badges,
        color: w.color,
        foreign: w.foreign,
      });
    } catch (e) {
      out.push({ error: String(e && e.stack ? e.stack : e) });
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
