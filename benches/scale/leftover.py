"""Processes a finished scale-bench phase left behind (benches/scale.sh).

usage: python3 leftover.py TARGET_DIR WORK_DIR SPARE_PID

Prints one line per process still running whose executable is one of this build's
(test harnesses, gauntlet-seal, gauntlet-reap, gauntlet-agent, the relay, the apps) or
whose command line or environment names the bench's work directory (agents, `sleep` of
a hung agent, sandboxes: every trial's HOME, workspace and run directory are under
it), as tests/integration/support.rs `processes_with` finds a trial's processes. The
bench itself (this process's ancestors) and SPARE_PID (the fake provider) are not
counted.
"""
import os
import sys

target, work, spare = os.path.realpath(sys.argv[1]), sys.argv[2], int(sys.argv[3])
mine = set()
pid = os.getpid()
while pid > 1:
    mine.add(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode("latin-1")
        pid = int(s[s.rindex(")") + 2:].split()[1])
    except (OSError, ValueError):
        break
needle = work.encode()
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    pid = int(name)
    if pid in mine or pid == spare:
        continue
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        continue
    if exe.startswith(target + "/") or needle in cmdline or needle in environ:
        words = cmdline.replace(b"\0", b" ").decode("latin-1")[:200]
        print(f"{pid} {exe} {words}")
