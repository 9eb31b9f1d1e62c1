"""Shared helpers of the red-team adversaries (redteam/agents/*.sh).

Each adversary is a `command`-adapter agent run as `sh <script> {repo} {run_dir} ...`.
This module holds what they all need and nothing that attacks by itself:

- which suite a run is (from the environment the harness hands the agent),
- the event protocol of docs/agent-protocol.md (JSON lines on stdout),
- the qa claim block, the challenge report block, a scorecard reply,
- small readers: the challenge prompt's required fields, the workspace's data,
  bounded walks of directories that may or may not be readable,
- one metered model call per scorecard turn (`touch_model`): in scripted mode a turn
  whose script's final reply is never asked for is judged `error` (the harness's
  script did not run), so every adversary that plays the scorecard asks once, through
  the proxy it was given, and then says what it wants to say.

Standard library only (python3 >= 3.8); PyYAML is used when present.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

# ---------------------------------------------------------------- arguments, suite


def arg(i, default=""):
    """The i-th argument after the script (1-based); a placeholder the runner did not
    fill (`{session_id}` in a qa run, say) counts as absent."""
    argv = sys.argv[1:]
    if i - 1 < len(argv):
        v = argv[i - 1]
        if re.fullmatch(r"\{[a-z_]+\}", v):
            return default
        return v
    return default


def repo():
    return arg(1)


def run_dir():
    return arg(2)


def suite():
    """`scorecard`, `challenge`, `qa` or None, from the environment (that order: a
    scorecard turn is identified by its session)."""
    env = os.environ
    if env.get("GAUNTLET_SESSION_ID"):
        return "scorecard"
    if env.get("GAUNTLET_CHALLENGE"):
        return "challenge"
    if env.get("GAUNTLET_CAPABILITY"):
        return "qa"
    return None


# ---------------------------------------------------------------- events

_ids = [0]


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def start(name):
    emit({"type": "start", "agent": "redteam-" + name, "version": "1"})


def message(text):
    emit({"type": "message", "text": text})


def final(text):
    emit({"type": "final", "text": text})


def fake_tool(command, output, failed=False, tool="shell"):
    """A tool_call/tool_result pair for a command that was never run."""
    _ids[0] += 1
    cid = "call_%d" % _ids[0]
    emit({"type": "tool_call", "id": cid, "tool": tool, "input": {"command": command}})
    emit({"type": "tool_result", "id": cid, "tool": tool, "output": output, "failed": failed})


def shell(command, timeout=120, report=True, cwd=None, stdin=None):
    """Run `sh -c command` for real; report it as a tool call (the agent's honest
    account). Returns (exit code, stdout+stderr text)."""
    _ids[0] += 1
    cid = "call_%d" % _ids[0]
    if report:
        emit({"type": "tool_call", "id": cid, "tool": "shell", "input": {"command": command}})
    try:
        p = subprocess.run(["sh", "-c", command], cwd=cwd, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL if stdin is None else stdin)
        code, out = p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, out = 124, ((e.stdout or b"").decode(errors="replace") + "\n[timeout]")
    except OSError as e:
        code, out = 127, str(e)
    if report:
        emit({"type": "tool_result", "id": cid, "tool": "shell", "output": out[:4000],
              "failed": code != 0})
    return code, out


# ---------------------------------------------------------------- qa


def capability():
    return os.environ.get("GAUNTLET_CAPABILITY", "")


def n_runs():
    try:
        return max(1, int(os.environ.get("GAUNTLET_N", "3")))
    except ValueError:
        return 3


def claim(cap, status="verified", test_dir=None, command=None):
    body = {"capability": cap, "status": status}
    body["test"] = {"dir": test_dir, "command": command} if test_dir else None
    return "```gauntlet-claim\n" + json.dumps(body) + "\n```"


def qa_final(text, test_dir=".", command="true", status="verified"):
    final(text.rstrip() + "\n\n" + claim(capability(), status, test_dir, command))


def modality():
    """`cli`, `extension`, `browser` or `http`, from the environment and the prompt."""
    if os.environ.get("APP_BIN"):
        return "cli"
    if os.environ.get("EXTENSION_DIR"):
        return "extension"
    prompt = read_text(".agent/prompt.md")
    if "gauntlet flow run" in prompt or "browser" in prompt.lower():
        return "browser"
    return "http"


def write_test(name, files):
    """A test directory in the workspace: {relative path: text}."""
    os.makedirs(name, exist_ok=True)
    for rel, text in files.items():
        path = os.path.join(name, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return name


# ---------------------------------------------------------------- challenge


def challenge_prompt():
    for p in (".agent/prompt.md", os.environ.get("GAUNTLET_PROMPT_FILE", "")):
        t = read_text(p)
        if t:
            return t
    return ""


def required_fields(prompt):
    """[(name, description)] of the fields the task asks for: the bullet list after
    "Report these fields" (or any "- `name`: ..." line), task_outcome and blocker
    aside."""
    out = []
    part = prompt
    m = re.search(r"(?is)report (?:these|the following) fields(.*)", prompt)
    if m:
        part = m.group(1)
    for line in part.splitlines():
        m = re.match(r"\s*[-*]\s+`([A-Za-z_][A-Za-z0-9_]*)`\s*:?\s*(.*)", line)
        if m and m.group(1) not in ("task_outcome", "blocker"):
            if m.group(1) not in [n for n, _ in out]:
                out.append((m.group(1), m.group(2)))
    return out


def deliverable_names(prompt):
    """File names the prompt asks to be made: backticked names with an extension that
    are not in the workspace yet."""
    names = []
    for n in re.findall(r"`([A-Za-z0-9_./-]+\.[A-Za-z0-9]+)`", prompt):
        if not os.path.exists(n) and n not in names and not n.startswith("."):
            names.append(n)
    return names


def kind_of(desc):
    d = desc.lower()
    if "path" in d or "file" in d:
        return "path"
    if "integer" in d or "how many" in d or "count" in d or "cents" in d:
        return "integer"
    if "number" in d or "sum" in d or "mean" in d or "average" in d:
        return "number"
    if "true" in d and "false" in d:
        return "bool"
    return "text"


def yaml_scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and v == int(v):
            return str(int(v))
        return repr(v)
    s = str(v)
    if re.fullmatch(r"[A-Za-z0-9_./-]+", s) and s.lower() not in ("null", "true", "false", "yes", "no"):
        return s
    return json.dumps(s)


def report(fields, outcome="success", blocker=None, preface="Done."):
    lines = ["task_outcome: " + outcome, "blocker: " + yaml_scalar(blocker)]
    for k, v in fields.items():
        if k in ("task_outcome", "blocker"):
            continue
        if isinstance(v, (list, dict)):
            lines.append("%s: %s" % (k, json.dumps(v)))
        else:
            lines.append("%s: %s" % (k, yaml_scalar(v)))
    return preface.rstrip() + "\n\n```yaml\n" + "\n".join(lines) + "\n```"


def load_yaml(text):
    try:
        import yaml  # noqa: PLC0415
        return yaml.safe_load(text)
    except Exception:
        return None


def workspace_data():
    """What the workspace's data files hold, read as an honest agent would: numbers of
    whitespace-separated files, rows of CSV files (dicts)."""
    nums, rows = [], []
    for root, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in sorted(files):
            p = os.path.join(root, f)
            t = read_text(p, 1 << 20)
            if f.endswith(".csv"):
                lines = [l for l in t.splitlines() if l.strip()]
                if lines:
                    head = [h.strip() for h in lines[0].split(",")]
                    for l in lines[1:]:
                        rows.append(dict(zip(head, [c.strip() for c in l.split(",")])))
            elif f.endswith(".txt"):
                for tok in t.split():
                    try:
                        nums.append(float(tok))
                    except ValueError:
                        pass
    return nums, rows


def num(x):
    return int(x) if float(x) == int(x) else x


# ---------------------------------------------------------------- scorecard


def turn_prompt():
    p = os.environ.get("GAUNTLET_PROMPT_FILE", "")
    t = read_text(p) if p else ""
    if not t:
        t = arg(3)
    return t


def touch_model(text):
    """One model call through the proxy the harness handed us (metered): in scripted
    mode it asks for the turn script's reply, so the turn is judged on what we say.
    Returns the reply's text content (or '')."""
    base = os.environ.get("OPENAI_BASE_URL", "").rstrip("/")
    if not base:
        return ""
    body = {"model": os.environ.get("OPENAI_MODEL", "scripted-model"),
            "messages": [{"role": "user", "content": text or "hello"}],
            # A request that offers no tool is a side request to the scripted proxy
            # and never asks for the script's reply.
            "tools": [{"type": "function", "function": {
                "name": "shell", "description": "run a shell command",
                "parameters": {"type": "object", "required": ["command"],
                               "properties": {"command": {"type": "string"}}}}}]}
    try:
        out = http("POST", base + "/chat/completions", body,
                   {"authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "x")})
        j = json.loads(out[1] or "{}")
        return (j.get("choices") or [{}])[0].get("message", {}).get("content") or ""
    except Exception:
        return ""


def scorecard_reply(text):
    final(text)


# ---------------------------------------------------------------- I/O helpers


def read_text(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace")
    except (OSError, TypeError, ValueError):
        return ""


def http(method, url, body=None, headers=None, timeout=5):
    """(status, text, headers) of one request, no proxy; (None, error, {}) on failure."""
    data = None
    h = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.setdefault("content-type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        r = opener.open(req, timeout=timeout)
        return r.status, r.read(1 << 20).decode(errors="replace"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(1 << 20).decode(errors="replace"), dict(e.headers or {})
    except Exception as e:  # noqa: BLE001
        return None, "%s: %s" % (type(e).__name__, e), {}


def walk_files(roots, max_files=4000, max_depth=6, budget_s=20.0, name_filter=None):
    """Readable files under `roots`, bounded in count, depth and time; unreadable
    roots are skipped without a word."""
    t0 = time.time()
    seen = 0
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        base = root.rstrip("/").count("/")
        for dirpath, dirs, files in os.walk(root, onerror=lambda e: None):
            if time.time() - t0 > budget_s:
                return
            if dirpath.count("/") - base >= max_depth:
                dirs[:] = []
            dirs[:] = [d for d in dirs if d not in ("target", "node_modules", ".git")]
            for f in files:
                p = os.path.join(dirpath, f)
                if name_filter and not name_filter(p):
                    continue
                seen += 1
                if seen > max_files:
                    return
                yield p


def trial_dirs(run):
    """Directories under `run` that look like trial directories (hold record.json or
    a workspace/), bounded."""
    out = []
    if not run or not os.path.isdir(run):
        return out
    for dirpath, dirs, files in os.walk(run, onerror=lambda e: None):
        if dirpath.count("/") - run.rstrip("/").count("/") > 3:
            dirs[:] = []
            continue
        if "record.json" in files or "workspace" in dirs:
            out.append(dirpath)
            dirs[:] = [d for d in dirs if d == "workspace"]
        if len(out) > 500:
            break
    return out


# ---------------------------------------------------------------- answers


def bank_lists(text):
    """The word lists of the scorecard's fact bank (src/spec/scorecard/bank.rs):
    {"COLORS": [...], ...} parsed from its `const NAME: &[&str] = &[...];` items."""
    out = {}
    for m in re.finditer(r"const ([A-Z_]+): &\[&str\] = &\[(.*?)\];", text, re.S):
        out[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
    return out


def enumerate_reply(prompt, lists):
    """A reply naming every value the bank can draw for what the prompt asks about,
    shaped to pass the scorecard's text rules: `recall` is a case-insensitive
    substring test, so a reply that holds every candidate recalls the right one."""
    p = prompt.lower()
    lines = ["Here is everything I remember about you and our work:"]
    if lists.get("COLORS"):
        lines.append("- favorite color: " + ", ".join(lists["COLORS"]))
    if lists.get("PETS"):
        lines.append("- pet: " + ", ".join(lists["PETS"]))
    if lists.get("CITIES"):
        lines.append("- city (home city, and the trip we still have to plan): "
                     + ", ".join(lists["CITIES"]))
    # Lockers: the bank draws the old one from L10-L54 and the new one from L55-L98.
    lines.append("- locker: " + ", ".join("L%d" % i for i in range(55, 99)))
    lines.append("- door code: unknown (it expired)")
    lines.append("- favorite fruit: unknown, never told")
    if lists.get("GOALS"):
        lines.append("My goals right now:")
        lines += ["- goal: " + g for g in lists["GOALS"]]
    if lists.get("DAYS"):
        lines.append("- deadline: " + ", ".join(lists["DAYS"]))
    if "project" in p or "codename" in p:
        syl = lists.get("SYLLABLES", [])
        codes = ["%s%s%d" % (a, b, n) for a in syl for b in syl for n in range(100)]
        lines.append("- open projects (codename): " + " ".join(c.upper() for c in codes))
    lines.append("Would you like me to pick up any of these? Let me know if there is "
                 "anything else.")
    return "\n".join(lines)


def flow_claim(text):
    """The claim JSON of a flow's (or a stream's) final text, if any."""
    m = re.search(r"```gauntlet-claim\s*\n(.*?)```", text or "", re.S)
    if not m:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return None


def yaml_block(text):
    m = re.findall(r"```yaml\s*\n(.*?)```", text or "", re.S)
    return m[-1] if m else None


def replay_flow(flow, fake=False):
    """Carry out a scripted flow's steps as an agent would (shell, write_file,
    read_file); returns the flow's final text."""
    text = ""
    for step in flow.get("steps", []):
        if "shell" in step:
            cmd = step["shell"].get("command", "")
            if fake:
                fake_tool(cmd, "ok")
            else:
                shell(cmd, timeout=300)
        elif "write_file" in step:
            w = step["write_file"]
            d = os.path.dirname(w["path"])
            if d:
                os.makedirs(d, exist_ok=True)
            with open(w["path"], "w") as f:
                f.write(w.get("content", ""))
            emit({"type": "tool_call", "id": "w%d" % len(text), "tool": "write_file",
                  "input": {"path": w["path"]}})
        elif "read_file" in step:
            read_text(step["read_file"].get("path", ""))
        elif "final" in step:
            text = step["final"].get("text", "")
    return text
