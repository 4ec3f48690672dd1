#!/usr/bin/env bash
# The standard ToolRerank models in the order one ~3 h session on 2 free cores fits (toolkit.toolrerank.config
# FAIR_STANDARD; model weights are never committed, so the chain must finish in the session that starts it):
#   DPR (56 min) -> classifier (2 min) -> the MiniLM reranker variants at the screen budget (10-12 min each; the one
#   best on dev is the main reranker: FAIR_STANDARD carries its fields) -> notebook 10 standard (the main score cache)
#   -> the reranker alone (~24 min). Each step writes a committed score cache under data/score_cache/toolrerank/;
#   commit them as they land, and the DPR's vectors (dpr-vectors-*.npz, toolkit.toolrerank.dpr_vectors), with which
#   the mpnet variant (~1.6 h) needs no DPR retraining. It and draws 1, 2 (~1.5 h each) are separate sessions:
#   scripts/train_toolrerank.py --profile standard --variant 'pretrained mpnet + fresh head' / --draw 1.
# Usage: nohup bash scripts/fair_toolrerank_chain.sh > /tmp/fair_chain.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
run() { echo "== $(date +%H:%M:%S) $*"; env PYTHONPATH=. "$PY" scripts/train_toolrerank.py --profile standard "$@"; }
run --stages dual_encoder --prescore none --export-dpr   # its vectors: later sessions need no DPR weights
run --stages classifier --prescore none
for v in "pretrained MiniLM + fresh head" "fine-tuned DPR + fresh head" "MiniLM + library random negatives"; do
  run --variant "$v"
done
echo "== $(date +%H:%M:%S) notebook 10 standard"
"$PY" -m toolkit run 10_toolrerank --profile standard
run --alone
echo "== $(date +%H:%M:%S) done"
