#!/usr/bin/env bash
# Replay a captured Pi stream into the compose stack (docker compose up -d
# at the repository's top first). The agent Collector takes OTLP on
# localhost:4317; the gateway keeps every trace with an error, a retry or a
# compaction, and a sample of the rest; Jaeger shows it at
# http://localhost:16686.
#
#   examples/compose-replay/replay.sh [STREAM.jsonl]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OTEL_EXPORTER_OTLP_ENDPOINT="${OTEL_EXPORTER_OTLP_ENDPOINT:-http://localhost:4317}"
export OTEL_EXPORTER_OTLP_PROTOCOL="${OTEL_EXPORTER_OTLP_PROTOCOL:-grpc}"
export OTEL_SERVICE_NAME="${OTEL_SERVICE_NAME:-pi-replay}"
stream="${1:-$here/../../testdata/captures/pi-1.6.0/retry-529.jsonl}"
exec "${PI_OTEL:-pi-otel}" replay "$stream"
