"""The scale bench's checks and figures, from what its phases left (benches/scale.sh).

usage: python3 check.py WORK JOBS

Reads, per phase (floor, clean, soak): the planned trial names (nextest's list), the
run directory's records, nextest's JUnit (each trial's summary line: its verdict and
`infra=`), the sampler's peaks, the wall time, rescore's exit status and the leftover
processes; and the fake provider's ledger. Prints the figures and one line per check;
exits 1 when a check fails.
"""
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

work, jobs = sys.argv[1], int(sys.argv[2])
MEDIAN_S = 2.0
failed = []


def check(ok, what):
    print(f"check: {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failed.append(what)


def usage_entries(value):
    """Every proxy usage entry in a record, wherever its suite keeps them."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "usage" and isinstance(v, list) and all(
                    isinstance(e, dict) and "seq" in e and "status" in e for e in v):
                yield from v
            else:
                yield from usage_entries(v)
    elif isinstance(value, list):
        for v in value:
            yield from usage_entries(v)


def records(phase):
    """trial name -> the latest record of it, in the phase's run directory."""
    out = {}
    for f in sorted(glob.glob(f"{work}/{phase}/*/**/record.json", recursive=True)):
        r = json.load(open(f))
        out[r.get("header", r)["trial"]] = r
    return out


def junit(phase):
    """trial name -> (nextest passed, the summary line's verdict words, infra fault)."""
    out = {}
    path = f"{work}/{phase}.junit.xml"
    if not os.path.exists(path):
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        passed = case.find("failure") is None and case.find("error") is None
        text = "".join(e.text or "" for e in case.iter() if e.tag in ("system-out", "system-err"))
        line = next((l for l in text.splitlines() if l.startswith(f"gauntlet: {name} ")), "")
        words = dict(re.findall(r" (verdict|task_outcome|evaluation_validity|passed|observations)=(\S+)", line))
        infra = re.search(r" infra=(\S+)", line)
        out[name] = (passed, words, infra.group(1) if infra else None)
    return out


def misbehaves(trial_dir):
    """benches/scale/agent.sh's draw: cksum of the trial directory's name, mod 30."""
    crc = subprocess.run(["cksum"], input=trial_dir.encode(), capture_output=True).stdout.split()[0]
    return {0: "crash", 1: "hang", 2: "flood"}.get(int(crc) % 30)


def read(path, default=""):
    try:
        return open(path).read()
    except OSError:
        return default


planned_all = read(f"{work}/planned.txt").split()
def busy_cpu_s(phase):
    """The machine's busy CPU seconds between the two `/proc/stat` lines the phase kept:
    everything but idle and iowait (guest time is already in user time)."""
    lines = read(f"{work}/{phase}.cpu").splitlines()
    if len(lines) != 2:
        return 0.0
    a, b = ([int(x) for x in line.split()[1:]] for line in lines)
    busy = sum(y - x for i, (x, y) in enumerate(zip(a, b)) if i not in (3, 4, 8, 9))
    return busy / os.sysconf("SC_CLK_TCK")


phases = [p for p in ("floor", "clean", "soak") if os.path.exists(f"{work}/{p}.wall_ms")]
metered = [0, 0]
cut_calls = 0
cut_tokens, cut_unmatched = [0, 0], []
figures = {}
for phase in phases:
    recs = records(phase)
    jun = junit(phase)
    planned = sorted(jun) if phase == "floor" else planned_all
    peaks = json.loads(read(f"{work}/{phase}.peaks.json", "{}"))
    wall_s = int(read(f"{work}/{phase}.wall_ms", "0")) / 1000
    entries = [e for r in recs.values() for e in usage_entries(r)]
    metered[0] += sum(e.get("input_tokens") or 0 for e in entries)
    metered[1] += sum(e.get("output_tokens") or 0 for e in entries)
    cuts = sum(1 for e in entries if e.get("fault") == "cut")
    cut_calls += cuts
    # A cut call's tokens: the fake billed them, no client could read them. The agent
    # asks again with the same request, and the script answers it with the same reply,
    # billed the same usage: the next call of the trial that carries the same note.
    for r in recs.values():
        trial_entries = sorted(usage_entries(r), key=lambda e: e["seq"])
        for i, e in enumerate(trial_entries):
            if e.get("fault") != "cut":
                continue
            again = next((x for x in trial_entries[i + 1:] if x.get("reply") == e.get("reply")
                          and x.get("input_tokens") is not None), None)
            if again is None:
                cut_unmatched.append((r.get("header", r)["trial"], e["seq"]))
            else:
                cut_tokens[0] += again["input_tokens"]
                cut_tokens[1] += again.get("output_tokens") or 0
    retried = sum(len(e.get("retries") or []) for e in entries)
    calls_retried = sum(1 for e in entries if e.get("retries"))
    faults = {}
    for e in entries:
        if e.get("fault"):
            faults[e["fault"]] = faults.get(e["fault"], 0) + 1
    infra = sorted(n for n, (_, _, i) in jun.items() if i)
    nextest_failed = sorted(n for n, (p, _, _) in jun.items() if not p)
    trials_at_once = peaks.get("trials", 0)
    print(f"\n== {phase}: {len(planned)} planned, {len(recs)} records, wall {wall_s:.0f} s, "
          f"peak {trials_at_once} trials at once (-j {1 if phase == 'floor' else jobs})")
    print(f"   model calls answered {len(entries)} (cut {cuts}), attempts the proxy retried "
          f"{retried} over {calls_retried} calls, faults passed on {faults}")
    print(f"   trials failed by the provider (infra) {len(infra)}, trials nextest failed "
          f"{len(nextest_failed)}")
    print(f"   peaks: {peaks}")
    missing = [n for n in planned if n not in recs]
    check(bool(planned) and not missing, f"{phase}: every planned trial has a record (missing {len(missing)}: {missing[:5]})")
    rc = read(f"{work}/{phase}.rescore.rc", "?").strip()
    check(rc == "0", f"{phase}: gauntlet rescore agrees (exit {rc}; {work}/{phase}.rescore)")
    if phase != "soak":
        # Every shipped scripted trial passes (its verdict is the honest best outcome):
        # one that fails is the harness's or the machine's failure, or the provider's.
        lost = [n for n in nextest_failed if not jun[n][2]]
        check(not lost, f"{phase}: every trial the provider did not fail passes "
              f"({len(lost)} failed: {[(n, jun[n][1]) for n in lost[:3]]})")
    left = read(f"{work}/{phase}.leftover").splitlines()
    check(not left, f"{phase}: no process of the run is left ({len(left)}: {left[:3]})")
    figures[phase] = dict(recs=recs, jun=jun, peaks=peaks, wall_s=wall_s, calls=len(entries),
                          infra=infra, nextest_failed=nextest_failed, cpu_s=busy_cpu_s(phase))
    if phase != "floor":
        for n in nextest_failed[:20]:
            print(f"   failed: {n} {jun[n][1]} infra={jun[n][2]}")

# Figures: against the floor (one trial at a time) and the ideal wall.
def memory_and_wall(name, jobs_here):
    floor = figures["floor"]["peaks"]
    c = figures[name]
    at_once = max(c["peaks"].get("trials", 0), 1)
    print(f"\n== figures ({name} phase, against the floor phase's one trial at a time)")
    for what, key in (("the trials' subtrees", "trial_rss_kb"), ("the whole tree, cargo and nextest too", "rss_kb")):
        per_kb = c["peaks"].get(key, 0) / at_once
        floor_kb = floor.get(key, 0)
        print(f"   peak RSS, {what}: {c['peaks'].get(key, 0) / 1024:.0f} MiB over {at_once} trials "
              f"at once = {per_kb / 1024:.1f} MiB per concurrent trial; floor {floor_kb / 1024:.1f} MiB: "
              f"{per_kb / floor_kb if floor_kb else 0:.2f}x")
    ideal_s = c["calls"] * MEDIAN_S / at_once
    print(f"   wall {c['wall_s']:.0f} s; ideal {c['calls']} answered calls x {MEDIAN_S:.0f} s / {at_once} "
          f"trials at once = {ideal_s:.0f} s: {c['wall_s'] / ideal_s if ideal_s else 0:.2f}x the ideal "
          f"(against -j {jobs_here}: {c['calls'] * MEDIAN_S / jobs_here:.0f} s, "
          f"{c['wall_s'] / (c['calls'] * MEDIAN_S / jobs_here) if c['calls'] else 0:.2f}x)")
    print(f"   floor phase: {figures['floor']['calls']} calls in {figures['floor']['wall_s']:.0f} s one at a "
          f"time ({figures['floor']['wall_s'] / (figures['floor']['calls'] * MEDIAN_S) if figures['floor']['calls'] else 0:.2f}x calls x {MEDIAN_S:.0f} s)")
    print(f"   trials the provider failed (infra) {len(c['infra'])} of {len(c['recs'])}")
    # The limit on two cores is the CPU a trial costs (docs/scale.md): the machine's
    # busy time over the phase, everything counted (kernel threads too: a namespace's
    # teardown runs in one), per trial, against one trial at a time.
    per, fl = c["cpu_s"] / max(len(c["recs"]), 1), figures["floor"]["cpu_s"] / max(len(figures["floor"]["recs"]), 1)
    print(f"   busy CPU {c['cpu_s']:.0f} s over the phase ({c['cpu_s'] / c['wall_s'] / os.cpu_count() * 100 if c['wall_s'] else 0:.0f}% "
          f"of {os.cpu_count()} cores) = {per:.2f} s per trial; floor {fl:.2f} s: {per / fl if fl else 0:.2f}x; "
          f"{len(c['recs']) / c['wall_s'] if c['wall_s'] else 0:.2f} trials a second")


for name in ("clean", "soak"):
    if "floor" in figures and name in figures:
        memory_and_wall(name, jobs)

# Every billed token metered.
ledger = json.loads(read(f"{work}/ledger.json", "{}"))
key = ledger.get("keys", {}).get("gauntlet-scripted")
if key is None:
    check(False, f"the fake provider's ledger has the key gauntlet-scripted ({work}/ledger.json)")
else:
    billed = (key["billed"]["input"], key["billed"]["output"])
    unreported = (key["unreported"]["input"], key["unreported"]["output"])
    cut_by_fake = key["disconnects"] + key["whole_disconnects"] + key["stream_errors"]
    print(f"\n== ledger (gauntlet-scripted): calls {key['calls']}, answered {key['answered']}, "
          f"429 {key['rate_limited']}, 5xx {key['server_errors']}, cut {cut_by_fake}, "
          f"billed {billed}, unreported {unreported}; metered by the records {tuple(metered)}")
    check(billed == tuple(metered),
          f"every billed token is metered: billed {billed} == metered {tuple(metered)}")
    check(cut_by_fake == cut_calls,
          f"the calls the fake cut ({cut_by_fake}) are the calls the records name cut ({cut_calls})")
    print(f"   the cut calls' tokens, as billed when the agent asked again: {tuple(cut_tokens)}"
          f"{f'; cut calls never asked again (their tokens unknown here): {cut_unmatched}' if cut_unmatched else ''}")
    check(unreported == tuple(cut_tokens) or (cut_unmatched and unreported[0] >= cut_tokens[0]),
          f"unreported tokens {unreported} are the cut calls' {tuple(cut_tokens)}")

# The soak: every misbehaving trial recorded, every other one as in the clean phase.
if "soak" in figures:
    s = figures["soak"]
    bad, same, differ, infra_differ = {}, 0, [], []
    dirs = {}  # trial name -> its trial directory's name, the agent's draw
    for f in glob.glob(f"{work}/soak/*/**/record.json", recursive=True):
        r = json.load(open(f))
        dirs[r.get("header", r)["trial"]] = os.path.basename(os.path.dirname(f))
    clean_jun = figures.get("clean", {}).get("jun", {})
    for n in planned_all:
        kind = misbehaves(dirs[n]) if n in dirs else None
        if kind:
            bad[n] = kind
            continue
        if n not in clean_jun or n not in s["jun"]:
            continue
        a, b = clean_jun[n], s["jun"][n]
        if (a[0], a[1]) == (b[0], b[1]):
            same += 1
        elif a[2] or b[2]:
            infra_differ.append((n, a, b))
        else:
            differ.append((n, a, b))
    kinds = {k: sum(1 for v in bad.values() if v == k) for k in ("crash", "hang", "flood")}
    print(f"\n== soak: misbehaving {len(bad)} of {len(planned_all)} {kinds}; of the rest, "
          f"{same} kept the clean phase's verdict, {len(infra_differ)} differ where the "
          f"provider failed one of the two, {len(differ)} differ otherwise")
    for n, a, b in (differ + infra_differ)[:20]:
        print(f"   {n}: clean {a} soak {b}")
    check(not differ, "soak: every trial that did not misbehave keeps its clean verdict "
          "(or differs only where the provider failed it)")
    passed_bad = [n for n in bad if s["jun"].get(n, (False,))[0]]
    check(not passed_bad, f"soak: no misbehaving trial passed ({passed_bad[:5]})")

print(f"\n{len(failed)} check(s) failed" if failed else "\nall checks passed")
sys.exit(1 if failed else 0)
