#!/usr/bin/env bash
# ASan + UBSan over the unit and contract tests.
exec "$(dirname "$0")/ci-sanitizer.sh" build-asan address,undefined
