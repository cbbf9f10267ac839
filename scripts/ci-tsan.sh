#!/usr/bin/env bash
# TSan over the unit and contract tests.
exec "$(dirname "$0")/ci-sanitizer.sh" build-tsan thread
