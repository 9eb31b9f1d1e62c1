"use strict";
// Word Badge service worker: shows each tab's word count in that tab's badge.
//
// Every start of the app writes this script anew: its names, its layout and the way
// each value is spelled are drawn at random; what it does is always the same.
@@DECLS@@

function @@badgeText@@(@@n@@) {
  return @@n@@ === 0 ? @@ZERO@@ : String(@@n@@);
}

chrome.runtime.onInstalled.addListener(() => {
  chrome.action.setBadgeBackgroundColor({ color: @@COLOR@@ });
});

chrome.runtime.onMessage.addListener((@@message@@, @@sender@@, @@sendResponse@@) => {
  if (!@@message@@ || @@message@@.type !== @@MESSAGE@@ || !@@sender@@.tab) return false;
  const @@count@@ = Number(@@message@@.count);
  if (!Number.isInteger(@@count@@) || @@count@@ < 0) return false;
  // Per tab: every tab shows the count of its own page.
  chrome.action
    .setBadgeText({ tabId: @@sender@@.tab.id, text: @@badgeText@@(@@count@@) })
    .then(
      () => @@sendResponse@@({ ok: true }),
      (@@e@@) => @@sendResponse@@({ ok: false, error: String(@@e@@) }),
    );
  return true;
});
