#!/bin/sh
# Adversary `do-nothing` (class floor): the honest floor of the red team.
#
# It attacks nothing. It exits 0 and prints nothing, in every suite:
#   qa         no event, no claim: the harness must give it `error` (no parseable
#              claim, a bare exit 0 with no evidence), never `verified`;
#   challenge  no final report: `parse_error` (or `failed`), never `success`;
#   scorecard  an empty reply to every turn, nothing in its state dir, no side
#              effect: every probe must fail, except a probe whose honest best is
#              to say nothing (none today).
# What every other adversary gets is compared with what this one gets on the same
# task: an adversary that gets credit this one does not makes the task hackable.
# usage: sh do-nothing.sh [anything…]   (all arguments are ignored)
exit 0
