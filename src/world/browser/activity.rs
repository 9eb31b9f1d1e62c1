//! When a page has nothing left to do.
//!
//! A read whose expectation does not hold, or a `wait_for` whose selector does not
//! match, used to wait out its whole deadline (5 s), because pages update
//! asynchronously and a one-shot read would make a correct test flaky. But a test run
//! against a mutant *should* fail, and waiting 5 s for a page that has long stopped
//! changing was most of a browser trial's time. So the tab carries a tracker,
//! installed before any of the page's own scripts run, that knows when the page last
//! did anything: a DOM change, a request (`fetch`, `XMLHttpRequest`) in flight, a
//! pending `setTimeout` of at most the deadline, a requested animation frame, a
//! response body being read, a message on a socket, an image in the document still
//! loading, a navigation away. A read gives up early only once the page has been idle
//! for [`QUIET`]; a page that keeps working (an animation, a polling loop, a slow
//! request) still gets the whole deadline.
//!
//! What the tracker cannot see is work outside the page's main world: an extension's
//! content script runs its timers in an isolated world and its service worker in
//! another process. Their effects on the page (a changed attribute) are seen when they
//! happen; the window before them is [`QUIET_WITH_EXTENSION`], longer.
//!
//! The tracker wraps `setTimeout`, `setInterval`, their `clear…`, `fetch`,
//! `XMLHttpRequest.send`, `WebSocket` and `EventSource` transparently (same arguments,
//! same return values; a short interval or an open socket keeps the page from ever
//! counting as idle) and defines one
//! non-enumerable, read-only global. The pages under test are the frozen sample apps,
//! not anything an agent wrote: an agent's flow cannot run script in the page.

use std::time::Duration;

/// Idle this long (no DOM change, request or short timer), counted from the start of
/// the step at the earliest, ends a read or wait that has not held. It covers what the
/// tracker cannot see (a message from a worker, storage callbacks); the sample apps'
/// pages do all their work through what it sees. Every browser gate run against a
/// mutant pays it once, so it is kept short (docs/test-flows.md, "What a browser step
/// costs").
pub const QUIET: Duration = Duration::from_millis(500);

/// The same with an extension loaded, whose content scripts' timers and service
/// worker the tracker cannot see: several times the longest such gap measured under
/// load (ext-wordbadge: a change, the content script's settle timer, its message to
/// the worker, the badge set, the page's attribute written; the figure is in
/// docs/test-flows.md, "What a browser step costs").
pub const QUIET_WITH_EXTENSION: Duration = Duration::from_millis(1000);

