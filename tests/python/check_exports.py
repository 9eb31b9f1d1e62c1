#!/usr/bin/env python3
"""Read gauntlet's exports with the tools their formats come from, and say what they saw.

Usage: check_exports.py INSPECT_DIR CTRF_FILE CTRF_SCHEMA ATIF_DIR

Prints one JSON object: every Inspect log as `inspect_ai.log.read_eval_log` read it (in
full and header-only), the CTRF report's schema errors (formats checked), and every ATIF
trajectory's errors from Harbor's validator. Exits 0 when all of them read and validate.
"""
import glob
import io
import json
import os
import sys
from contextlib import redirect_stdout

import jsonschema
from harbor.utils.trajectory_validator import TrajectoryValidator
from inspect_ai.log import read_eval_log
from jsonschema.validators import validator_for


def inspect_logs(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        log = read_eval_log(path)
        header = read_eval_log(path, header_only=True)
        out.append({
            "file": os.path.basename(path),
            "task": log.eval.task,
            "status": log.status,
            "header_task": header.eval.task,
            "header_samples": header.samples,
            "model_usage": {m: {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}
                            for m, u in log.stats.model_usage.items()},
            "metrics": {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores},
            "samples": [{
                "id": s.id,
                "epoch": s.epoch,
                "score": s.scores["gauntlet"].value if s.scores else None,
                "explanation": s.scores["gauntlet"].explanation if s.scores else None,
                "messages": [m.role for m in s.messages],
                "tool_calls": sum(len(m.tool_calls or []) for m in s.messages if m.role == "assistant"),
                "input_tokens": sum(u.input_tokens for u in s.model_usage.values()),
                "output_tokens": sum(u.output_tokens for u in s.model_usage.values()),
                "error": s.error.message if s.error else None,
            } for s in log.samples],
        })
    return out


def ctrf(report, schema_file):
    schema = json.load(open(schema_file))
    doc = json.load(open(report))
    cls = validator_for(schema)
    cls.check_schema(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = ["/" + "/".join(map(str, e.absolute_path)) + ": " + e.message for e in v.iter_errors(doc)]
    return {"errors": errors, "tests": len(doc["results"]["tests"]), "summary": doc["results"]["summary"]}


def atif(directory):
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        v = TrajectoryValidator()
        with redirect_stdout(io.StringIO()):
            ok = v.validate(path)
        out[os.path.basename(path)] = {"valid": bool(ok), "errors": [str(e) for e in v.errors]}
    return out


def main():
    inspect_dir, ctrf_file, ctrf_schema, atif_dir = sys.argv[1:5]
    result = {
        "inspect": inspect_logs(inspect_dir),
        "ctrf": ctrf(ctrf_file, ctrf_schema),
        "atif": atif(atif_dir),
    }
    print(json.dumps(result, indent=2, default=str))
    ok = not result["ctrf"]["errors"] and all(t["valid"] for t in result["atif"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
