#!/bin/sh
# The soak phase's agent (benches/scale.sh --soak): a `command` agent that, for a
# deterministic tenth of the trials, misbehaves — crashes (SIGSEGV), hangs past the
# deadline, or floods stdout with hundreds of MB — and otherwise runs the reference
# agent exactly as gauntlet runs it (src/agent/mod.rs, `Reference`): the same
# subcommand and arguments, in the same scrubbed environment (the proxy's variables,
# PATH with gauntlet's binaries first), its output and exit status its own (exec).
#
# GAUNTLET_AGENT_CMD="sh benches/scale/agent.sh {capability} {target} {graph_file} {n}
#   {prompt_file} {workspace} {session_id} {session_resume} {state_dir}"
# A placeholder the trial does not fill stays as written: a qa trial fills the first
# five and {workspace}; a challenge, {prompt_file} and {workspace}; a scorecard turn,
# {prompt_file}, {workspace} and the session's three.
#
# Which trials misbehave is drawn from the trial's own inputs: the name of its trial
# directory (the workspace's parent, e.g. qa.api-ledger.balance.r7), which holds the
# suite, the task and the repeat, hashed with cksum. The same plan misbehaves in the
# same trials on every run; scale.sh draws the same list to know which they are.
set -eu
capability=$1 target=$2 graph=$3 n=$4 prompt=$5 workspace=$6 session=$7 resume=$8 state=$9
trial=$(basename "$(dirname "$workspace")")
draw=$(printf '%s' "$trial" | cksum | cut -d' ' -f1)
case $((draw % 30)) in
  0) kill -SEGV $$ ;;
  1) exec sleep 100000 ;;
  2) yes "flood flood flood flood flood flood flood flood" | head -c 400000000; exit 0 ;;
esac
if [ "$capability" != "{capability}" ]; then
  case $target in
    http://* | https://*) locator=--url ;;
    *) locator=--bin ;;
  esac
  exec gauntlet-agent qa --prompt-file "$prompt" --graph-file "$graph" "$locator" "$target" \
    --capability "$capability" --n "$n"
elif [ "$session" != "{session_id}" ]; then
  if [ "$resume" = true ]; then
    exec gauntlet-agent chat --state-dir "$state" --session "$session" --resume --prompt-file "$prompt"
  fi
  exec gauntlet-agent chat --state-dir "$state" --session "$session" --prompt-file "$prompt"
else
  exec gauntlet-agent task --prompt-file "$prompt"
fi
