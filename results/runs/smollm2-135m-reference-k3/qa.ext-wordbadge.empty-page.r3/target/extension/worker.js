"use strict";
// Word Badge service worker: shows each tab's word count in that tab's badge.

// What the badge says for a page without words: a visible zero, not a blank badge
// that would look as if the extension were not working.
const ZERO_TEXT = "0";
// A muted grey, so that the badge informs without drawing the eye.
const BADGE_COLOR = "#6b7280";

function badgeText(count) {
  return count === 0 ? ZERO_TEXT : String(count);
}

chrome.runtime.onInstalled.addListener(() => {
  chrome.action.setBadgeBackgroundColor({ color: BADGE_COLOR });
});

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (!message || message.type !== "word-count" || !sender.tab) return false;
  const count = Number(message.count);
  if (!Number.isInteger(count) || count < 0) return false;
  // Per tab: every tab shows the count of its own page.
  chrome.action
    .setBadgeText({ tabId: sender.tab.id, text: badgeText(count) })
    .then(
      () => sendResponse({ ok: true }),
      (e) => sendResponse({ ok: false, error: String(e) }),
    );
  return true;
});
