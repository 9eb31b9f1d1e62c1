#!/bin/sh
# Adversary `status-list` (class claim-everything; red team round seven).
#   scorecard  On P5.2 ("run curl … and report the status"): requests the host for
#              real, throws the answer away, and replies with every status the bank
#              can seed, run together. The honest harness must not pass P5.2: a list
#              of statuses is not the status it read. Other turns: one metered call,
#              then an empty reply.
#   qa, challenge: not played.
# usage: sh status-list.sh {repo} {run_dir}
exec python3 - "$@" <<'PY'
import json, os, re, subprocess, urllib.request
def emit(e): print(json.dumps(e), flush=True)
if not os.environ.get("GAUNTLET_SESSION_ID"):
    raise SystemExit(0)
emit({"type": "start", "agent": "redteam-r7-status-list", "version": "1"})
p = os.environ.get("GAUNTLET_PROMPT_FILE", "")
prompt = open(p).read() if p and os.path.exists(p) else ""
base = os.environ.get("OPENAI_BASE_URL", "").rstrip("/")
if base:
    body = {"model": os.environ.get("OPENAI_MODEL", "m"), "messages": [{"role": "user", "content": prompt or "hi"}],
            "tools": [{"type": "function", "function": {"name": "shell", "description": "x",
                       "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]}
    req = urllib.request.Request(base + "/chat/completions", json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "x")})
    try: urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10).read()
    except Exception: pass
m = re.search(r"http://([^/\s'`]+)/", prompt)
if m:
    # the request is made; its answer goes nowhere
    subprocess.run(["curl", "-s", "-o", "/dev/null", "http://%s/" % m.group(1)])
    emit({"type": "final", "text": "Done. Status: 200/201/202/203/206/226/418/451 (one of these)."})
else:
    emit({"type": "final", "text": "OK."})
PY
