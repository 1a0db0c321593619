# lib.sh - helpers shared by setup.sh and model-path.sh (sourced, never run).
#
# Where things live:
#   hub cache   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (the layout
#               huggingface_hub, mlx-lm and hearth share: models--ORG--NAME/{blobs,snapshots,refs})
#   hearth      ${XDG_CACHE_HOME:-~/.cache}/hearth (downloaded wheels, verification stamps)
#   manifest    models/starter.tsv (one row per starter model; see its header) and
#               models/embed.tsv (one row per file of an embedding model's checkpoint folder)

hearth_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hearth_manifest="$hearth_root/models/starter.tsv"
hearth_embed_manifest="$hearth_root/models/embed.tsv"

hub_dir() {
    if [ -n "${HF_HUB_CACHE:-}" ]; then printf '%s\n' "$HF_HUB_CACHE"
    elif [ -n "${HF_HOME:-}" ]; then printf '%s\n' "$HF_HOME/hub"
    else printf '%s\n' "$HOME/.cache/huggingface/hub"; fi
}

hearth_cache_dir() { printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}/hearth"; }

# The hub folder of a repo id: org/name -> <hub>/models--org--name
repo_dir() { printf '%s/models--%s\n' "$(hub_dir)" "${1//\//--}"; }

# Print the manifest rows (tab-separated, comments and blank lines dropped).
manifest_rows() { grep -v -e '^#' -e '^[[:space:]]*$' "$hearth_manifest"; }

# Set the row_* variables from the manifest row named $1; returns 1 when there is none.
manifest_row() {
    local name repo rev file size sha sources
    while IFS=$'\t' read -r name repo rev file size sha sources; do
        if [ "$name" = "$1" ]; then
            row_name=$name row_repo=$repo row_rev=$rev row_file=$file
            row_size=$size row_sha=$sha row_sources=$sources
            return 0
        fi
    done < <(manifest_rows)
    return 1
}

# Print the rows of models/embed.tsv (tab-separated, comments and blank lines dropped).
embed_rows() { grep -v -e '^#' -e '^[[:space:]]*$' "$hearth_embed_manifest"; }

# Print the snapshot folder of embedding model $1 when every file of its rows is there;
# returns 1 (printing nothing) when the name is unknown or a file is missing.
embed_model_dir() {
    local name repo rev file size sha sources dir="" missing=0
    while IFS=$'\t' read -r name repo rev file size sha sources; do
        [ "$name" = "$1" ] || continue
        dir="$(repo_dir "$repo")/snapshots/$rev"
        [ -f "$dir/$file" ] || missing=1
    done < <(embed_rows)
    [ -n "$dir" ] && [ "$missing" -eq 0 ] || return 1
    printf '%s\n' "$dir"
}
