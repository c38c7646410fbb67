#!/usr/bin/env bash
# The steps of a CI job, each a traced Pi run. Run the job inside its span:
#
#   jobspan "ci: review" -- examples/ci-traceparent/job.sh
#
# jobspan sets TRACEPARENT, and each pi-otel run below makes its trace a
# child of it. PI is the Pi command line (default: pi), split on spaces.
set -euo pipefail
read -ra pi <<<"${PI:-pi}"
pi-otel run -- "${pi[@]}" --mode json --no-session "Review the change" >review.jsonl
pi-otel run -- "${pi[@]}" --mode json --no-session "Summarise the review" >summary.jsonl
