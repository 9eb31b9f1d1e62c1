"""The scale bench's copies of the challenge and the world probes (benches/scale.sh).

usage: python3 data.py REPO WORK CHALLENGE_COPIES PROBE_COPIES

Only qa repeats with GAUNTLET_REPEATS. The bench runs the challenge tally-report and the
scorecard's world probes more than once by copying them, unchanged but for their id:
WORK/challenges/tally-report-rK/ (challenge.yaml's `id`, its flows' `capability`), and WORK/scorecard/, a copy
of the shipped scorecard whose probes/ gains p5-N-rK.json beside the shipped probes
(which the scorecard's levels name) and whose scripted profiles answer the copies'
turns as they answer the shipped probe's.
"""
import json
import re
import shutil
import sys
from pathlib import Path

repo, work = Path(sys.argv[1]), Path(sys.argv[2])
challenge_copies, probe_copies = int(sys.argv[3]), int(sys.argv[4])

src = repo / "challenges" / "tally-report"
for k in range(1, challenge_copies + 1):
    dst = work / "challenges" / f"tally-report-r{k}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    manifest = dst / "challenge.yaml"
    text, n = re.subn(r"(?m)^id: tally-report$", f"id: tally-report-r{k}",
                      manifest.read_text())
    if n != 1:
        sys.exit(f"error: {manifest}: no `id: tally-report` line to rename")
    manifest.write_text(text)
    for flow_file in (dst / "flows").glob("*.json"):
        flow = json.loads(flow_file.read_text())
        if flow.get("capability") == "tally-report":
            flow["capability"] = f"tally-report-r{k}"
            flow_file.write_text(json.dumps(flow, indent=2) + "\n")

card = work / "scorecard"
if card.exists():
    shutil.rmtree(card)
shutil.copytree(repo / "challenges" / "scorecard", card, symlinks=True)
world = []
for probe_file in sorted((card / "probes").glob("p5-*.json")):
    probe = json.loads(probe_file.read_text())
    if probe.get("dimension") != "world":
        continue
    world.append(probe["id"])
    for k in range(1, probe_copies + 1):
        copy = dict(probe, id=f"{probe['id']}-r{k}")
        (card / "probes" / f"{copy['id']}.json").write_text(json.dumps(copy, indent=2) + "\n")
for profile_file in sorted((card / "agents").glob("*/profile.json")):
    profile = json.loads(profile_file.read_text())
    turns = profile.get("turns", {})
    for key, steps in list(turns.items()):
        probe, _, label = key.partition("/")
        if probe in world:
            for k in range(1, probe_copies + 1):
                turns[f"{probe}-r{k}/{label}"] = steps
    profile_file.write_text(json.dumps(profile, indent=2) + "\n")
print(f"copies: tally-report x {challenge_copies}, world probes {world} x {probe_copies}")
