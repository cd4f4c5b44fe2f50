#!/usr/bin/env bash
# Make gpusim's hardware records on a GPU machine; every file lands in $OUT (default ./out).
#
#   bash gpusim/validate/collect_all.sh PART [PART ...]
#
# PARTs (each writes its JSON after every case, so a part cut short keeps what it finished):
#   env            versions, nvidia-smi, ncu --version                      -> env.txt
#   timing[:i/n]   check + do_bench every case (or shard i of n)            -> timing[_iofn].json, .log
#   micro          calibration microbenchmarks, timed                       -> micro.json, micro.log
#   micro-ncu      the microbenchmarks under Nsight Compute                 -> micro_ncu.json, _raw.csv, _ncu.log, .log
#   ncu:i/n        shard i of n of the suite under Nsight Compute           -> ncu_iofn.json, _raw.csv, _ncu.log, .log
#
# The whole command is meant to end within LIMIT seconds (default 570: a device command may run 600 s); each
# part gets what is left, minus a margin, as its --time-budget.  The suggested sequence, one command each:
#   env timing  |  micro micro-ncu  |  ncu:1/3  |  ncu:2/3  |  ncu:3/3
set -u
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/../.."
OUT="${OUT:-$PWD/out}"
LIMIT="${LIMIT:-570}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
[ $# -gt 0 ] || { sed -n '2,15p' "$SELF"; exit 2; }

budget() {   # seconds left for a part: LIMIT - elapsed - margin
  local left=$(( LIMIT - SECONDS - $1 ))
  [ "$left" -lt 30 ] && left=30
  echo "$left"
}

run_part() {  # name, log file, command...
  local name=$1 logf=$2; shift 2
  echo "=== $name: $*" >&2
  "$@" 2>&1 | tee "$logf" | tail -n 40
  echo "=== $name: exit ${PIPESTATUS[0]} after ${SECONDS}s" >&2
}

for part in "$@"; do
  case "$part" in
    env)
      { date -u; uname -a; nvidia-smi || true; nvidia-smi -q -d CLOCK,PERFORMANCE || true
        "$PY" -c 'import sys, importlib.metadata as m
print(sys.version)
for p in ("numpy","torch","triton","numba","numba-cuda","cuda-bindings","cuda-core","cupy-cuda13x"):
    try: print(p, m.version(p))
    except Exception as e: print(p, "-", e)
import torch; print("torch.cuda", torch.version.cuda, torch.cuda.get_device_name(0))' || true
        NCU_BIN="${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -n 1)}"
        echo "ncu: ${NCU_BIN:-not found}"; [ -n "${NCU_BIN:-}" ] && "$NCU_BIN" --version || true
      } > "$OUT/env.txt" 2>&1
      echo "=== env: $OUT/env.txt" >&2 ;;
    timing|timing:*)
      shard=""; tag="timing"
      if [ "$part" != "timing" ]; then shard="${part#timing:}"; tag="timing_${shard/\//of}"; fi
      run_part "$part" "$OUT/$tag.log" "$PY" -m gpusim.validate.collect --timing --out "$OUT/$tag.json" \
        ${shard:+--shard "$shard"} --time-budget "$(budget 40)" ;;
    micro)
      run_part micro "$OUT/micro.log" "$PY" -m gpusim.validate.collect --micro --out "$OUT/micro.json" \
        --time-budget "$(budget 40)" ;;
    micro-ncu)
      run_part micro-ncu "$OUT/micro_ncu.log" "$PY" -m gpusim.validate.collect --micro --ncu \
        --out "$OUT/micro_ncu.json" --time-budget "$(budget 30)" ;;
    ncu:*)
      shard="${part#ncu:}"; tag="ncu_${shard/\//of}"
      run_part "$part" "$OUT/$tag.log" "$PY" -m gpusim.validate.collect --ncu --shard "$shard" \
        --out "$OUT/$tag.json" --time-budget "$(budget 30)" ;;
    *) echo "unknown part: $part (see: bash $SELF)" >&2; exit 2 ;;
  esac
done
ls -la "$OUT" >&2
