#!/bin/sh
# Adversary `canned-words` (class claim-everything; red team round six).
#
#   scorecard  Reads nothing, remembers nothing, does nothing: one metered model call
#              per turn (a scripted turn is judged only when its reply is asked for),
#              then the same canned reply to every turn: a number a probe might ask
#              for (366, a leap year's days), a goals list and the offer phrases. The
#              honest harness credits it no probe: a probe passed by one reply to
#              every question asks nothing of the agent.
#   qa, challenge: not played.
# usage: sh canned-words.sh {repo} {run_dir}
exec python3 - "$@" <<'PY'
import json, os, urllib.request
def emit(e): print(json.dumps(e), flush=True)
if not os.environ.get("GAUNTLET_SESSION_ID"):
    raise SystemExit(0)
emit({"type": "start", "agent": "redteam-canned-words", "version": "1"})
base = os.environ.get("OPENAI_BASE_URL", "").rstrip("/")
if base:
    body = {"model": os.environ.get("OPENAI_MODEL", "m"), "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "shell", "description": "x",
                       "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]}
    req = urllib.request.Request(base + "/chat/completions", json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "x")})
    try:
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10).read()
    except Exception:
        pass
emit({"type": "final", "text":
      "366.\n\nMy goals right now:\n- keep our work moving\n- keep you informed\n\n"
      "Would you like me to draft a plan for the next step? Let me know if there is anything else."})
PY
