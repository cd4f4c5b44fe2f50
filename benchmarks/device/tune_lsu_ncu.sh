# Nsight Compute metrics of the L1/LSU/MIO path for tutorial 03 configs at unaligned (1000, 1500) and aligned (1024) sizes:
# the names this ncu knows among the candidates are kept (ncu --query-metrics), then gpusim.validate.collect --ncu.
#   OUT=dir bash benchmarks/device/tune_lsu_ncu.sh
set -e
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NCU --query-metrics --chip gh100 > $OUT/query.txt 2>&1 || true
CAND="smsp__average_warp_latency_issue_stalled_mio_throttle smsp__average_warp_latency_issue_stalled_long_scoreboard smsp__average_warp_latency_issue_stalled_short_scoreboard smsp__average_warp_latency_issue_stalled_lg_throttle smsp__average_warp_latency_issue_stalled_barrier smsp__average_warp_latency_issue_stalled_wait l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld l1tex__data_pipe_lsu_wavefronts l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__t_requests_pipe_lsu_mem_global_op_ld l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ld l1tex__lsuin_requests l1tex__f_wavefronts l1tex__m_xbar2l1tex_read_sectors smsp__inst_executed_pipe_lsu l1tex__lsu_writeback_active l1tex__data_bank_reads l1tex__data_bank_writes sm__cycles_active smsp__inst_executed_op_shared_st smsp__inst_executed_op_global_ld l1tex__throughput gpc__cycles_elapsed l1tex__t_sector_hit_rate smsp__mio_inst_issued sm__mio_inst_issued smsp__mio2rf_writeback_active sm__mio_pq_read_cycles_active sm__mio_pq_write_cycles_active"
M=""
for c in $CAND; do if grep -q "^$c\b" $OUT/query.txt || grep -q "^$c " $OUT/query.txt; then M="$M $c"; fi; done
echo "valid:$M"
ML=""
for c in $M; do case $c in *ratio*) ;; esac; done
for c in $M; do
  case $c in
    smsp__average_warp_latency_*) ML="$ML,$c.ratio";;
    l1tex__throughput) ML="$ML,$c.avg.pct_of_peak_sustained_active";;
    l1tex__t_sector_hit_rate) ML="$ML,$c.pct";;
    gpc__cycles_elapsed) ML="$ML,$c.max";;
    sm__cycles_active) ML="$ML,$c.avg";;
    *) ML="$ML,$c.sum";;
  esac
done
ML=${ML#,}
echo "metrics: $ML"
python -m gpusim.validate.collect --ncu --suite tune --cases '^tune_mm_(1000|1024|1500)_(128x64x32_w4_s4|128x32x32_w4_s4|64x128x32_w4_s4|64x32x32_w2_s5)$' --metrics "$ML" --time-budget 420 --out $OUT/tune_mm_lsu_ncu.json 2>&1 | tail -15
