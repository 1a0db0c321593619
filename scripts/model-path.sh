#!/usr/bin/env bash
# model-path.sh NAME - print the hub-cache snapshot path of a starter model (models/starter.tsv),
# or the snapshot folder of an embedding model (models/embed.tsv, e.g. minilm).
#
# Exits 1 with a note on stderr when NAME is unknown or the file is not there yet (run
# `make setup`). The Makefile uses it to export HEARTH_SMOLLM2_GGUF and HEARTH_GEMMA3_GGUF.
# The path is the snapshot of the manifest's revision, not whatever refs/main says, so tests
# always get the bytes the manifest vouches for.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ $# -ne 1 ]; then
    echo "usage: $0 NAME   (names: $(manifest_rows | cut -f1 | tr '\n' ' ')$(embed_rows | cut -f1 | sort -u | tr '\n' ' '))" >&2
    exit 2
fi
if ! manifest_row "$1" && embed_rows | cut -f1 | grep -qx -- "$1"; then
    if ! embed_model_dir "$1"; then
        echo "model-path: $1 is not in the hub cache yet (run 'make setup')" >&2
        exit 1
    fi
    exit 0
fi
if ! manifest_row "$1"; then
    echo "model-path: no starter model named '$1' in models/starter.tsv" >&2
    exit 1
fi
path="$(repo_dir "$row_repo")/snapshots/$row_rev/$row_file"
if [ ! -f "$path" ]; then
    echo "model-path: $1 is not in the hub cache yet (run 'make setup'): $path" >&2
    exit 1
fi
printf '%s\n' "$path"
