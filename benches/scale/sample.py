"""Samples a nextest run's process tree once a second until its root ends (benches/scale.sh).

usage: python3 sample.py ROOT_PID TARGET_DIR OUT.json

Writes the peaks: total RSS of the tree (every descendant of ROOT_PID: cargo, nextest,
the trial processes and everything they start: sandboxes, agents, apps, relays), the
same without cargo and nextest (the trials' subtrees alone), trials running at once
(test binaries under TARGET_DIR that nextest started), processes
and threads in the tree, open file descriptors of the busiest trial process and of the
tree, and the machine's least available memory. Also a line per sample (CSV beside it).
"""
import json
import os
import sys
import time

root, target, out = int(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
page_kb = os.sysconf("SC_PAGE_SIZE") // 1024


def stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        s = f.read().decode("latin-1")
    rest = s[s.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[17]), int(rest[21])  # ppid, threads, rss pages


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


peak = dict(rss_kb=0, trial_rss_kb=0, trials=0, procs=0, threads=0, trial_fds=0, tree_fds=0)
least_available_kb = mem_available_kb()
samples = 0
start = time.time()
csv = open(out + ".csv", "w")
csv.write("secs,rss_kb,trial_rss_kb,trials,procs,threads,trial_fds,tree_fds,mem_available_kb\n")
while os.path.exists(f"/proc/{root}"):
    info = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            info[int(name)] = stat(name)
        except (OSError, ValueError, IndexError):
            continue
    children = {}
    for pid, (ppid, _, _) in info.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    rss = sum(info[p][2] for p in tree if p in info) * page_kb
    threads = sum(info[p][1] for p in tree if p in info)
    # A trial is a test binary of this build that nextest started (its parent is not
    # a test binary too); its subtree is the trial's share of the tree.
    exes = {}
    for pid in tree:
        try:
            exes[pid] = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exes[pid] = ""
    is_test = lambda pid: exes.get(pid, "").startswith(target + "/") and "/deps/" in exes.get(pid, "")
    trials, trial_fds, trial_rss = 0, 0, 0
    for pid in tree:
        if is_test(pid) and not is_test(info[pid][0]):
            trials += 1
            trial_fds = max(trial_fds, fds(pid))
            sub, todo = 0, [pid]
            while todo:
                p = todo.pop()
                sub += info[p][2] if p in info else 0
                todo.extend(children.get(p, []))
            trial_rss += sub * page_kb
    tree_fds = sum(fds(p) for p in tree) if samples % 10 == 0 else 0
    available = mem_available_kb()
    least_available_kb = min(least_available_kb, available)
    row = dict(rss_kb=rss, trial_rss_kb=trial_rss, trials=trials, procs=len(tree), threads=threads,
               trial_fds=trial_fds, tree_fds=tree_fds)
    for k, v in row.items():
        peak[k] = max(peak[k], v)
    csv.write(f"{time.time() - start:.1f},{rss},{trial_rss},{trials},{len(tree)},{threads},"
              f"{trial_fds},{tree_fds},{available}\n")
    csv.flush()
    samples += 1
    time.sleep(1)
peak["least_mem_available_kb"] = least_available_kb
peak["samples"] = samples
with open(out, "w") as f:
    json.dump(peak, f)
