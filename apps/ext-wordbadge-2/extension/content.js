"use strict";
// Word Badge content script: counts the words of the page it runs in and reports the
// count to the service worker, which shows it in this tab's badge. When the worker has
// set the badge, the count is also recorded in the `data-wordbadge` attribute of the
// page's <html> element, so that a test can wait for the badge to be current.
//
// Every start of the app writes this script anew: its names, its layout and the way
// each value is spelled are drawn at random; what it does is always the same.
@@DECLS@@

function @@words@@(@@text@@) {
  return @@text@@.split(@@SEPARATOR@@).filter((@@w@@) => @@w@@.length > 0).length;
}

function @@countWords@@() {
  const @@body@@ = document.body;
  if (!@@body@@) return 0;
  let @@total@@ = @@words@@(@@body@@.innerText);
  for (const @@decoy@@ of @@body@@.querySelectorAll(@@DECOY@@)) {
    const @@parent@@ = @@decoy@@.parentElement;
    // A decoy inside another decoy was subtracted with it; one that is not rendered
    // was never part of the visible text.
    if (@@parent@@ && @@parent@@.closest(@@DECOY@@)) continue;
    if (@@decoy@@.getClientRects().length === 0) continue;
    @@total@@ -= @@words@@(@@decoy@@.innerText);
  }
  return Math.max(0, @@total@@);
}

let @@reported@@ = null;

async function @@report@@() {
  const @@count@@ = @@countWords@@();
  if (@@count@@ === @@reported@@) return;
  @@reported@@ = @@count@@;
  try {
    await chrome.runtime.sendMessage({ type: @@MESSAGE@@, count: @@count@@ });
    // Only the newest count may be recorded: an older answer can arrive late.
    if (@@count@@ === @@reported@@) {
      document.documentElement.dataset[@@ATTRIBUTE@@] = String(@@count@@);
    }
  } catch (@@e@@) {
    // The worker is gone (the extension was reloaded): there is no badge to update.
    @@reported@@ = null;
  }
}

@@report@@();

if (@@WATCH@@) {
  let @@timer@@ = null;
  new MutationObserver(() => {
    clearTimeout(@@timer@@);
    @@timer@@ = setTimeout(@@report@@, @@SETTLE@@);
  }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
}
