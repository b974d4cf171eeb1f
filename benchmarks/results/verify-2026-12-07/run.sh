#!/usr/bin/env bash
# issue 61: verify a sample of every table's committed records with the code after the same-numbers speedups
# (sample size 2, sample seed 61: fixed before the run). Usage: run.sh CODE_DIR OUT_DIR [IDS...]
code=$1; out=$2; shift 2
mkdir -p "$out"
cd "$code"
export PYTHONPATH="$code" PUBENCH_DATA=${PUBENCH_DATA:-/work/shared/data} PUBENCH_RESULTS="/work/wt-verify/results"
ids=("$@")
if [ ${#ids[@]} -eq 0 ]; then
  for t in paper reduced; do for d in /work/wt-verify/results/$t/*/; do ids+=("$t:$(basename $d)"); done; done
fi
for it in "${ids[@]}"; do
  tier=${it%%:*}; id=${it#*:}
  echo "== $(date -u +%FT%TZ) $tier $id load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.log"
  start=$(date +%s)
  /work/main/.venv/bin/python -m pubench verify "$id" --tier "$tier" --sample 2 --sample-seed 61 --jobs 2 --no-progress \
    > "$out/$tier-$id.log" 2>&1
  rc=$?
  echo "   rc=$rc $(( $(date +%s) - start )) s: $(tail -3 "$out/$tier-$id.log" | tr '\n' ' ' | cut -c1-300)" | tee -a "$out/summary.log"
done
echo "ALL DONE $(date -u +%FT%TZ)" >> "$out/summary.log"