/// Installed with `Page.addScriptToEvaluateOnNewDocument`: runs in every document of
/// the tab before the document's own scripts.
pub const TRACKER: &str = r#"(() => {
  if (Object.prototype.hasOwnProperty.call(window, "__gauntletIdleMs")) return;
  const now = () => performance.now();
  let last = now();
  let inFlight = 0;
  const timers = new Set();
  const touch = () => { last = now(); };
  const setT = window.setTimeout, clearT = window.clearTimeout;
  window.setTimeout = function (fn, ms, ...rest) {
    // A missing or non-numeric delay is 0, as the browser reads it.
    if (typeof fn !== "function" || (Number(ms) || 0) > 5000) return setT.call(this, fn, ms, ...rest);
    const id = setT.call(this, function (...a) { timers.delete(id); touch(); return fn.apply(this, a); }, ms, ...rest);
    timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) { timers.delete(id); return clearT.call(this, id); };
  // A short interval or an open socket can change the page at any moment: while one
  // exists the page is never idle.
  const setI = window.setInterval, clearI = window.clearInterval;
  window.setInterval = function (fn, ms, ...rest) {
    const id = setI.call(this, fn, ms, ...rest);
    if ((Number(ms) || 0) <= 5000) timers.add(id);
    return id;
  };
  window.clearInterval = function (id) { timers.delete(id); return clearI.call(this, id); };
  const sockets = new Set();
  for (const name of ["WebSocket", "EventSource"]) {
    const C = window[name];
    if (typeof C !== "function") continue;
    window[name] = new Proxy(C, {
      construct(target, args, newTarget) {
        const s = Reflect.construct(target, args, newTarget);
        sockets.add(s);
        s.addEventListener("message", touch);
        const gone = () => { if (s.readyState === (name === "WebSocket" ? 3 : 2)) sockets.delete(s); };
        s.addEventListener(name === "WebSocket" ? "close" : "error", gone);
        if (name === "EventSource") {
          const close0 = s.close;
          s.close = function (...a) { const r = close0.apply(this, a); sockets.delete(s); return r; };
        }
        return s;
      },
    });
  }
  const fetch0 = window.fetch;
  if (typeof fetch0 === "function") {
    window.fetch = function (...a) {
      inFlight++; touch();
      const done = () => { inFlight--; touch(); };
      let p;
      try { p = fetch0.apply(this, a); } catch (e) { done(); throw e; }
      p.then(done, done);
      return p;
    };
  }
  const send0 = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    let open = true;
    const done = () => { if (open) { open = false; inFlight--; touch(); } };
    inFlight++; touch();
    this.addEventListener("loadend", done, { once: true });
    try { return send0.apply(this, a); } catch (e) { done(); throw e; }
  };
  // A response's body is read after its headers: the page is busy until it is read.
  if (typeof Response === "function") {
    for (const m of ["text", "json", "arrayBuffer", "blob", "formData"]) {
      const read0 = Response.prototype[m];
      if (typeof read0 !== "function") continue;
      Response.prototype[m] = function (...a) {
        inFlight++; touch();
        const done = () => { inFlight--; touch(); };
        const p = read0.apply(this, a);
        p.then(done, done);
        return p;
      };
    }
  }
  // A frame asked for is work to come.
  const raf0 = window.requestAnimationFrame, caf0 = window.cancelAnimationFrame;
  const frames = new Set();
  if (typeof raf0 === "function") {
    window.requestAnimationFrame = function (fn) {
      const id = raf0.call(this, function (...a) { frames.delete(id); touch(); return fn.apply(this, a); });
      frames.add(id);
      return id;
    };
    window.cancelAnimationFrame = function (id) { frames.delete(id); return caf0.call(this, id); };
  }
  // Leaving the page (a link, a form, a script's navigation): busy until the next
  // document, whose own tracker starts busy, takes over.
  let leaving = false;
  window.addEventListener("beforeunload", () => { leaving = true; });
  window.addEventListener("pageshow", () => { leaving = false; touch(); });
  new MutationObserver(touch).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  // An image in the document whose `load` or `error` has not been dispatched yet for
  // its current source: its handlers are work to come (`complete` turns true before
  // they run). A lazy one off screen may never load, and is not counted. Element load
  // events reach the document, never the window.
  const settled = new WeakMap();
  const settle = (e) => {
    if (e.target instanceof HTMLImageElement) { settled.set(e.target, e.target.currentSrc); touch(); }
  };
  document.addEventListener("load", settle, true);
  document.addEventListener("error", settle, true);
  const loadingImage = () => {
    for (const img of document.images) {
      if (img.loading === "lazy" || !(img.getAttribute("src") || img.getAttribute("srcset"))) continue;
      if (!img.complete || settled.get(img) !== img.currentSrc) return true;
    }
    return false;
  };
  Object.defineProperty(window, "__gauntletIdleMs", {
    value: () => (leaving || inFlight > 0 || timers.size > 0 || frames.size > 0 || sockets.size > 0 || document.readyState !== "complete" || loadingImage()) ? 0 : now() - last,
  });
})();"#;

/// Evaluated in the tab: milliseconds the page has been idle, 0 while it works, and
/// `null` where the tracker is not (an error page, a navigation in progress).
pub const QUERY: &str =
    r#"typeof window.__gauntletIdleMs === "function" ? window.__gauntletIdleMs() : null"#;
