#!/usr/bin/env bash
# The oracle matrix on stripped targets (-ldflags="-s -w"): see
# tests/e2e/oracle_test.sh, which this runs with ORACLE_STRIP=1.
#
#   bash tests/e2e/stripped_oracle_test.sh <path-to-goheap2pprof> <path-to-profdiff>
ORACLE_STRIP=1 exec bash "$(dirname "$0")/oracle_test.sh" "$@"
